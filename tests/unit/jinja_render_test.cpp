// tessel's Jinja interpreter (src/jinja): each construct chat templates use, rendered to the text
// Python's jinja2 renders.
//
// How the expected strings were obtained: each row's template and JSON context were rendered by
// jinja2 3.1.2 (Debian's python3-jinja2) in HF transformers' environment, the one of
// scripts/check_chat_templates.py (environment(): trim_blocks, lstrip_blocks, loopcontrols,
// tojson with ensure_ascii=False, strftime_now at 2024-09-05 12:00), and copied verbatim.
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "jinja/template.hpp"

using namespace tessel;
using namespace tessel::jinja;

namespace {

struct Case {
    const char* source;
    const char* context;  // JSON object
    const char* expected;
};

const Case kCases[] = {
    {"Hello {{ name }}!",
     "{\"name\": \"Ada\"}",
     "Hello Ada!"},
    {"{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}",
     "{}",
     "7 9 3 -4 1 2 3.5 1024"},
    {"{{ 2 ** 62 }} {{ 3 ** 39 }} {{ -9223372036854775807 - 1 }} {{ 7 // -1 }} {{ -7 % -1 }} {{ (-9223372036854775807 - 1) % -1 }} "
     "{{ (-9223372036854775807 - 1) // 1 }} {{ -9223372036854775807 | abs }} {{ 2.5e18 | int }} {{ '9223372036854775807' | int }} "
     "{{ range(9223372036854775806, 9223372036854775807, 5) | list }} {{ 'nan' | int(3) }}",
     "{}",
     "4611686018427387904 4052555153018976267 -9223372036854775808 -7 0 0 -9223372036854775808 9223372036854775807 "
     "2500000000000000000 9223372036854775807 [9223372036854775806] 3"},
    {"{{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 10 / 4 }} {{ 3.0 }}",
     "{}",
     "2.5 0.30000000000000004 1e+20 2.5 3.0"},
    {"{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] + [2, 'x'] }}",
     "{}",
     "a1NoneTrue ababab [1, 2, 'x']"},
    {"{{ x }}|{{ x is defined }}|{{ x is undefined }}|{{ not x }}",
     "{}",
     "|False|True|True"},
    {"{{ none }} {{ True }} {{ false }} {{ {'a': 1, 'b': [none, 'q\\'s']} }}",
     "{}",
     "None True False {'a': 1, 'b': [None, \"q's\"]}"},
    {"{% if a %}A{% elif b %}B{% else %}C{% endif %}",
     "{\"a\": 0, \"b\": \"x\"}",
     "B"},
    {"{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }} {% endfor %}",
     "{\"xs\": [\"a\", \"b\", \"c\"]}",
     "10TrueFalse33 21FalseFalse32 32FalseTrue31 "},
    {"{% for x in [] %}x{% else %}empty{% endfor %}",
     "{}",
     "empty"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
     "{\"d\": {\"z\": 1, \"a\": 2}}",
     "z=1;a=2;"},
    {"{% for x in xs if x > 1 %}{{ x }}{{ loop.index }},{% endfor %}",
     "{\"xs\": [1, 2, 3]}",
     "21,32,"},
    {"{% for x in xs | reverse %}{{ x }}{% endfor %}",
     "{\"xs\": [1, 2, 3]}",
     "321"},
    {"{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     "{\"xs\": [1, 2, 3, 4, 5]}",
     "13"},
    {"{% set x = 1 %}{% for i in [1, 2] %}{% set x = i * 10 %}{{ x }}{% endfor %}{{ x }}",
     "{}",
     "10201"},
    {"{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
     "{}",
     "6"},
    {"{% set t %}in {{ 'block' }}{% endset %}[{{ t }}]",
     "{}",
     "[in block]"},
    {"{% macro greet(who, punct='!') %}Hi {{ who }}{{ punct }}{% endmacro %}{{ greet('Ada') }} {{ greet('Bob', punct='?') }}",
     "{}",
     "Hi Ada! Hi Bob?"},
    {"{{ s[1:3] }} {{ s[::-1] }} {{ s[-2:] }} {{ xs[1:] }} {{ xs[::2] }} {{ xs[-1] }}",
     "{\"s\": \"héllo\", \"xs\": [1, 2, 3, 4]}",
     "él olléh lo [2, 3, 4] [1, 3] 4"},
    {"{{ 'a' in 'cat' }} {{ 'b' not in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in d }} {{ 1 < 2 < 3 }} {{ 'a' < 'b' }}",
     "{\"d\": {\"k\": 1}}",
     "True True True True True True"},
    {"{{ 'y' if c else 'n' }} {{ 'y' if not c else 'n' }}|{{ 'only' if c }}|",
     "{\"c\": true}",
     "y n|only|"},
    {"{{ a and b }} {{ a or b }} {{ none or 'd' }} {{ 0 and 1 }}",
     "{\"a\": \"A\", \"b\": \"\"}",
     " A d 0"},
    {"{{ x is none }} {{ x is string }} {{ d is mapping }} {{ s is iterable }} {{ 3 is number }} {{ 3 is integer }} {{ 3.5 is float }} {{ true is boolean }} {{ false is false }} {{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 'ab' is lower }} {{ 1 is eq 1 }}",
     "{\"x\": null, \"d\": {}, \"s\": \"str\"}",
     "True False True True True True True True True True True True True True"},
    {"{{ '  pad \\n' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ [1,2,3] | length }}|{{ 'héllo' | length }}|{{ 'Hi' | upper }}{{ 'Hi' | lower }}|{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}",
     "{}",
     "pad|hi|3|5|HIhi|Hello World|Hello"},
    {"{{ xs | first }} {{ xs | last }} {{ xs | join(', ') }} {{ 'aXbX' | replace('X', '-') }} {{ y | default('dflt') }} {{ '' | default('e', true) }} {{ 42 | string }}",
     "{\"xs\": [\"a\", \"b\", \"c\"]}",
     "a c a, b, c a-b- dflt e 42"},
    {"{{ d | items | list }} {{ 'ab' | list }} {{ '12' | int + 1 }} {{ 'x' | int }} {{ '2.5' | float }} {{ -3 | abs }} {{ 'raw' | safe }}",
     "{\"d\": {\"a\": 1}}",
     "[('a', 1)] ['a', 'b'] 13 0 2.5 3 raw"},
    {"{{ users | map(attribute='name') | join(',') }} {{ users | selectattr('admin') | map(attribute='name') | list }} {{ users | rejectattr('admin') | list | length }} {{ [1, 0, 2] | select | list }} {{ ['A', 'b'] | map('lower') | list }}",
     "{\"users\": [{\"name\": \"ada\", \"admin\": true}, {\"name\": \"bob\", \"admin\": false}]}",
     "ada,bob ['ada'] 1 [1, 2] ['a', 'b']"},
    {"{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ 'é\"\\n' | tojson }}|{{ [] | tojson(indent=4) }}",
     "{\"v\": {\"a\": [1, 2.5, null, true], \"b\": {\"c\": \"ü\"}}}",
     "{\"a\": [1, 2.5, null, true], \"b\": {\"c\": \"ü\"}}|{\n  \"a\": [\n    1,\n    2.5,\n    null,\n    true\n  ],\n  \"b\": {\n    \"c\": \"ü\"\n  }\n}|\"é\\\"\\n\"|[]"},
    {"{{ ' a b  c '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ '  x '.strip() }}|{{ 'xxyx'.lstrip('x') }}|{{ 'yxx'.rstrip('x') }}|{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'Ab'.upper() }}{{ 'Ab'.lower() }} {{ 'a-b-c'.replace('-', '+', 1) }}",
     "{}",
     "['a', 'b', 'c'] ['a', 'b', '', 'c'] ['a', 'b,c'] x|yx|y|True True ABab a+b-c"},
    {"{{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('z', 'none!') }} {{ d.get('z') }} {{ d.a }} {{ d['a'] }}",
     "{\"d\": {\"a\": 1, \"b\": 2}}",
     "['a', 'b'] [1, 2] 1 none! None 1 1"},
    {"{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ dict(a=1) }}",
     "{}",
     "[0, 1, 2] [1, 3, 5] {'a': 1}"},
    {"{{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%d %A') }}",
     "{}",
     "05 Sep 2024 2024-09-05 Thursday"},
    {"{# comment #}a{#- trimmed -#}  b",
     "{}",
     "ab"},
    {"line1\n    {% if true %}\n    inside\n    {% endif %}\nline2\n",
     "{}",
     "line1\n    inside\nline2"},
    {"a  {{- ' b ' -}}  c\n{%- if true %} d {% endif -%}\n e",
     "{}",
     "a b c d e"},
    {"  {%+ if true %}kept{% endif %}\n{% if true +%}\nno-trim{% endif %}",
     "{}",
     "  kept\nno-trim"},
    {"{{ \"escapes: \\t|\\u00e9|\\x41|\\\\\" }}",
     "{}",
     "escapes: \t|é|A|\\"},
    {"{{ 'adj' 'acent' }} {{ 1_000 }} {{ x.0 }}",
     "{\"x\": [\"first\"]}",
     "adjacent 1000 first"},
    {"{{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1} }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'b' }} {{ 2 >= 2 }} {{ 3 <= 2 }}",
     "{}",
     "True True True True True True False"},
    {"{{ messages[0].content }}{{ messages[0]['role'] }}",
     "{\"messages\": [{\"role\": \"user\", \"content\": \"c\"}]}",
     "cuser"},
    {"{{ -x | abs }} {{ not true or true }} {{ (1 + 2) | string }} {{ (1, 'b') }} {{ d.items() | first }}",
     "{\"x\": 5, \"d\": {\"k\": \"v\"}}",
     "5 True 3 (1, 'b') ('k', 'v')"},
};

std::tm fixed_date() {  // 2024-09-05 12:00, a Thursday
    std::tm tm{};
    tm.tm_year = 124;
    tm.tm_mon = 8;
    tm.tm_mday = 5;
    tm.tm_hour = 12;
    tm.tm_wday = 4;
    tm.tm_yday = 248;
    return tm;
}

std::string render(const std::string& source, const std::string& context = "{}") {
    RenderOptions options;
    options.now = fixed_date;
    return Template(source).render(value_from_json(context).dict(), options);
}

}  // namespace

TEST(JinjaRender, MatchesJinja2ForEachConstruct) {
    for (const Case& c : kCases) {
        SCOPED_TRACE(c.source);
        try {
            EXPECT_EQ(render(c.source, c.context), c.expected);
        } catch (const Error& e) {
            ADD_FAILURE() << "threw: " << e.what();
        }
    }
}

TEST(JinjaRender, DropsOneTrailingNewlineAndNormalisesNewlines) {
    EXPECT_EQ(render("a\n"), "a");
    EXPECT_EQ(render("a\n\n"), "a\n");
    EXPECT_EQ(render("a\r\nb\rc"), "a\nb\nc");
}

TEST(JinjaRender, ValuesKeepInsertionOrderAndPythonFormatting) {
    EXPECT_EQ(render("{{ d }}", R"({"d": {"z": 1, "a": [1.0, "x"], "m": null}})"), "{'z': 1, 'a': [1.0, 'x'], 'm': None}");
    EXPECT_EQ(render("{{ d | tojson }}", R"({"d": {"z": 1e-7, "a": 123456789012345678}})"),
              R"({"z": 1e-07, "a": 123456789012345678})");
    EXPECT_EQ(render("{{ '\x01' | tojson }}"), "\"\\u0001\"");
}

TEST(JinjaRender, StrftimeNowDefaultsToTheClock) {
    char year[8];
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    std::strftime(year, sizeof year, "%Y", &tm);
    EXPECT_EQ(Template("{{ strftime_now('%Y') }}").render({}), year);
}
