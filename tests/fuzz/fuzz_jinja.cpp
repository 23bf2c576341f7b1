// libFuzzer target for the Jinja interpreter of chat templates (src/jinja): arbitrary bytes as a
// template, parsed and rendered with a chat's variables (messages with a tool call and a tool
// result, add_generation_prompt, bos/eos tokens, tools). tessel::Error is the only allowed
// failure (malformed, unsupported, raise_exception, the render limits, kept small here so no
// input runs long); rendering the parsed template twice must give the same text.
//
// Input: byte 0 holds options (bit 0: add_generation_prompt, bit 1: a tools list), the rest is
// the template.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "jinja/template.hpp"
#include "tessel/errors.hpp"

namespace {

using namespace tessel;

constexpr const char* kMessages = R"([
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Weather in Paris? {{x}} é 世界"},
  {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
  {"role": "tool", "content": "{\"temperature\": 21.5}"},
  {"role": "assistant", "content": "<think>warm</think>\n21.5 degrees."}
])";
constexpr const char* kTools = R"([{"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])";

std::tm fixed_date() {
    std::tm tm{};
    tm.tm_year = 124;
    tm.tm_mon = 8;
    tm.tm_mday = 5;
    tm.tm_wday = 4;
    return tm;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t options = data[0];
    const std::string_view source(reinterpret_cast<const char*>(data + 1), size - 1);
    static const jinja::Value messages = jinja::value_from_json(kMessages);
    static const jinja::Value tools = jinja::value_from_json(kTools);
    jinja::Dict context;
    context.set("messages", messages);
    context.set("add_generation_prompt", jinja::Value((options & 1) != 0));
    context.set("bos_token", jinja::Value("<s>"));
    context.set("eos_token", jinja::Value("</s>"));
    if (options & 2) context.set("tools", tools);
    jinja::RenderOptions limits;
    limits.now = fixed_date;
    limits.max_output = size_t{1} << 20;
    limits.max_steps = 100'000;
    try {
        const jinja::Template tmpl(source);
        const std::string first = tmpl.render(context, limits);
        if (tmpl.render(context, limits) != first) {
            std::fprintf(stderr, "fuzz_jinja: two renders of one template differ\n");
            std::abort();
        }
    } catch (const Error&) {
        // malformed, unsupported or refused: the expected outcome of most inputs
    }
    return 0;
}
