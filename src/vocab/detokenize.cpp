#include "vocab/detokenize.hpp"

#include "tessel/errors.hpp"
#include "vocab/byte_level.hpp"
#include "vocab/spm.hpp"
#include "vocab/utf8.hpp"

namespace tessel::vocab {

std::string token_to_piece(const Vocab& vocab, TokenId id, bool special) {
    if (!vocab.valid(id))
        throw Error(ErrorCode::InvalidArgument,
                    "token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(vocab.size()) + " tokens)");
    switch (vocab.type(id)) {
        case TokenType::Normal:
            if (vocab.model() == VocabModel::Spm || vocab.pre_tokenizer().spm_style) return spm_unescape_spaces(vocab.text(id));
            return symbols_to_bytes(vocab.text(id));
        case TokenType::Byte: return std::string(1, static_cast<char>(vocab.byte_value(id)));  // checked at load
        case TokenType::UserDefined: return vocab.text(id);
        case TokenType::Control:
        case TokenType::Unknown: return special ? vocab.text(id) : std::string();
        case TokenType::Unused:
        case TokenType::Undefined: break;
    }
    return {};
}

std::string detokenize(const Vocab& vocab, std::span<const TokenId> ids, bool special) {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        std::string piece = token_to_piece(vocab, ids[i], special);
        if (i == 0 && vocab.add_space_prefix() && piece.starts_with(' ')) piece.erase(0, 1);  // the space tokenize added
        out += piece;
    }
    return out;
}

std::string Utf8Stream::push(std::string_view piece) {
    pending_ += piece;
    const size_t ready = utf8_complete_prefix(pending_);
    std::string out = pending_.substr(0, ready);
    pending_.erase(0, ready);
    return out;
}

std::string Utf8Stream::flush() {
    std::string out;
    out.swap(pending_);
    return out;
}

}  // namespace tessel::vocab
