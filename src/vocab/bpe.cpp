#include "vocab/bpe.hpp"

#include <algorithm>
#include <queue>

#include "vocab/byte_level.hpp"
#include "vocab/byte_token.hpp"
#include "vocab/utf8.hpp"

namespace tessel::vocab {
namespace {

constexpr int32_t kAbsorbed = -2;  // symbol id of a symbol merged into its left neighbour

struct Symbol {
    int32_t id;      // symbol id; -1 when the text is neither a token nor part of a merge
    int32_t prev;    // neighbours in the word, -1 at the ends
    int32_t next;
    uint32_t begin;  // byte range of the word this symbol covers
    uint32_t end;
};

struct Candidate {
    int32_t rank;
    int32_t left;  // symbol indices
    int32_t right;
    int32_t left_id;  // ids when queued: a candidate is stale once either symbol changed
    int32_t right_id;
    int32_t result;   // symbol id of the merged pair
};

/// Priority order: lower rank first, then the leftmost pair.
struct LaterCandidate {
    bool operator()(const Candidate& a, const Candidate& b) const {
        return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
    }
};

}  // namespace

BpeModel::BpeModel(const Vocab& vocab, bool ignore_merges, bool raw_utf8)
    : vocab_(&vocab), ignore_merges_(ignore_merges), raw_utf8_(raw_utf8) {
    const auto& merges = vocab.merges();
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [left, right] = merges[rank];
        const int32_t l = symbol_id(left, true);
        const int32_t r = symbol_id(right, true);
        const int32_t result = symbol_id(left + right, true);
        merges_.try_emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), result});  // a repeat keeps its first rank
    }
    for (int b = 0; b < 256; ++b) byte_ids_[b] = symbol_id(std::string(byte_to_symbol(static_cast<uint8_t>(b))), false);
}

int32_t BpeModel::symbol_id(const std::string& text, bool add) {
    if (const TokenId id = vocab_->find(text); id != kNoToken) return id;
    if (const auto it = extra_ids_.find(text); it != extra_ids_.end()) return it->second;
    if (!add) return -1;
    const auto id = static_cast<int32_t>(vocab_->size() + extra_ids_.size());
    extra_ids_.emplace(text, id);
    return id;
}

int32_t BpeModel::find_symbol(std::string_view text) const {
    if (const TokenId id = vocab_->find(text); id != kNoToken) return id;
    const auto it = extra_ids_.find(std::string(text));
    return it == extra_ids_.end() ? -1 : it->second;
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
    if (left < 0 || right < 0) return nullptr;
    const auto it = merges_.find(pair_key(left, right));
    return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::emit(std::string_view bytes, int32_t id, std::vector<TokenId>& out) const {
    if (vocab_->valid(id)) {
        out.push_back(id);
        return;
    }
    if (raw_utf8_) {
        for (const char c : bytes)
            if (const TokenId t = vocab_->find(byte_token_text(static_cast<uint8_t>(c))); t != kNoToken) out.push_back(t);
        return;
    }
    for (char c : bytes_to_symbols(bytes))
        if (const TokenId t = vocab_->find(std::string_view(&c, 1)); t != kNoToken) out.push_back(t);
}

void BpeModel::encode(std::string_view word, std::vector<TokenId>& out) const {
    if (word.empty()) return;
    const bool newlines = raw_utf8_ && word.find_first_not_of('\n') == std::string_view::npos;
    if (ignore_merges_ || newlines) {
        if (const TokenId id = vocab_->find(raw_utf8_ ? std::string(word) : bytes_to_symbols(word)); id != kNoToken) {
            out.push_back(id);
            return;
        }
    }
    std::vector<Symbol> syms;
    for (uint32_t at = 0; at < word.size();) {
        const auto len = static_cast<uint32_t>(
            raw_utf8_ ? std::min<size_t>(utf8_lead_length(static_cast<unsigned char>(word[at])), word.size() - at) : 1);
        const int32_t id = raw_utf8_ ? find_symbol(word.substr(at, len)) : byte_ids_[static_cast<unsigned char>(word[at])];
        const auto i = static_cast<int32_t>(syms.size());
        syms.push_back({id, i - 1, at + len < word.size() ? i + 1 : -1, at, at + len});
        at += len;
    }
    const auto n = static_cast<int32_t>(syms.size());

    std::priority_queue<Candidate, std::vector<Candidate>, LaterCandidate> queue;
    const auto consider = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        if (const Merge* m = find_merge(syms[l].id, syms[r].id)) queue.push({m->rank, l, r, syms[l].id, syms[r].id, m->result});
    };
    for (int32_t i = 1; i < n; ++i) consider(i - 1, i);

    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& left = syms[c.left];
        Symbol& right = syms[c.right];
        if (left.id != c.left_id || left.next != c.right || right.id != c.right_id) continue;  // stale
        left.id = c.result;
        left.end = right.end;
        left.next = right.next;
        if (right.next >= 0) syms[right.next].prev = c.left;
        right.id = kAbsorbed;
        consider(left.prev, c.left);
        consider(c.left, left.next);
    }

    for (int32_t i = 0; i >= 0; i = syms[i].next) emit(word.substr(syms[i].begin, syms[i].end - syms[i].begin), syms[i].id, out);
}

}  // namespace tessel::vocab
