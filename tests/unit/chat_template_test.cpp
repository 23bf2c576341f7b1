// Chat formatting (src/runtime/chat_template.hpp): detection of the peer templates by
// fingerprint, name overrides, errors, and rendered text equal to what each Jinja template renders.
//
// How the expected strings were verified: kRendered's rows are printed by
// scripts/check_chat_templates.py, which renders every template in
// $TESSEL_SHARED_DIR/peer-data/chat-templates/ (and SmolLM2-135M-Instruct's
// tokenizer.chat_template, passed with --template) with jinja2 3.1.6 under HF transformers'
// settings, for the conversations below. `--check` on this file re-verifies every row.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/chat_template.hpp"
#include "support/test_paths.hpp"
#include "tessel/errors.hpp"

using namespace tessel;
using namespace tessel::runtime;

namespace {

// The conversations of scripts/check_chat_templates.py (keep them identical).
const std::vector<ChatMessage> kThreeTurns = {
    {"user", "What is 2+2?"},
    {"assistant", " 4. "},
    {"user", "  And 3+3?\n"},
};
const std::vector<ChatMessage> kSystem = {
    {"system", "You answer in one word."},
    {"user", "Capital of France?"},
};

constexpr const char* kSmolLM2System = "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

struct Rendered {
    const char* template_name;  // a file of peer-data/chat-templates, or SmolLM2-135M-Instruct
    const char* conversation;   // three_turns | three_turns_no_gen | system
    const char* expected;
};

// Printed by scripts/check_chat_templates.py --template SmolLM2-135M-Instruct=<its chat_template>.
const Rendered kRendered[] = {
    {"Qwen-Qwen2.5-7B-Instruct.jinja", "three_turns", "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n 4. <|im_end|>\n<|im_start|>user\n  And 3+3?\n<|im_end|>\n<|im_start|>assistant\n"},
    {"Qwen-Qwen2.5-7B-Instruct.jinja", "three_turns_no_gen", "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n 4. <|im_end|>\n<|im_start|>user\n  And 3+3?\n<|im_end|>\n"},
    {"Qwen-Qwen2.5-7B-Instruct.jinja", "system", "<|im_start|>system\nYou answer in one word.<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n"},
    {"Qwen-Qwen3-0.6B.jinja", "three_turns", "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n 4. <|im_end|>\n<|im_start|>user\n  And 3+3?\n<|im_end|>\n<|im_start|>assistant\n"},
    {"Qwen-Qwen3-0.6B.jinja", "three_turns_no_gen", "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n 4. <|im_end|>\n<|im_start|>user\n  And 3+3?\n<|im_end|>\n"},
    {"Qwen-Qwen3-0.6B.jinja", "system", "<|im_start|>system\nYou answer in one word.<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n"},
    {"google-gemma-2-2b-it.jinja", "three_turns", "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4.<end_of_turn>\n<start_of_turn>user\nAnd 3+3?<end_of_turn>\n<start_of_turn>model\n"},
    {"google-gemma-2-2b-it.jinja", "three_turns_no_gen", "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4.<end_of_turn>\n<start_of_turn>user\nAnd 3+3?<end_of_turn>\n"},
    {"google-gemma-2-2b-it.jinja", "system", "<start_of_turn>user\nYou answer in one word.\n\nCapital of France?<end_of_turn>\n<start_of_turn>model\n"},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", "three_turns", "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n4.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnd 3+3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", "three_turns_no_gen", "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n4.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnd 3+3?<|eot_id|>"},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", "system", "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou answer in one word.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nCapital of France?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"microsoft-Phi-3.5-mini-instruct.jinja", "three_turns", "<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n 4. <|end|>\n<|user|>\n  And 3+3?\n<|end|>\n<|assistant|>\n"},
    {"microsoft-Phi-3.5-mini-instruct.jinja", "three_turns_no_gen", "<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n 4. <|end|>\n<|user|>\n  And 3+3?\n<|end|>\n<|endoftext|>"},
    {"microsoft-Phi-3.5-mini-instruct.jinja", "system", "<|system|>\nYou answer in one word.<|end|>\n<|user|>\nCapital of France?<|end|>\n<|assistant|>\n"},
    {"SmolLM2-135M-Instruct", "three_turns", "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n 4. <|im_end|>\n<|im_start|>user\n  And 3+3?\n<|im_end|>\n<|im_start|>assistant\n"},
    {"SmolLM2-135M-Instruct", "three_turns_no_gen", "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n 4. <|im_end|>\n<|im_start|>user\n  And 3+3?\n<|im_end|>\n"},
    {"SmolLM2-135M-Instruct", "system", "<|im_start|>system\nYou answer in one word.<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n"},
};

std::filesystem::path templates_dir() { return test::shared_dir() / "peer-data" / "chat-templates"; }

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << path;
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

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

TEST(ChatTemplate, DetectsEveryPeerTemplate) {
    TESSEL_REQUIRE_SHARED_DIR();
    const std::map<std::string, ChatFormat> expected = {
        {"Qwen-Qwen2.5-7B-Instruct.jinja", ChatFormat::ChatML},
        {"Qwen-Qwen3-0.6B.jinja", ChatFormat::ChatML},
        {"google-gemma-2-2b-it.jinja", ChatFormat::Gemma},
        {"meta-llama-Llama-3.2-3B-Instruct.jinja", ChatFormat::Llama3},
        {"microsoft-Phi-3.5-mini-instruct.jinja", ChatFormat::Phi3},
    };
    std::set<std::string> seen;
    for (const auto& entry : std::filesystem::directory_iterator(templates_dir())) {
        const std::string name = entry.path().filename().string();
        seen.insert(name);
        auto it = expected.find(name);
        ASSERT_NE(it, expected.end()) << "new template file without an expected format: " << name;
        EXPECT_EQ(detect_chat_template(read_text(entry.path())).format, it->second) << name;
    }
    EXPECT_EQ(seen.size(), expected.size()) << "a template file listed here is missing";
}

TEST(ChatTemplate, DetectsDefaultSystemPromptsAndLlamaPreamble) {
    TESSEL_REQUIRE_SHARED_DIR();
    const ChatTemplate qwen25 = detect_chat_template(read_text(templates_dir() / "Qwen-Qwen2.5-7B-Instruct.jinja"));
    EXPECT_EQ(qwen25.default_system, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    EXPECT_FALSE(detect_chat_template(read_text(templates_dir() / "Qwen-Qwen3-0.6B.jinja")).default_system);
    const ChatTemplate llama = detect_chat_template(read_text(templates_dir() / "meta-llama-Llama-3.2-3B-Instruct.jinja"));
    EXPECT_EQ(llama.default_system, "");
    EXPECT_EQ(llama.system_preamble, "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
}

TEST(ChatTemplate, MatchesJinjaRendering) {
    TESSEL_REQUIRE_SHARED_DIR();
    for (const Rendered& r : kRendered) {
        const std::string name = r.template_name;
        const ChatTemplate tmpl = name.ends_with(".jinja")
                                      ? detect_chat_template(read_text(templates_dir() / name))
                                      : ChatTemplate{ChatFormat::ChatML, kSmolLM2System, ""};
        const std::string conversation = r.conversation;
        const auto& messages = conversation == "system" ? kSystem : kThreeTurns;
        ChatOptions options;
        options.add_generation_prompt = conversation != "three_turns_no_gen";
        EXPECT_EQ(format_chat(tmpl, messages, options), r.expected) << name << " / " << conversation;
    }
}

TEST(ChatTemplate, ExtractsChatMLDefaultSystemInBothNewlineSpellings) {
    // SmolLM2's GGUF template writes the newline as a real newline character, Qwen2.5's as \n.
    std::string literal_newline = "{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n";
    literal_newline.append(kSmolLM2System).append("<|im_end|>\n' }}{% endif %}");
    EXPECT_EQ(detect_chat_template(literal_newline).default_system, kSmolLM2System);
    EXPECT_EQ(detect_chat_template("{{ '<|im_start|>system\\nBe brief.<|im_end|>\\n' }}").default_system, "Be brief.");
    // The system text comes from the conversation: no default.
    EXPECT_FALSE(detect_chat_template("{{ '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>' }}").default_system);
}

TEST(ChatTemplate, NamesOverrideDetection) {
    for (const char* name : {"chatml", "llama3", "gemma", "phi3"}) {
        const ChatTemplate t = chat_template_from_name(name);
        EXPECT_STREQ(chat_format_name(t.format), name);
        EXPECT_FALSE(t.default_system);
        EXPECT_EQ(t.system_preamble, "");
    }
    expect_error([] { chat_template_from_name("vicuna"); }, ErrorCode::InvalidArgument,
                 "unknown chat template 'vicuna', known: chatml, llama3, gemma, phi3");
}

TEST(ChatTemplate, UnknownTemplateIsAnError) {
    expect_error([] { detect_chat_template("{{ messages[0]['content'] }} ### Response:"); }, ErrorCode::Unsupported,
                 "unknown chat template (tokenizer.chat_template matches no known format), known: chatml, llama3, "
                 "gemma, phi3; choose one with --chat-template NAME");
    expect_error([] { detect_chat_template(""); }, ErrorCode::Unsupported,
                 "unknown chat template (the model has no tokenizer.chat_template), known: chatml, llama3, gemma, "
                 "phi3; choose one with --chat-template NAME");
    // <|assistant|> alone (no <|end|>) is not Phi-3.
    EXPECT_THROW(detect_chat_template("<|assistant|>"), Error);
}

TEST(ChatTemplate, EndOfTurnAndBosText) {
    EXPECT_EQ(chat_end_of_turn(ChatFormat::ChatML), "<|im_end|>");
    EXPECT_EQ(chat_end_of_turn(ChatFormat::Llama3), "<|eot_id|>");
    EXPECT_EQ(chat_end_of_turn(ChatFormat::Gemma), "<end_of_turn>");
    EXPECT_EQ(chat_end_of_turn(ChatFormat::Phi3), "<|end|>");
    for (const char* name : {"chatml", "llama3", "gemma", "phi3"}) {
        const ChatTemplate t = chat_template_from_name(name);
        ChatOptions with_bos;
        with_bos.add_bos = true;
        EXPECT_EQ(format_chat(t, kThreeTurns, with_bos), std::string(chat_bos_text(t.format)) + format_chat(t, kThreeTurns))
            << name;
    }
    ChatOptions with_bos;
    with_bos.add_bos = true;
    EXPECT_EQ(format_chat(chat_template_from_name("llama3"), kSystem, with_bos),
              "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou answer in one word.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nCapital of France?<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, GemmaFoldsEverySystemMessage) {
    const ChatTemplate gemma = chat_template_from_name("gemma");
    const std::vector<ChatMessage> two_systems = {{"system", "A."}, {"system", " B. "}, {"user", "Q?"}};
    EXPECT_EQ(format_chat(gemma, two_systems), "<start_of_turn>user\nA.\n\nB.\n\nQ?<end_of_turn>\n<start_of_turn>model\n");
    const std::vector<ChatMessage> system_only = {{"system", "Only rules."}};
    EXPECT_EQ(format_chat(gemma, system_only), "<start_of_turn>user\nOnly rules.<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplate, RejectsUnknownRolesAndEmptyChats) {
    const ChatTemplate chatml = chat_template_from_name("chatml");
    const std::vector<ChatMessage> tool = {{"user", "hi"}, {"tool", "{}"}};
    expect_error([&] { format_chat(chatml, tool); }, ErrorCode::InvalidArgument,
                 "chat: message 1 has role 'tool'; supported roles: system, user, assistant");
    expect_error([&] { format_chat(chatml, {}); }, ErrorCode::InvalidArgument, "chat: no messages to format");
}
