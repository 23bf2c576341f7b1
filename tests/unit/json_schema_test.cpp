// JSON schema -> GBNF (src/sample/json_schema.cpp): the grammars accept JSON instances the
// schema allows and reject the others; unsupported and malformed schemas give errors naming
// the keyword and JSON pointer (or the JSON's line and column).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sample/gbnf_parser.hpp"
#include "sample/grammar_matcher.hpp"
#include "sample/json_schema.hpp"
#include "tessel/errors.hpp"
#include "tessel/sampling.hpp"

using tessel::json_schema_to_grammar;
using namespace tessel::sample;

namespace {

bool accepts(const std::string& schema, const std::string& instance) {
    GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf(json_schema_to_grammar(schema))));
    return m.accept(instance) && m.can_end();
}

std::string error_of(const std::string& schema, tessel::ErrorCode code) {
    try {
        json_schema_to_grammar(schema);
    } catch (const tessel::Error& e) {
        EXPECT_EQ(e.code(), code) << e.what();
        return e.what();
    }
    return "(converted)";
}

const char* kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 8},
    "age": {"type": "integer", "minimum": 0},
    "score": {"type": "number"},
    "ok": {"type": "boolean"},
    "color": {"enum": ["red", "green", 3, null]},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
    "note": {"type": ["string", "null"]}
  },
  "required": ["name", "age", "ok"],
  "additionalProperties": false
})";

}  // namespace

TEST(JsonSchema, GrammarTextOfASmallObject) {
    EXPECT_EQ(json_schema_to_grammar(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"const":"x\"y"}},"required":["a"]})"),
              R"(ws ::= [ \t\n]{0,12}
json-int ::= "-"? ("0" | [1-9] [0-9]{0,15})
root-b ::= "\"x\\\"y\""
root-rest ::= ("," ws "\"b\"" ws ":" ws root-b ws)?
root ::= "{" ws "\"a\"" ws ":" ws json-int ws root-rest "}"
)");
}

TEST(JsonSchema, ObjectsWithRequiredAndOptionalProperties) {
    EXPECT_TRUE(accepts(kPerson, R"({"name": "Ann", "age": 31, "ok": true})"));
    EXPECT_TRUE(accepts(kPerson, "{\n  \"name\":\"Bob\",\n  \"age\": 0,\n  \"score\": -1.5e3,\n  \"ok\": false,\n"
                                 "  \"color\": 3,\n  \"tags\": [\"a\", \"b\\n\"],\n  \"note\": null\n}"));
    EXPECT_TRUE(accepts(kPerson, R"({"name":"é\u00e9","age":7,"ok":true,"note":"n"})"));
    EXPECT_FALSE(accepts(kPerson, R"({"age": 31, "ok": true})"));                   // name missing
    EXPECT_FALSE(accepts(kPerson, R"({"name": "", "age": 31, "ok": true})"));       // minLength
    EXPECT_FALSE(accepts(kPerson, R"({"name": "abcdefghi", "age": 31, "ok": true})"));  // maxLength
    EXPECT_FALSE(accepts(kPerson, R"({"name": "A", "age": -1, "ok": true})"));      // minimum 0
    EXPECT_FALSE(accepts(kPerson, R"({"name": "A", "age": 1.5, "ok": true})"));     // integer
    EXPECT_FALSE(accepts(kPerson, R"({"name": "A", "age": 01, "ok": true})"));      // leading zero
    EXPECT_FALSE(accepts(kPerson, R"({"name": "A", "age": 1, "ok": "true"})"));
    EXPECT_FALSE(accepts(kPerson, R"({"name": "A", "age": 1, "ok": true, "color": "blue"})"));
    EXPECT_FALSE(accepts(kPerson, R"({"name": "A", "age": 1, "ok": true, "tags": []})"));
    EXPECT_FALSE(accepts(kPerson, R"({"name": "A", "age": 1, "ok": true, "tags": ["a","b","c"]})"));
    EXPECT_FALSE(accepts(kPerson, R"({"name": "A", "age": 1, "ok": true, "other": 1})"));  // additionalProperties
    EXPECT_FALSE(accepts(kPerson, R"({"name": "A", "age": 1, "ok": true,})"));
    EXPECT_FALSE(accepts(kPerson, R"({"name": "a"b", "age": 1, "ok": true})"));
    EXPECT_FALSE(accepts(kPerson, "{\"name\": \"a\tb\", \"age\": 1, \"ok\": true}"));  // raw control character
}

TEST(JsonSchema, OnlyOptionalPropertiesAndCommas) {
    const char* s = R"({"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}}})";
    for (const char* ok : {"{}", R"({"a":1})", R"({"b":1})", R"({"c":1})", R"({"a":1,"c":2})", R"({"a":1,"b":2,"c":3})"})
        EXPECT_TRUE(accepts(s, ok)) << ok;
    for (const char* bad : {R"({,"a":1})", R"({"a":1,})", R"({"b":1,"a":2})", R"({"a":1 "b":2})", R"({"d":1})"})
        EXPECT_FALSE(accepts(s, bad)) << bad;
}

TEST(JsonSchema, AdditionalPropertiesAndFreeObjects) {
    const char* extra = R"({"properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":{"type":"boolean"}})";
    EXPECT_TRUE(accepts(extra, R"({"a":1,"x":true,"y":false})"));
    EXPECT_FALSE(accepts(extra, R"({"a":1,"x":2})"));
    EXPECT_FALSE(accepts(extra, R"({"x":true})"));
    EXPECT_TRUE(accepts(R"({"type":"object"})", R"({"k":[1,{"z":null}],"s":"t"})"));
    EXPECT_TRUE(accepts("true", R"([1, "a", {"b": [true]}])"));
    EXPECT_FALSE(accepts("{}", R"([1,])"));
}

TEST(JsonSchema, ArraysNestingAnyOfAndRefs) {
    const char* s = R"({"type":"array","minItems":2,"maxItems":3,"items":{"$ref":"#/$defs/point"},
        "$defs":{"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"anyOf":[{"type":"integer"},{"const":"none"}]}},
                 "required":["x","y"]}}})";
    EXPECT_TRUE(accepts(s, R"([{"x":1,"y":2},{"x":0.5,"y":"none"}])"));
    EXPECT_TRUE(accepts(s, R"([ {"x":1,"y":2} , {"x":1,"y":2}, {"x":1,"y":2} ])"));
    EXPECT_FALSE(accepts(s, R"([{"x":1,"y":2}])"));
    EXPECT_FALSE(accepts(s, R"([{"x":1,"y":2},{"x":1,"y":2},{"x":1,"y":2},{"x":1,"y":2}])"));
    EXPECT_FALSE(accepts(s, R"([{"x":1,"y":"some"},{"x":1,"y":2}])"));
    const char* tree = R"({"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#"}}},"required":["v"]})";
    EXPECT_TRUE(accepts(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
    EXPECT_FALSE(accepts(tree, R"({"v":1,"kids":[{"kids":[]}]})"));
}

TEST(JsonSchema, Patterns) {
    const char* date = R"({"type":"string","pattern":"^\\d{4}-(0[1-9]|1[0-2])-\\d\\d$"})";
    EXPECT_TRUE(accepts(date, R"("2024-12-03")"));
    EXPECT_FALSE(accepts(date, R"("2024-13-03")"));
    EXPECT_FALSE(accepts(date, R"("24-12-03")"));
    const char* quoted = R"({"pattern":"[a\"\\\\]+x?(?:yz)*\\.[^a]"})";
    EXPECT_TRUE(accepts(quoted, R"("a\"\\ayzyz.b")"));
    EXPECT_FALSE(accepts(quoted, R"("a"x.b")"));  // a raw quote is never produced
    EXPECT_FALSE(accepts(quoted, R"("ax.a")"));
    EXPECT_FALSE(accepts(quoted, R"("ax.")"));
    EXPECT_FALSE(accepts(quoted, R"("ax.\")"));  // [^a] does not produce a backslash
}

TEST(JsonSchema, ErrorsNameThePositionOrPointer) {
    using tessel::ErrorCode;
    EXPECT_EQ(error_of("{\"type\": \"object\",\n \"properties\": {\"a\" 1}}", ErrorCode::InvalidArgument),
              "json schema: parse error at line 2, column 21: syntax error while parsing object separator - "
              "unexpected number literal; expected ':'");
    EXPECT_EQ(error_of(R"({"const": 1e999})", ErrorCode::InvalidArgument),
              "json schema: number overflow parsing '1e999'");
    EXPECT_EQ(error_of(R"({"properties":{"a":{"type":"string","format":"date"}}})", ErrorCode::Unsupported),
              "json schema: keyword 'format' at '/properties/a/format' is not supported");
    EXPECT_EQ(error_of(R"({"allOf":[{}]})", ErrorCode::Unsupported),
              "json schema: keyword 'allOf' at '/allOf' is not supported");
    EXPECT_EQ(error_of(R"({"type":"strin"})", ErrorCode::InvalidArgument),
              "json schema: '/type' names an unknown type 'strin' (expected object, array, string, number, integer, "
              "boolean or null)");
    EXPECT_EQ(error_of(R"({"items":{"$ref":"#/$defs/nope"}})", ErrorCode::InvalidArgument),
              "json schema: '/items/$ref' points to '/$defs/nope', which is not in the document");
    EXPECT_EQ(error_of(R"({"type":"string","pattern":"(a)\\1"})", ErrorCode::Unsupported),
              "json schema: pattern escape '\\1' (at offset 5 of '/pattern') is not supported");
    EXPECT_EQ(error_of(R"j({"type":"string","pattern":"a(?=b)"})j", ErrorCode::Unsupported),
              "json schema: pattern group '(?' (at offset 2 of '/pattern') is not supported");
    EXPECT_EQ(error_of(R"({"type":"array","minItems":3,"maxItems":2})", ErrorCode::InvalidArgument),
              "json schema: '' has minItems > maxItems");
    std::string deep = "true";
    for (int i = 0; i < 101; ++i) deep = R"({"items":)" + deep + "}";
    EXPECT_TRUE(error_of(deep, ErrorCode::Unsupported).starts_with("json schema: a schema nested deeper than 100 at '/items/items"));
    EXPECT_EQ(error_of(R"({"pattern":")" + std::string(101, '(') + "a" + std::string(101, ')') + R"("})", ErrorCode::Unsupported),
              "json schema: pattern groups nested deeper than 100 (at offset 100 of '/pattern') is not supported");
    EXPECT_EQ(error_of(R"({"type":"integer","minimum":5})", ErrorCode::Unsupported),
              "json schema: 'minimum' other than 0 on an integer at '/minimum' is not supported");
}
