// DRY (src/sample/dry.hpp): the penalties against a direct O(n^2) reading of the definition in
// include/tessel/sampling.hpp, sequence breakers built from token texts, and the cases where it
// leaves the logits alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sample/candidates.hpp"
#include "sample/dry.hpp"

using namespace tessel;
using namespace tessel::sample;

namespace {

CandidateList zeros(size_t n) {
    CandidateList list;
    list.assign(std::vector<float>(n, 0.0f));
    return list;
}

std::vector<float> logits_of(const CandidateList& list) {
    std::vector<float> out;
    for (const Candidate& c : list.items) out.push_back(c.logit);
    return out;
}

// The definition, directly: the limit is the tokens after the last single-token breaker; for
// each earlier position j, the longest suffix of h ending at j (capped) is scored for h[j+1].
std::vector<float> reference(size_t n_vocab, const std::vector<int32_t>& h, const DryParams& p,
                             const std::vector<int32_t>& single_breakers) {
    std::vector<float> out(n_vocab, 0.0f);
    const size_t n = h.size();
    if (n <= static_cast<size_t>(p.allowed_length)) return out;
    auto is_breaker = [&](int32_t t) { return std::find(single_breakers.begin(), single_breakers.end(), t) != single_breakers.end(); };
    size_t limit = n;
    for (size_t i = 0; i < n; ++i)
        if (is_breaker(h[n - 1 - i])) {
            limit = i;
            break;
        }
    if (limit < static_cast<size_t>(p.allowed_length)) return out;
    std::map<int32_t, size_t> longest;
    for (size_t j = 0; j + 1 < n; ++j) {
        size_t len = 0;
        while (len <= j && h[j - len] == h[n - 1 - len]) ++len;
        len = std::min(len, limit);
        if (len >= static_cast<size_t>(p.allowed_length)) longest[h[j + 1]] = std::max(longest[h[j + 1]], len);
    }
    for (const auto& [token, len] : longest)
        if (!is_breaker(token))
            out[static_cast<size_t>(token)] -= static_cast<float>(p.multiplier * std::pow(p.base, static_cast<double>(len) - p.allowed_length));
    return out;
}

SamplerVocab letters_vocab() {
    SamplerVocab v;
    v.pieces = {"a", "b", "c", "d", "X", "Y", "XY", "q:", "\n"};
    v.tokenize = [](std::string_view text) {
        std::vector<int32_t> ids;
        for (char ch : text) ids.push_back(ch == 'Y' ? 5 : ch == 'X' ? 4 : ch - 'a');
        return ids;
    };
    return v;
}

}  // namespace

TEST(SampleDry, PenalizesTheTokensThatExtendARepeat) {
    // a b c c b c y a b c (a=0 b=1 c=2 y=3): "a b c" also ends at position 2, so c (next there)
    // would make a repeat of 3; "b c" ends at 5, followed by y: 2; "c" ends at 3, followed by b: 1.
    const std::vector<int32_t> h = {0, 1, 2, 2, 1, 2, 3, 0, 1, 2};
    const DryParams p{0.8f, 1.75f, 2};
    CandidateList list = zeros(5);
    DryScratch scratch;
    apply_dry(list, h, p, DryBreakers{}, scratch);
    EXPECT_EQ(logits_of(list), (std::vector<float>{0.0f, 0.0f, -0.8f * 1.75f, -0.8f, 0.0f}));
    EXPECT_EQ(logits_of(list), reference(5, h, p, {}));
}

TEST(SampleDry, MatchesTheDefinitionOnRandomHistories) {
    std::mt19937 gen(3);  // only makes test inputs
    DryScratch scratch;
    for (int round = 0; round < 200; ++round) {
        const size_t n_vocab = 2 + gen() % 4;
        std::vector<int32_t> h(gen() % 80);
        for (int32_t& t : h) t = static_cast<int32_t>(gen() % n_vocab);
        const DryParams p{0.5f + static_cast<float>(gen() % 4), 1.0f + static_cast<float>(gen() % 3) * 0.5f,
                          static_cast<int32_t>(gen() % 4)};
        const bool with_breaker = gen() % 2 == 0;
        SamplerVocab vocab;
        for (size_t i = 0; i < n_vocab; ++i) vocab.pieces.push_back(std::string(1, static_cast<char>('a' + i)));
        const std::vector<std::string> breakers = {"a"};
        const DryBreakers b = with_breaker ? DryBreakers(breakers, vocab) : DryBreakers{};
        CandidateList list = zeros(n_vocab);
        apply_dry(list, h, p, b, scratch);
        const std::vector<float> expected = reference(n_vocab, h, p, with_breaker ? std::vector<int32_t>{0} : std::vector<int32_t>{});
        ASSERT_EQ(logits_of(list).size(), expected.size());
        for (size_t i = 0; i < n_vocab; ++i) EXPECT_FLOAT_EQ(logits_of(list)[i], expected[i]) << "round " << round << " token " << i;
    }
}

TEST(SampleDry, ABreakerCapsTheRepeatLength) {
    // a X b c d a X b c (X=4 a breaker): without it d would extend a repeat of 4, with it the
    // repeat may not reach back past the last X: 2 ("b c").
    const std::vector<int32_t> h = {0, 4, 1, 2, 3, 0, 4, 1, 2};
    const DryParams p{1.0f, 2.0f, 2};
    DryScratch scratch;
    CandidateList free_list = zeros(9);
    apply_dry(free_list, h, p, DryBreakers{}, scratch);
    EXPECT_EQ(free_list.items[3].logit, -4.0f);  // 2^(4-2)
    const std::vector<std::string> breakers = {"X"};
    CandidateList capped = zeros(9);
    apply_dry(capped, h, p, DryBreakers(breakers, letters_vocab()), scratch);
    EXPECT_EQ(capped.items[3].logit, -1.0f);  // 2^(2-2)
    // Fewer tokens since the breaker than the allowed length: no penalty at all.
    const std::vector<int32_t> short_tail = {0, 1, 2, 0, 1, 2, 4, 0};
    CandidateList none = zeros(9);
    apply_dry(none, short_tail, p, DryBreakers(breakers, letters_vocab()), scratch);
    EXPECT_EQ(logits_of(none), std::vector<float>(9, 0.0f));
}

TEST(SampleDry, BreakersComeFromTokenTexts) {
    const SamplerVocab v = letters_vocab();
    const std::vector<std::string> breakers = {"XY", ":", "\n"};
    const DryBreakers b(breakers, v);
    // "XY" is inside token 6; token 4 ("X") ends with its prefix "X" and needs "Y" (token 5) next.
    EXPECT_TRUE(b.is_single_token(6));
    EXPECT_FALSE(b.is_single_token(4));
    ASSERT_NE(b.tails(4), nullptr);
    EXPECT_EQ(*b.tails(4), (std::vector<std::vector<int32_t>>{{5}}));
    EXPECT_TRUE(b.is_single_token(7));  // "q:" contains ":"
    EXPECT_TRUE(b.is_single_token(8));
    EXPECT_EQ(b.tails(0), nullptr);
    EXPECT_FALSE(b.is_single_token(5));

    // X Y as a pair breaks a repeat; X alone does not.
    const DryParams p{1.0f, 2.0f, 1};
    DryScratch scratch;
    CandidateList paired = zeros(9);
    apply_dry(paired, std::vector<int32_t>{0, 1, 2, 0, 1, 4, 5, 0, 1}, p, b, scratch);  // a b c a b X Y a b
    EXPECT_EQ(paired.items[2].logit, -2.0f);  // c: "a b" repeated, 2 tokens since X Y: 2^(2-1)
    CandidateList lone = zeros(9);
    apply_dry(lone, std::vector<int32_t>{0, 1, 2, 4, 0, 1, 2, 4, 0, 1}, p, b, scratch);  // ... X a b (no Y)
    // c: "a b c X a b" also ends at position 5 (the lone X breaks nothing): a repeat of 6 -> 2^5
    EXPECT_EQ(lone.items[2].logit, -32.0f);

    // Without a tokenize, only tokens holding the whole breaker count.
    SamplerVocab no_tokenize = v;
    no_tokenize.tokenize = nullptr;
    const DryBreakers plain(breakers, no_tokenize);
    EXPECT_EQ(plain.tails(4), nullptr);
    EXPECT_TRUE(plain.is_single_token(6));
}

TEST(SampleDry, LeavesLogitsAloneWhenNothingRepeats) {
    DryScratch scratch;
    const DryParams p{1.0f, 1.75f, 2};
    for (const std::vector<int32_t>& h : std::vector<std::vector<int32_t>>{{}, {1}, {1, 1}, {0, 1, 2, 3}}) {
        CandidateList list = zeros(4);
        apply_dry(list, h, p, DryBreakers{}, scratch);
        EXPECT_EQ(logits_of(list), std::vector<float>(4, 0.0f));
    }
}

TEST(SampleDry, HugePenaltiesStayFinite) {
    std::vector<int32_t> h;
    for (int i = 0; i < 400; ++i) h.push_back(i % 2);  // a b a b ...: a repeat of ~400
    CandidateList list = zeros(3);
    DryScratch scratch;
    apply_dry(list, h, {5.0f, 10.0f, 2}, DryBreakers{}, scratch);
    EXPECT_EQ(list.items[0].logit, -FLT_MAX);
    EXPECT_EQ(list.items[2].logit, 0.0f);
}
