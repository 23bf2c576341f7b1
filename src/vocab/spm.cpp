#include "vocab/spm.hpp"

#include <algorithm>
#include <queue>

#include "vocab/utf8.hpp"

namespace tessel::vocab {
namespace {

struct Symbol {
    uint32_t begin;  // byte range in the escaped text; length 0 once merged into the left neighbour
    uint32_t length;
    int32_t prev;  // neighbours, -1 at the ends
    int32_t next;
};

struct Candidate {
    float score;
    int32_t left;  // symbol indices
    int32_t right;
    uint32_t length;  // bytes of the joined text: stale once either symbol changed
};

/// Priority order: higher score first, then the leftmost pair.
struct LowerCandidate {
    bool operator()(const Candidate& a, const Candidate& b) const {
        return a.score != b.score ? a.score < b.score : a.left > b.left;
    }
};

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    size_t at = 0;
    for (size_t hit = text.find(from); hit != std::string_view::npos; hit = text.find(from, at)) {
        out.append(text.substr(at, hit - at)).append(to);
        at = hit + from.size();
    }
    out.append(text.substr(at));
    return out;
}

}  // namespace

std::string spm_escape_spaces(std::string_view text) { return replace_all(text, " ", kSpmSpace); }

std::string spm_unescape_spaces(std::string_view text) { return replace_all(text, kSpmSpace, " "); }

void SpmModel::emit(std::string_view piece, std::vector<TokenId>& out) const {
    if (const TokenId id = vocab_->find(piece); id != kNoToken) {
        out.push_back(id);
        return;
    }
    for (const char c : piece) {
        const TokenId id = vocab_->byte_token(static_cast<uint8_t>(c));
        out.push_back(id != kNoToken ? id : vocab_->unk());
    }
}

void SpmModel::encode(std::string_view raw, bool space_prefix, std::vector<TokenId>& out) const {
    const std::string text = (space_prefix ? std::string(kSpmSpace) : std::string()) + spm_escape_spaces(raw);
    if (text.empty()) return;

    std::vector<Symbol> syms;
    for (uint32_t at = 0; at < text.size();) {
        const auto len = static_cast<uint32_t>(
            std::min<size_t>(utf8_lead_length(static_cast<unsigned char>(text[at])), text.size() - at));
        const auto i = static_cast<int32_t>(syms.size());
        syms.push_back({at, len, i - 1, at + len < text.size() ? i + 1 : -1});
        at += len;
    }

    std::priority_queue<Candidate, std::vector<Candidate>, LowerCandidate> queue;
    const auto consider = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const uint32_t length = syms[l].length + syms[r].length;
        const TokenId id = vocab_->find(std::string_view(text).substr(syms[l].begin, length));
        if (id != kNoToken) queue.push({vocab_->score(id), l, r, length});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) consider(i - 1, i);

    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& left = syms[c.left];
        Symbol& right = syms[c.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != c.length) continue;  // stale
        left.length = c.length;
        left.next = right.next;
        if (right.next >= 0) syms[right.next].prev = c.left;
        right.length = 0;
        consider(left.prev, c.left);
        consider(c.left, left.next);
    }

    for (int32_t i = 0; i >= 0; i = syms[i].next) emit(std::string_view(text).substr(syms[i].begin, syms[i].length), out);
}

}  // namespace tessel::vocab
