// Grammar matcher and sampling stage (src/sample/grammar_matcher.hpp, grammar_stage.hpp):
// texts accepted and rejected, UTF-8 split across pieces, and masks over a tiny vocabulary.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "sample/gbnf_parser.hpp"
#include "sample/grammar_matcher.hpp"
#include "sample/grammar_stage.hpp"
#include "tessel/errors.hpp"

using namespace tessel::sample;

namespace {

std::shared_ptr<const Grammar> grammar(const std::string& text) {
    return std::make_shared<const Grammar>(parse_gbnf(text));
}

// Whole-text match: every piece accepted in turn, then the grammar can end.
bool matches(const std::string& gbnf, const std::vector<std::string>& pieces) {
    GrammarMatcher m(grammar(gbnf));
    for (const std::string& p : pieces)
        if (!m.accept(p)) return false;
    return m.can_end();
}

bool matches(const std::string& gbnf, const std::string& text) {
    return matches(gbnf, std::vector<std::string>{text});
}

const char* kArith = R"gbnf(
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= num | "(" expr ")"
num  ::= [0-9]+
)gbnf";

}  // namespace

TEST(GrammarMatcher, AcceptsAndRejectsWholeTexts) {
    EXPECT_TRUE(matches(kArith, "1+2"));
    EXPECT_TRUE(matches(kArith, "(10-(2+3))+4"));
    EXPECT_FALSE(matches(kArith, "1+"));      // a prefix, not a match
    EXPECT_FALSE(matches(kArith, "(1+2"));
    EXPECT_FALSE(matches(kArith, "1*2"));
    EXPECT_FALSE(matches(kArith, ""));
    EXPECT_TRUE(matches("root ::= \"ab\"? [x-z]{2,3}", "abxyz"));
    EXPECT_TRUE(matches("root ::= \"ab\"? [x-z]{2,3}", "zz"));
    EXPECT_FALSE(matches("root ::= \"ab\"? [x-z]{2,3}", "z"));
    EXPECT_FALSE(matches("root ::= \"ab\"? [x-z]{2,3}", "xxxx"));
    EXPECT_TRUE(matches("root ::= [^a-c]*", "dé\n"));
    EXPECT_FALSE(matches("root ::= [^a-c]*", "dab"));
    EXPECT_TRUE(matches("root ::= . . \"!\"", "é€!"));
    EXPECT_TRUE(matches("root ::= [a]{0,100000}", std::string(1000, 'a')));
}

TEST(GrammarMatcher, RejectedTextLeavesTheStateUnchanged) {
    GrammarMatcher m(grammar(kArith));
    EXPECT_TRUE(m.accept("12"));
    EXPECT_FALSE(m.accept("+)"));
    EXPECT_TRUE(m.check("+3"));
    EXPECT_TRUE(m.can_end());
    EXPECT_TRUE(m.accept("+3"));
    EXPECT_TRUE(m.can_end());
    m.reset();
    EXPECT_FALSE(m.can_end());
    EXPECT_FALSE(m.accept("+"));
}

TEST(GrammarMatcher, Utf8SplitAcrossPieces) {
    const std::string g = "root ::= \"é\" [\\u4e00-\\u9fff] \"😀\"";
    // é = C3 A9, 中 = E4 B8 AD, 😀 = F0 9F 98 80, cut anywhere.
    EXPECT_TRUE(matches(g, {"\xC3", "\xA9\xE4", "\xB8", "\xAD\xF0\x9F", "\x98", "\x80"}));
    GrammarMatcher m(grammar(g));
    EXPECT_TRUE(m.accept("\xC3"));
    EXPECT_FALSE(m.can_end());  // a character is pending
    EXPECT_FALSE(m.check("\xC3"));  // not a continuation byte
    EXPECT_TRUE(m.accept("\xA9"));
    EXPECT_FALSE(m.check("\xC3"));  // é's lead byte cannot start a CJK character
    EXPECT_TRUE(m.check("\xE4"));
    EXPECT_FALSE(m.check("\xEA"));  // U+A000 and up: past the class
}

TEST(GrammarMatcher, InvalidUtf8NeverMatches) {
    // Overlong forms of '[' and '/', a surrogate, a lead byte past U+10FFFF, a stray continuation.
    const std::string any = "root ::= .*";
    for (const char* bad : {"\xE0\x81\x9B", "\xC1\x9B", "\xC0\xAF", "\xF0\x80\x81\x9B", "\xED\xA0\x80", "\xF5\x80\x80\x80",
                            "\xF4\x90\x80\x80", "\x80"}) {
        GrammarMatcher m(grammar(any));
        EXPECT_FALSE(m.accept(bad)) << bad;
    }
    GrammarMatcher m(grammar("root ::= \"[\""));
    EXPECT_FALSE(m.check("\xE0"));  // no 3-byte character is '['
    EXPECT_TRUE(matches(any, "\xED\x9F\xBF\xEE\x80\x80\xF4\x8F\xBF\xBF"));  // U+D7FF, U+E000, U+10FFFF
}

TEST(GrammarMatcher, AmbiguousEmptyMatchesStayLinear) {
    // Each copy matches "" in two ways: without merging equal stacks the start state alone would
    // be 2^200 expansions. One stack per copy that may take the next "y", and the one that ended.
    GrammarMatcher m(grammar("root ::= (\"\" | \"\" | \"y\"){200}"));
    EXPECT_EQ(m.stacks().size(), 201u);
    EXPECT_TRUE(m.can_end());
    EXPECT_TRUE(m.accept(std::string(200, 'y')));
    EXPECT_FALSE(m.check("y"));
    // Duplicated alternatives nested 40 deep: 2^40 paths to the same stack.
    std::string nested = "root ::= r0\n";
    for (int i = 0; i < 40; ++i) nested += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " | r" + std::to_string(i + 1) + "\n";
    nested += "r40 ::= \"z\"\n";
    EXPECT_TRUE(matches(nested, "z"));
}

TEST(GrammarMatcher, TailRecursionKeepsStacksShort) {
    GrammarMatcher m(grammar("root ::= item\nitem ::= \"a\" item | \"b\""));
    for (int i = 0; i < 10000; ++i) ASSERT_TRUE(m.accept("a"));
    ASSERT_EQ(m.stacks().size(), 2u);
    EXPECT_EQ(m.stacks()[0].size(), 1u);
    EXPECT_TRUE(m.accept("b"));
    EXPECT_TRUE(m.can_end());
}

namespace {

// A tiny vocabulary: token i has text kPieces[i]; 9 is end-of-generation, 10 has no bytes, 14 is
// a control token whose text the grammar would take.
const std::vector<std::string> kPieces = {"{", "\"", "a", "ab\"", "\":", "1", "12}", "}", " ", "</s>", "", "\xC3", "\xA9", "é", "1"};
const std::vector<int32_t> kEog = {9};
const std::vector<int32_t> kControl = {9, 14};

std::vector<int32_t> allowed_by_mask(GrammarStage& stage) {
    CandidateList list;
    std::vector<float> logits(kPieces.size(), 0.0f);
    list.assign(logits);
    stage.mask(list);
    std::vector<int32_t> out;
    for (const Candidate& c : list.items)
        if (c.logit == 0.0f) out.push_back(c.id);
        else EXPECT_EQ(c.logit, -INFINITY);
    return out;
}

std::vector<int32_t> allowed_one_by_one(GrammarStage& stage) {
    std::vector<int32_t> out;
    for (int32_t id = 0; id < static_cast<int32_t>(kPieces.size()); ++id)
        if (stage.allows(id)) out.push_back(id);
    return out;
}

}  // namespace

TEST(GrammarStage, MasksATinyVocabularyStepByStep) {
    GrammarStage stage(grammar("root ::= \"{\" \"\\\"\" [a-zé]+ \"\\\":\" [0-9]+ \"}\""), kPieces, kEog, kControl);
    const std::vector<std::pair<int32_t, std::vector<int32_t>>> steps = {
        {0, {0}},               // {
        {1, {1}},               // "
        {11, {2, 3, 11, 13}},   // a, ab" (spans the key and the quote), the first byte of é, é
        {12, {12}},             // only é's second byte
        {4, {1, 2, 3, 4, 11, 13}},  // more letters, or the quote (and colon)
        {6, {5, 6}},            // 12} spans the digits and the brace
        {9, {9}},               // only end-of-generation once the grammar ended
    };
    for (const auto& [take, expected] : steps) {
        EXPECT_EQ(allowed_by_mask(stage), expected) << "before token " << take;
        EXPECT_EQ(allowed_one_by_one(stage), expected) << "before token " << take;
        stage.accept(take);
    }
}

TEST(GrammarStage, AcceptingAForbiddenTokenThrows) {
    GrammarStage stage(grammar("root ::= \"1\"+"), kPieces, kEog, kControl);
    EXPECT_THROW(stage.accept(9), tessel::Error);   // cannot end before a digit
    EXPECT_THROW(stage.accept(10), tessel::Error);  // no bytes
    EXPECT_THROW(stage.accept(14), tessel::Error);  // a control token
    EXPECT_THROW(stage.accept(0), tessel::Error);
    stage.accept(5);
    stage.accept(9);
    stage.reset();
    EXPECT_FALSE(stage.allows(9));
}
