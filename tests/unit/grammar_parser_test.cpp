// GBNF parser (src/sample/gbnf_parser.hpp): the rules a grammar text lowers to, and the
// line:column errors of bad grammars.
#include <gtest/gtest.h>

#include <string>

#include "sample/gbnf_parser.hpp"
#include "tessel/errors.hpp"

using namespace tessel::sample;

namespace {

std::string code_point(uint32_t cp) {
    if (cp >= 0x20 && cp < 0x7F && cp != '\\' && cp != ']' && cp != '-' && cp != '^') return std::string(1, char(cp));
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    return buf;
}

// One line per rule, "name ::= alt | alt", a character set as [..] and a rule by its name.
std::string dump(const Grammar& g) {
    std::string out;
    for (const GrammarRule& r : g.rules) {
        out += r.name + " ::=";
        for (size_t a = 0; a < r.alternatives.size(); ++a) {
            if (a > 0) out += " |";
            for (uint32_t p = r.alternatives[a]; g.elements[p].kind != GrammarElement::Kind::End; ++p) {
                const GrammarElement& e = g.elements[p];
                if (e.kind == GrammarElement::Kind::Rule) {
                    out += " " + g.rules[e.index].name;
                    continue;
                }
                const CharSet& s = g.charsets[e.index];
                out += s.negated ? " [^" : " [";
                for (const auto& [first, last] : s.ranges)
                    out += first == last ? code_point(first) : code_point(first) + "-" + code_point(last);
                out += "]";
            }
        }
        out += "\n";
    }
    return out;
}

std::string error_of(const std::string& text) {
    try {
        parse_gbnf(text);
    } catch (const tessel::Error& e) {
        EXPECT_EQ(e.code(), tessel::ErrorCode::InvalidArgument);
        return e.what();
    }
    return "(parsed)";
}

}  // namespace

TEST(GbnfParser, RulesAlternativesLiteralsAndClasses) {
    const Grammar g = parse_gbnf("# a comment\nroot ::= \"ab\" num | [^\"\\\\] . # trailing\nnum ::= [0-9_x]\n");
    EXPECT_EQ(dump(g), "root ::= [a] [b] num | [^\"\\u005C] [^]\nnum ::= [0-9_x]\n");
    EXPECT_EQ(g.rules[g.root].name, "root");
}

TEST(GbnfParser, EscapesAndUtf8) {
    const Grammar g = parse_gbnf("root ::= \"\\n\\t\\r\\\"\\x41\\u00e9\\U0001F600é\" [\\]\\-\\[]");
    EXPECT_EQ(dump(g), "root ::= [\\u000A] [\\u0009] [\\u000D] [\"] [A] [\\u00E9] [\\u1F600] [\\u00E9] [\\u005D\\u002D[]\n");
}

TEST(GbnfParser, GroupsAndRepetitionsBecomeRules) {
    const Grammar g = parse_gbnf("root ::= (\"a\" | \"b\")* \"c\"+ \"d\"? \"ef\"{2} [x]{1,3} [y]{2,}");
    EXPECT_EQ(dump(g),
              "root ::= root-2 [c] root-3 root-4 root-5 root-5 [x] root-7 [y] [y] root-8\n"
              "root-1 ::= [a] | [b]\n"
              "root-2 ::= root-1 root-2 |\n"
              "root-3 ::= [c] root-3 |\n"
              "root-4 ::= [d] |\n"
              "root-5 ::= [e] [f]\n"
              "root-6 ::= [x] |\n"
              "root-7 ::= [x] root-6 |\n"
              "root-8 ::= [y] root-8 |\n");
}

TEST(GbnfParser, MultiLineBodies) {
    const Grammar g = parse_gbnf("root ::=\n  \"a\" (\n \"b\" |\n \"c\" )\n  | \"d\"\nx ::= \"e\"\n");
    EXPECT_EQ(dump(g), "root ::= [a] root-1 | [d]\nroot-1 ::= [b] | [c]\nx ::= [e]\n");
}

TEST(GbnfParser, ErrorsNameLineColumnAndWhatWasExpected) {
    EXPECT_EQ(error_of("root ::= foo\n"), "grammar:1:10: undefined rule 'foo'");
    EXPECT_EQ(error_of("x ::= \"a\"\n"), "grammar:1:1: no rule named 'root' (the start rule)");
    EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "grammar:2:1: rule 'root' is defined twice");
    EXPECT_EQ(error_of("root ::= \"é\"  \"abc\n"), "grammar:1:15: unclosed literal: expected '\"' before the end of the line");
    EXPECT_EQ(error_of("root ::= [a-z"), "grammar:1:10: unclosed character class: expected ']' before the end of the line");
    EXPECT_EQ(error_of("root ::= [z-a]"), "grammar:1:13: character range end is below its start");
    EXPECT_EQ(error_of("root ::= \"\\q\""), "grammar:1:11: unknown escape '\\q' (expected \\n \\t \\r \\\\ \\\" \\[ \\] \\- \\^ \\/ \\xHH \\uHHHH \\UHHHHHHHH)");
    EXPECT_EQ(error_of("root ::= \"\\x4\""), "grammar:1:11: expected 2 hex digits in the escape");
    EXPECT_EQ(error_of("root ::= \"a\"{2"), "grammar:1:15: bad repetition: expected '}' to close the '{' at 1:13");
    EXPECT_EQ(error_of("root ::= \"a\"{,2}"), "grammar:1:14: bad repetition: expected a number");
    EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "grammar:1:13: bad repetition: {m,n} needs m <= n");
    EXPECT_EQ(error_of("root ::= * \"a\""), "grammar:1:10: repetition '*' has nothing to repeat");
    EXPECT_EQ(error_of("root ::= (\"a\""), "grammar:1:14: expected ')' to close the group opened at 1:10");
    EXPECT_EQ(error_of("root = \"a\""), "grammar:1:6: expected '::=' after rule name 'root'");
    EXPECT_EQ(error_of("root ::= \"a\" )"), "grammar:1:14: expected end of line after rule 'root'");
    EXPECT_EQ(error_of("root ::= \"a\" ;"),
              "grammar:1:14: expected a literal, a character class, '.', '(', a rule name, '|' or the end of the line");
    EXPECT_EQ(error_of("root ::= \"\xff\""), "grammar:1:11: invalid UTF-8 byte");
}

TEST(GbnfParser, LeftRecursionIsAnErrorAtLoad) {
    EXPECT_EQ(error_of("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]"),
              "grammar:2:1: rule 'expr' is left-recursive (expr -> expr); rewrite it with repetition");
    // Through another rule and a nullable prefix.
    EXPECT_EQ(error_of("root ::= a\na ::= e b\nb ::= a \"x\" | \"y\"\ne ::= \"z\"?"),
              "grammar:2:1: rule 'a' is left-recursive (a -> b -> a); rewrite it with repetition");
    // A repeated group that can match "" (llama.cpp would loop on it).
    EXPECT_EQ(error_of("root ::= (\"x\"? | \"y\")*"),
              "grammar:1:22: rule 'root-3' is left-recursive (root-3 -> root-3); rewrite it with repetition");
}

TEST(GbnfParser, NestingIsBounded) {
    EXPECT_EQ(error_of("root ::= " + std::string(1001, '(') + "\"a\"" + std::string(1001, ')')),
              "grammar:1:1010: groups nested deeper than 1000");
    EXPECT_EQ(parse_gbnf("root ::= " + std::string(1000, '(') + "\"a\"" + std::string(1000, ')')).rules.size(), 1u);
    // Each optional-chain rule starts with the next when the repeated item can match "".
    EXPECT_EQ(error_of("root ::= (\"a\"?){0,3000}"),
              "grammar:1:16: rule 'root-2002' starts with a chain of over 2000 rules (nested groups, or a long "
              "repetition of something that can match \"\")");
    EXPECT_NO_THROW(parse_gbnf("root ::= (\"a\"?){0,1000}"));
}

TEST(GbnfParser, RepetitionBounds) {
    // A large bounded repetition expands to about 4 elements per repetition, within the limit.
    const Grammar g = parse_gbnf("root ::= [a]{0,100000}");
    EXPECT_EQ(g.rules.size(), 100001u);
    EXPECT_EQ(error_of("root ::= [a]{0,100001}"), "grammar:1:16: repetition count is over 100000");
    // Six such repetitions pass the element limit during the sixth.
    EXPECT_EQ(error_of("root ::= [a]{0,100000} [b]{0,100000} [c]{0,100000} [d]{0,100000} [e]{0,100000} [f]{0,100000}"),
              "grammar:1:83: the grammar is too large: over 2097152 elements once repetitions are expanded");
}
