// tools::process_escapes: llama.cpp's -e/--escape decoding of prompt text.
#include <gtest/gtest.h>

#include <string>

#include "common/escapes.hpp"

namespace tessel::tools {
namespace {

TEST(Escapes, DecodesTheSimpleEscapes) {
    EXPECT_EQ(process_escapes(R"(a\nb\tc\rd)"), std::string("a\nb\tc\rd"));
    EXPECT_EQ(process_escapes(R"(say \"hi\" it\'s a \\ path\?)"), std::string("say \"hi\" it's a \\ path?"));
    EXPECT_EQ(process_escapes(R"(\a\b\f\v)"), std::string("\a\b\f\v"));
    EXPECT_EQ(process_escapes(R"(nul\0end)"), std::string("nul\0end", 7));
}

TEST(Escapes, DecodesHexBytes) {
    EXPECT_EQ(process_escapes(R"(\x41\x4a\x7)"), std::string("AJ\x07"));
    EXPECT_EQ(process_escapes(R"(\xe2\x82\xac)"), std::string("\xe2\x82\xac"));  // the euro sign's UTF-8 bytes
    EXPECT_EQ(process_escapes(R"(\x414)"), std::string("A4"));                    // at most two digits
}

TEST(Escapes, KeepsWhatIsNotAnEscape) {
    EXPECT_EQ(process_escapes("plain text, no backslash"), "plain text, no backslash");
    EXPECT_EQ(process_escapes(R"(C:\Users\q)"), std::string(R"(C:\Users\q)"));  // \U and \q are not escapes
    EXPECT_EQ(process_escapes(R"(trailing\)"), std::string(R"(trailing\)"));
    EXPECT_EQ(process_escapes(R"(\xg)"), std::string(R"(\xg)"));
    EXPECT_EQ(process_escapes(R"(\\n)"), std::string(R"(\n)"));  // an escaped backslash, then a plain n
    EXPECT_EQ(process_escapes(""), "");
}

}  // namespace
}  // namespace tessel::tools
