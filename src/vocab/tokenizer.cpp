#include "vocab/tokenizer.hpp"

#include <algorithm>

#include "vocab/utf8.hpp"

namespace tessel::vocab {
namespace {

bool is_special_type(TokenType t) {
    return t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown;
}

/// C isspace in the "C" locale, as llama.cpp strips around special tokens.
bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/// A piece of the input: either a special token or a run of plain text.
struct Fragment {
    TokenId token;  // kNoToken for plain text
    size_t offset;
    size_t length;
};

}  // namespace

Tokenizer::Tokenizer(Vocab vocab)
    : vocab_(std::make_unique<const Vocab>(std::move(vocab))) {
    if (vocab_->model() == VocabModel::Spm) {
        spm_.emplace(*vocab_);
    } else {
        pre_.emplace(vocab_->pre_tokenizer());
        bpe_.emplace(*vocab_, vocab_->pre_tokenizer().ignore_merges, vocab_->pre_tokenizer().spm_style);
    }
    for (TokenId id = 0; id < vocab_->size(); ++id)
        if (is_special_type(vocab_->type(id)) && !vocab_->text(id).empty()) specials_.push_back(id);
    std::stable_sort(specials_.begin(), specials_.end(),
                     [&](TokenId a, TokenId b) { return vocab_->text(a).size() > vocab_->text(b).size(); });
}

std::vector<TokenId> Tokenizer::tokenize(std::string_view text, const TokenizeOptions& opts) const {
    std::vector<Fragment> fragments;
    if (!text.empty()) fragments.push_back({kNoToken, 0, text.size()});
    std::vector<Fragment> next;
    for (const TokenId special : specials_) {
        const TokenType type = vocab_->type(special);
        if (!opts.parse_special && type != TokenType::UserDefined) continue;
        const std::string& needle = vocab_->text(special);
        const bool rstrip = vocab_->rstrip(special);
        next.clear();
        for (const Fragment& f : fragments) {
            if (f.token != kNoToken) {
                next.push_back(f);
                continue;
            }
            const std::string_view hay = text.substr(f.offset, f.length);
            size_t done = 0;
            for (size_t at = hay.find(needle); at != std::string_view::npos; at = hay.find(needle, done)) {
                if (at > done) next.push_back({kNoToken, f.offset + done, at - done});
                next.push_back({special, f.offset + at, needle.size()});
                done = at + needle.size();
                if (rstrip)
                    while (done < hay.size() && is_c_space(hay[done])) ++done;
            }
            if (done < hay.size()) next.push_back({kNoToken, f.offset + done, hay.size() - done});
        }
        fragments.swap(next);
    }

    std::vector<TokenId> out;
    if (opts.add_bos && vocab_->add_bos()) out.push_back(vocab_->bos());
    bool after_special = true;  // SPM: the start of the text counts as following a special token
    for (const Fragment& f : fragments) {
        if (f.token != kNoToken) {
            out.push_back(f.token);
            after_special = true;
        } else if (spm_) {
            spm_->encode(text.substr(f.offset, f.length), after_special && vocab_->add_space_prefix(), out);
            after_special = false;
        } else {
            encode_bpe(text.substr(f.offset, f.length), out);
        }
    }
    if (opts.add_eos && vocab_->add_eos()) out.push_back(vocab_->eos());
    return out;
}

void Tokenizer::encode_bpe(std::string_view text, std::vector<TokenId>& out) const {
    const std::string valid = utf8_repair(vocab_->pre_tokenizer().spm_style ? spm_escape_spaces(text) : std::string(text));
    for (const TextSpan& word : pre_->split(valid)) bpe_->encode(std::string_view(valid).substr(word.offset, word.length), out);
}

}  // namespace tessel::vocab
