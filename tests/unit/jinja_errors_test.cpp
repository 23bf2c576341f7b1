// tessel's Jinja interpreter (src/jinja) on templates it must refuse: unsupported constructs
// (UnsupportedError), malformed templates and rendering errors (Error InvalidArgument), each
// naming its line:column; raise_exception's own message; and the bounds on depth, output and work.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "jinja/template.hpp"

using namespace tessel;
using namespace tessel::jinja;

namespace {

std::string render(const std::string& source, const std::string& context = "{}", const RenderOptions& options = {}) {
    return Template(source).render(value_from_json(context).dict(), options);
}

// Runs fn, which must throw a tessel::Error of `code` with exactly `message`; `unsupported`
// says whether it must be an UnsupportedError.
void expect_error(const std::function<void()>& fn, ErrorCode code, const std::string& message, bool unsupported = false) {
    try {
        fn();
        ADD_FAILURE() << "no error; expected: " << message;
    } catch (const UnsupportedError& e) {
        EXPECT_TRUE(unsupported) << e.what();
        EXPECT_EQ(e.code(), code);
        EXPECT_EQ(std::string(e.what()), message);
    } catch (const Error& e) {
        EXPECT_FALSE(unsupported) << e.what();
        EXPECT_EQ(e.code(), code);
        EXPECT_EQ(std::string(e.what()), message);
    }
}

void unsupported(const std::string& source, const std::string& message) {
    SCOPED_TRACE(source);
    expect_error([&] { render(source); }, ErrorCode::Unsupported, message, true);
}

void invalid(const std::string& source, const std::string& message, const std::string& context = "{}",
             const RenderOptions& options = {}) {
    SCOPED_TRACE(source);
    expect_error([&] { render(source, context, options); }, ErrorCode::InvalidArgument, message);
}

}  // namespace

TEST(JinjaErrors, UnsupportedConstructsNameThemselvesAndTheirPosition) {
    unsupported("{{ x | frobnicate }}", "template:1:8: unsupported filter 'frobnicate'");
    unsupported("{% if x is prime %}{% endif %}", "template:1:12: unsupported test 'prime'");
    unsupported("{{ 'a'.zfill(3) }}", "template:1:7: unsupported method 'zfill' of str");
    unsupported("{{ lipsum() }}", "template:1:4: unsupported function 'lipsum'");
    unsupported("text\n  {% include 'other.jinja' %}", "template:2:3: unsupported tag 'include'");
    unsupported("{% for x in xs recursive %}{% endfor %}", "template:1:16: unsupported recursive for loop");
    unsupported("{% set a, b = 1, 2 %}", "template:1:9: unsupported tuple assignment in set");
    unsupported("{{ {1: 'x'} }}", "template:1:5: unsupported dict key of type int");
    // Found when rendering: a branch never taken does not fail.
    EXPECT_EQ(render("{% if false %}{{ x | frobnicate }}{% endif %}ok"), "ok");
}

TEST(JinjaErrors, MalformedTemplates) {
    invalid("{% if x %}never closed", "template:1:1: unclosed 'if' block: missing {% endif %}");
    invalid("{% for x in xs %}{% if x %}{% endfor %}", "template:1:18: unclosed 'if' block: missing {% endif %}");
    invalid("a\n{% endfor %}", "template:2:1: unexpected 'endfor' tag");
    invalid("{{ 1 + }}", "template:1:8: expected an expression, got end of tag");
    invalid("{{ x", "template:1:1: missing end of tag '}}'");
    invalid("{% if x", "template:1:1: missing end of tag '%}'");
    invalid("{# x", "template:1:1: missing end of comment tag '#}'");
    invalid("{{ 'abc }}", "template:1:4: unterminated string");
    invalid("{{ a b }}", "template:1:6: expected end of tag, got 'b'");
    invalid("{% for x xs %}{% endfor %}", "template:1:10: expected 'in', got 'xs'");
    invalid("{% %}", "template:1:1: empty tag");
    invalid("{{ x ? y }}", "template:1:6: unexpected character '?'");
    invalid("{{ f(a=1, 2) }}", "template:1:11: positional argument after keyword argument");
    invalid("{% for x in xs %}{% endfor x %}", "template:1:28: expected end of tag, got 'x'");
    invalid("a{% break %}", "template:1:2: 'break' outside a for loop");
    invalid("{% for x in xs %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}",
            "template:1:33: 'continue' outside a for loop");
}

TEST(JinjaErrors, RenderingErrorsAsJinja2RaisesThem) {
    invalid("{{ x.y }}", "template:1:5: 'x' is undefined");
    invalid("{{ d.missing.y }}", "template:1:13: 'dict object' has no attribute 'missing'", R"({"d": {}})");
    invalid("{{ 'a' + 1 }}", "template:1:8: unsupported operand type(s) for +: 'str' and 'int'");
    invalid("{{ 'a' + x }}", "template:1:8: 'x' is undefined");
    invalid("{{ 1 / 0 }}", "template:1:6: division by zero");
    invalid("{{ 1 < 'a' }}", "template:1:6: '<' not supported between instances of 'int' and 'str'");
    invalid("{% for x in 3 %}{% endfor %}", "template:1:13: 'int' object is not iterable");
    invalid("{% set x = 1 %}{% set x.a = 2 %}", "template:1:16: cannot assign attribute on non-namespace object 'x'");
    invalid("{{ 'x'.split('') }}", "template:1:13: split(): empty separator");
    invalid("{{ x | tojson }}", "template:1:8: tojson: 'x' is undefined");
    // Undefined values themselves are fine: empty, falsy, iterable as nothing, length 0.
    EXPECT_EQ(render("[{{ x }}{% if x %}t{% endif %}{% for i in x %}i{% endfor %}{{ x | length }}]"), "[0]");
}

// Python's ints are unbounded; where a result leaves int64 tessel says so rather than wrapping
// (found by fuzz_jinja: 9111111**111*11610 was undefined behaviour).
TEST(JinjaErrors, IntegerResultsOutsideInt64AreErrors) {
    const std::string tail = "' (tessel's integers are 64-bit)";
    invalid("{{ 9111111 ** 111 * 11610 }}", "template:1:12: integer overflow in '**" + tail);
    invalid("{{ 3 ** 40 }}", "template:1:6: integer overflow in '**" + tail);
    invalid("{{ 9223372036854775807 + 1 }}", "template:1:24: integer overflow in '+" + tail);
    invalid("{{ -9223372036854775807 - 2 }}", "template:1:25: integer overflow in '-" + tail);
    invalid("{{ 4294967296 * 4294967296 }}", "template:1:15: integer overflow in '*" + tail);
    invalid("{{ (-9223372036854775807 - 1) // -1 }}", "template:1:31: integer overflow in '//" + tail);
    invalid("{{ -(-9223372036854775807 - 1) }}", "template:1:4: integer overflow in '-" + tail);
    invalid("{{ (-9223372036854775807 - 1) | abs }}", "template:1:33: integer overflow in '-" + tail);
    invalid("{{ '99999999999999999999' | int }}", "template:1:29: integer overflow in int('99999999999999999999') (tessel's integers are 64-bit)");
    invalid("{{ 1e300 | int }}", "template:1:12: cannot convert float 1e+300 to a 64-bit integer");
    invalid("{{ '1e400' | int }}", "template:1:14: cannot convert float inf to a 64-bit integer");
    // A numeric attribute path past int64 names no element (jinja2: undefined), and no error.
    EXPECT_EQ(render("{{ xs | map(attribute='99999999999999999999') | select('defined') | list }}", R"({"xs": [[1]]})"), "[]");
}

TEST(JinjaErrors, RaiseExceptionThrowsTheTemplatesMessage) {
    try {
        render("{{ raise_exception('Conversation roles must alternate user/assistant') }}");
        ADD_FAILURE() << "no error";
    } catch (const RaisedError& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_STREQ(e.what(), "Conversation roles must alternate user/assistant");
    }
}

TEST(JinjaErrors, DepthOutputAndWorkAreBounded) {
    invalid("{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}",
            "template:1:104: expression nested too deeply");
    std::string blocks;
    for (int i = 0; i < 300; ++i) blocks += "{% if true %}";
    invalid(blocks, "template:1:" + std::to_string(1 + 13 * 200) + ": blocks nested too deeply");
    invalid("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "template:1:21: macro calls nested deeper than 64");
    RenderOptions shallow;  // statements and expressions inside each other, across macro calls
    shallow.max_depth = 50;
    invalid("{% macro f() %}{% if true %}{{ (((f()))) }}{% endif %}{% endmacro %}{{ f() }}",
            "template:1:35: template nested deeper than 50 while rendering", "{}", shallow);
    RenderOptions small;
    small.max_output = 1000;
    invalid("{% for i in range(1000) %}0123456789{% endfor %}", "template:1:27: output longer than 1000 bytes", "{}", small);
    invalid("{{ 'ab' * 100000000 }}", "template:1:9: string repetition longer than the output limit", "{}", small);
    RenderOptions few;
    few.max_steps = 100;
    invalid("{% for i in range(1000) %}{% endfor %}", "template:1:1: rendering took more than 100 steps", "{}", few);
    invalid("{{ range(2000000) | length }}", "template:1:9: range() longer than 1000000 items");
}

TEST(JinjaErrors, BadJsonContext) {
    expect_error([] { value_from_json("{\"a\": "); }, ErrorCode::InvalidArgument,
                 "invalid JSON: [json.exception.parse_error.101] parse error at line 1, column 7: syntax error while "
                 "parsing value - unexpected end of input; expected '[', '{', or a literal");
}
