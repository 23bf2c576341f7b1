#include "sample/dry.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace tessel::sample {

DryBreakers::DryBreakers(std::span<const std::string> breakers, const SamplerVocab& vocab) {
    for (const std::string& b : breakers) {
        for (size_t id = 0; id < vocab.pieces.size(); ++id) {
            const std::string& piece = vocab.pieces[id];
            const auto token = static_cast<int32_t>(id);
            if (piece.find(b) != std::string::npos) {
                add(token, {});
                continue;
            }
            if (!vocab.tokenize) continue;
            // The piece ends with a proper prefix of the breaker: the rest must follow as tokens.
            for (size_t pos = piece.find(b[0]); pos != std::string::npos; pos = piece.find(b[0], pos + 1)) {
                const size_t len = piece.size() - pos;
                if (len >= b.size() || piece.compare(pos, len, b, 0, len) != 0) continue;
                std::vector<int32_t> tail = vocab.tokenize(std::string_view(b).substr(len));
                if (!tail.empty()) add(token, std::move(tail));
            }
        }
    }
}

void DryBreakers::add(int32_t head, std::vector<int32_t> tail) {
    auto& tails = by_head_[head];
    if (std::find(tails.begin(), tails.end(), tail) == tails.end()) tails.push_back(std::move(tail));
}

const std::vector<std::vector<int32_t>>* DryBreakers::tails(int32_t token) const {
    const auto it = by_head_.find(token);
    return it == by_head_.end() ? nullptr : &it->second;
}

bool DryBreakers::is_single_token(int32_t token) const {
    const auto* t = tails(token);
    return t && std::any_of(t->begin(), t->end(), [](const std::vector<int32_t>& tail) { return tail.empty(); });
}

namespace {

// Tokens since the most recent complete breaker in `history` (all of them when there is none):
// no repeat may reach back past a breaker.
size_t tokens_since_breaker(std::span<const int32_t> history, const DryBreakers& breakers) {
    const size_t n = history.size();
    for (size_t i = 0; i < n; ++i) {  // the head i tokens before the last one
        const auto* tails = breakers.tails(history[n - 1 - i]);
        if (!tails) continue;
        size_t longest = 0;
        bool found = false;
        for (const auto& tail : *tails) {
            if (tail.size() > i || (found && tail.size() <= longest)) continue;
            if (std::equal(tail.begin(), tail.end(), history.begin() + static_cast<std::ptrdiff_t>(n - i))) {
                longest = tail.size();
                found = true;
            }
        }
        if (found) return i - longest;
    }
    return n;
}

}  // namespace

void apply_dry(CandidateList& list, std::span<const int32_t> history, const DryParams& p, const DryBreakers& breakers,
               DryScratch& scratch) {
    const size_t n = history.size();
    const auto allowed = static_cast<size_t>(p.allowed_length);
    if (n <= allowed) return;
    const size_t limit = tokens_since_breaker(history, breakers);
    if (limit < allowed) return;

    // Z-algorithm over the reversed history s (s[x] = history[n-1-x]): z[k] = the length of the
    // longest suffix of the history that also ends k tokens earlier.
    auto s = [&](size_t x) { return history[n - 1 - x]; };
    std::vector<int32_t>& z = scratch.z;
    z.assign(n, 0);
    size_t left = 0, right = 0;  // s[left, right) matches a prefix of s, right the largest so far
    for (size_t k = 1; k < n; ++k) {
        size_t len = k < right ? std::min(right - k, static_cast<size_t>(z[k - left])) : 0;
        while (k + len < n && s(len) == s(k + len)) ++len;
        z[k] = static_cast<int32_t>(len);
        if (k + len > right) {
            left = k;
            right = k + len;
        }
    }

    // history[n-k] follows the repeat that ends k tokens before the end: it would extend it.
    auto& repeats = scratch.repeats;
    repeats.clear();
    for (size_t k = 1; k < n; ++k) {
        const size_t len = std::min(static_cast<size_t>(z[k]), limit);
        if (len >= allowed) repeats.emplace_back(history[n - k], static_cast<int32_t>(len));
    }
    std::sort(repeats.begin(), repeats.end());  // by token, then length: the last of a token is its longest
    for (size_t i = 0; i < repeats.size(); ++i) {
        if (i + 1 < repeats.size() && repeats[i + 1].first == repeats[i].first) continue;
        const auto [token, len] = repeats[i];
        if (breakers.is_single_token(token)) continue;
        const double penalty = static_cast<double>(p.multiplier) *
                               std::pow(static_cast<double>(p.base), static_cast<double>(len) - p.allowed_length);
        const double capped = std::min(penalty, static_cast<double>(FLT_MAX));
        if (Candidate* c = find_id(list, token)) c->logit -= static_cast<float>(capped);
    }
}

}  // namespace tessel::sample
