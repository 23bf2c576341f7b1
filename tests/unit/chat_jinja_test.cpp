// apply_chat_template (include/tessel/engine.hpp) on Jinja templates: the peer templates render
// the text jinja2 renders (the rows of chat_template_test.cpp, checked by
// scripts/check_chat_templates.py), BOS is not doubled, Gemma's missing system role is folded,
// an unsupported construct falls back to the built-in format with one warning, and errors.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_paths.hpp"
#include "tessel/chat.hpp"
#include "tessel/engine.hpp"
#include "tessel/log.hpp"

using namespace tessel;

namespace {

std::string peer_template(const std::string& name) {
    const auto path = test::shared_dir() / "peer-data" / "chat-templates" / name;
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << path;
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const std::vector<ChatMessage> kSystem = {{"system", "You answer in one word."}, {"user", "Capital of France?"}};
const std::vector<ChatMessage> kThreeTurns = {{"user", "What is 2+2?"}, {"assistant", " 4. "}, {"user", "  And 3+3?\n"}};

void expect_error(const std::function<void()>& fn, ErrorCode code, const std::string& message) {
    try {
        fn();
        ADD_FAILURE() << "expected an error: " << message;
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), code);
        EXPECT_EQ(std::string(e.what()), message);
    }
}

}  // namespace

TEST(ChatJinja, PeerTemplatesRenderAsJinja2) {
    TESSEL_REQUIRE_SHARED_DIR();
    // chat_template_test.cpp's kRendered rows (jinja2 3.1.6, bos_token "", eos_token <|endoftext|>).
    ChatTemplateOptions o;
    o.eos_token = "<|endoftext|>";
    EXPECT_EQ(apply_chat_template(peer_template("Qwen-Qwen2.5-7B-Instruct.jinja"), kThreeTurns, o),
              "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
              "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n 4. <|im_end|>\n<|im_start|>user\n"
              "  And 3+3?\n<|im_end|>\n<|im_start|>assistant\n");
    o.add_generation_prompt = false;
    EXPECT_EQ(apply_chat_template(peer_template("microsoft-Phi-3.5-mini-instruct.jinja"), kThreeTurns, o),
              "<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n 4. <|end|>\n<|user|>\n  And 3+3?\n<|end|>\n<|endoftext|>");
    // Llama 3.2: today's date from strftime_now, as HF renders it.
    o.add_generation_prompt = true;
    char today[32];
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    std::strftime(today, sizeof today, "%d %b %Y", &tm);
    EXPECT_EQ(apply_chat_template(peer_template("meta-llama-Llama-3.2-3B-Instruct.jinja"), kSystem, o),
              std::string("<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: ") +
                  today +
                  "\n\nYou answer in one word.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nCapital of France?"
                  "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatJinja, GemmaSystemMessagesAreFoldedIntoTheNextUserTurn) {
    TESSEL_REQUIRE_SHARED_DIR();
    const std::string gemma = peer_template("google-gemma-2-2b-it.jinja");
    // The template raises "System role not supported"; the row "system" of chat_template_test.cpp.
    EXPECT_EQ(apply_chat_template(gemma, kSystem, true),
              "<start_of_turn>user\nYou answer in one word.\n\nCapital of France?<end_of_turn>\n<start_of_turn>model\n");
    // Without a system message the template's own error stands.
    const std::vector<ChatMessage> two_users = {{"user", "a"}, {"user", "b"}};
    expect_error([&] { apply_chat_template(gemma, two_users, true); }, ErrorCode::InvalidArgument,
                 "Conversation roles must alternate user/assistant/user/assistant/...");
}

TEST(ChatJinja, LeadingBosIsDroppedWhenTheTokenizerAddsIt) {
    const std::string tmpl = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ eos_token }}";
    const std::vector<ChatMessage> hi = {{"user", "hi"}};
    ChatTemplateOptions o;
    o.bos_token = "<s>";
    o.eos_token = "</s>";
    EXPECT_EQ(apply_chat_template(tmpl, hi, o), "<s>[user]hi</s>");
    o.drop_leading_bos = true;
    EXPECT_EQ(apply_chat_template(tmpl, hi, o), "[user]hi</s>");
    // Only a leading BOS goes.
    EXPECT_EQ(apply_chat_template("x{{ bos_token }}", hi, o), "x<s>");
    // The shorthand renders bos_token and eos_token as "".
    EXPECT_EQ(apply_chat_template(tmpl, hi, true), "[user]hi");
}

TEST(ChatJinja, JinjaTemplatesTakeAnyRole) {
    const std::vector<ChatMessage> tool = {{"user", "hi"}, {"tool", "{\"t\": 1}"}};
    EXPECT_EQ(apply_chat_template("{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}", tool, false),
              "user:hi;tool:{\"t\": 1};");
    // A built-in name keeps its three roles.
    expect_error([&] { apply_chat_template("chatml", tool, true); }, ErrorCode::InvalidArgument,
                 "chat: message 1 has role 'tool'; supported roles: system, user, assistant");
}

TEST(ChatJinja, UnsupportedConstructFallsBackToTheBuiltInFormatWithOneWarning) {
    std::vector<std::string> warnings;
    set_log_callback([&](LogLevel level, std::string_view text) {
        if (level == LogLevel::Warn) warnings.emplace_back(text);
    });
    const std::vector<ChatMessage> hi = {{"user", "hi"}};
    const std::string chatml_like = "{% include 'base.jinja' %}<|im_start|>";
    EXPECT_EQ(apply_chat_template(chatml_like, hi, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    // Found while rendering: an unknown filter.
    EXPECT_EQ(apply_chat_template("{{ messages | shuffle }}<|start_header_id|>", hi, true),
              "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(chat_template_format(chatml_like), "chatml");
    set_log_callback(nullptr);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0],
              "chat template: template:1:1: unsupported tag 'include'; rendering the built-in chatml format instead");
    // No fingerprint either: the error says both.
    expect_error([&] { apply_chat_template("{% include 'base.jinja' %}", hi, true); }, ErrorCode::Unsupported,
                 "unknown chat template (tokenizer.chat_template matches no known format), known: chatml, llama3, gemma, "
                 "phi3; choose one with --chat-template NAME (its Jinja: template:1:1: unsupported tag 'include')");
}

TEST(ChatJinja, FormatNamesAndErrors) {
    EXPECT_EQ(chat_template_format("phi3"), "phi3");
    EXPECT_EQ(chat_template_format("{{ messages[0].content }}"), "jinja");
    expect_error([] { chat_template_format(""); }, ErrorCode::Unsupported,
                 "unknown chat template (the model has no tokenizer.chat_template), known: chatml, llama3, gemma, phi3; "
                 "choose one with --chat-template NAME");
    const std::vector<ChatMessage> hi = {{"user", "hi"}};
    expect_error([&] { apply_chat_template("{{ not a known template }}", hi, true); }, ErrorCode::InvalidArgument,
                 "template:1:10: expected end of tag, got 'known'");
    expect_error([&] { apply_chat_template("{{ x }}", {}, true); }, ErrorCode::InvalidArgument, "chat: no messages to format");
}
