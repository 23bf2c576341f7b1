// How `tessel run` and `tessel chat` read a prompt, as llama.cpp users expect: chat formatting by
// default for a model with a chat template, raw text for a prompt that already holds its markup
// or with --no-chat, special-token text parsed, escapes decoded, -r stops, -sp prints control
// tokens. On the default model (SmolLM2-135M-Instruct, a ChatML template), greedy.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "support/smollm2.hpp"

namespace tessel {
namespace {

using test::CliResult;
using test::run_tessel;

class PromptCli : public ::testing::Test {
protected:
    void SetUp() override { TESSEL_REQUIRE_SMOLLM2(); }
    static std::string model() { return test::smollm2_path().string(); }
    /// `tessel run -m MODEL ARGS... --temp 0`, expected to succeed.
    static CliResult run(std::vector<std::string> args) {
        args.insert(args.begin(), {"run", "-m", model()});
        args.insert(args.end(), {"--temp", "0"});
        CliResult r = run_tessel(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r;
    }
    /// The "prompt N tokens" and "generated N tokens" counts of a run's report.
    static std::pair<int, int> counts(const CliResult& r) {
        std::smatch m;
        if (!std::regex_search(r.err, m, std::regex("prompt (\\d+) tokens.*generated (\\d+) tokens"))) {
            ADD_FAILURE() << "no token counts in: " << r.err;
            return {-1, -1};
        }
        return {std::stoi(m[1]), std::stoi(m[2])};
    }
    /// `tessel tokenize --ids` of `text` (no BOS: SmolLM2 adds none) as "[a, b, ...]".
    static std::string ids(const std::string& text, const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args{"tokenize", "-m", model(), "-p", text, "--ids"};
        args.insert(args.end(), extra.begin(), extra.end());
        const CliResult r = run_tessel(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r.out;
    }
};

// llama.cpp's llama-tokenize gives [1, 4093] for "<|im_start|>user" (issue 33): special-token text
// is parsed by default; --no-parse-special reads it as plain text.
TEST_F(PromptCli, TokenizeParsesSpecialTokenTextByDefault) {
    EXPECT_EQ(ids("<|im_start|>user"), "[1, 4093]\n");
    const std::string plain = ids("<|im_start|>user", {"--no-parse-special"});
    EXPECT_NE(plain, "[1, 4093]\n");
    EXPECT_EQ(plain.find("[1, "), std::string::npos) << plain;
}

// The new user's dragon prompt: chat by default, so the instruct model answers (in raw mode its
// first token ends the output, and stderr says so and names the mode).
TEST_F(PromptCli, ChatIsTheDefaultForAModelWithATemplate) {
    const std::string prompt = "Write a long story about a dragon.";
    const CliResult chat = run({"-p", prompt, "-n", "24"});
    EXPECT_EQ(counts(chat).second, 24) << chat.err;
    EXPECT_NE(chat.out.find("dragon"), std::string::npos) << chat.out;
    EXPECT_EQ(run({"-p", prompt, "-n", "24", "--chat"}).out, chat.out);  // --chat is what the default did
    EXPECT_EQ(run({"-p", prompt, "-n", "24", "-cnv"}).out, chat.out);

    const CliResult raw = run({"-p", prompt, "-n", "24", "--no-chat"});
    EXPECT_EQ(counts(raw), std::make_pair(8, 0)) << raw.err;
    EXPECT_NE(raw.err.find("ended its output at its first token"), std::string::npos) << raw.err;
    EXPECT_NE(raw.err.find("sent as raw text"), std::string::npos) << raw.err;
    EXPECT_EQ(run({"-p", prompt, "-n", "24", "-no-cnv"}).err.find("generated 0 tokens") != std::string::npos, true);
}

// A prompt written in the template's own markup goes in as written: the same tokens as the
// rendered conversation with --no-chat, hence the same answer.
TEST_F(PromptCli, PromptWithTheTemplatesMarkupIsSentRaw) {
    const std::string chatml = "<|im_start|>user\\nWrite a haiku about autumn leaves.<|im_end|>\\n<|im_start|>assistant\\n";
    const CliResult r = run({"-p", chatml, "-n", "16"});
    EXPECT_NE(r.err.find("holds the chat template's special tokens"), std::string::npos) << r.err;
    EXPECT_EQ(counts(r), std::make_pair(17, 16)) << r.err;  // 17 = 1 + 4093 "user" + ... : markup parsed
    EXPECT_EQ(r.out.find("<|im"), std::string::npos) << r.out;
    const CliResult forced = run({"-p", chatml, "-n", "16", "--no-chat"});
    EXPECT_EQ(forced.out, r.out);
    // Without special parsing the markup is plain text: more prompt tokens, another answer.
    const CliResult plain = run({"-p", chatml, "-n", "16", "--no-chat", "--no-parse-special"});
    EXPECT_GT(counts(plain).first, 17) << plain.err;
}

// --ignore-eos: the raw dragon prompt, which ends at its first token, now runs to -n.
TEST_F(PromptCli, IgnoreEosRunsToTheTokenLimit) {
    const std::vector<std::string> base{"-p", "Write a long story about a dragon.", "--no-chat", "-n", "12"};
    EXPECT_EQ(counts(run(base)).second, 0);
    std::vector<std::string> ignore = base;
    ignore.push_back("--ignore-eos");
    EXPECT_EQ(counts(run(ignore)).second, 12);
}

// -e (the default) decodes \n in -p; --no-escape keeps the backslash.
TEST_F(PromptCli, EscapesAreDecodedByDefault) {
    const std::string newline_ids = ids("one\ntwo");
    const std::string backslash_ids = ids("one\\ntwo");
    ASSERT_NE(newline_ids, backslash_ids);
    const auto n_tokens = [](const std::string& list) { return static_cast<int>(std::count(list.begin(), list.end(), ',')) + 1; };
    EXPECT_EQ(counts(run({"-p", "one\\ntwo", "--no-chat", "-n", "0"})).first, n_tokens(newline_ids));
    EXPECT_EQ(counts(run({"-p", "one\\ntwo", "--no-chat", "-n", "0", "-e"})).first, n_tokens(newline_ids));
    EXPECT_EQ(counts(run({"-p", "one\\ntwo", "--no-chat", "-n", "0", "--no-escape"})).first, n_tokens(backslash_ids));
}

// -r stops at the first output that ends with the text; the output is the unstopped one cut there.
TEST_F(PromptCli, ReversePromptStopsGeneration) {
    const std::vector<std::string> base{"-p", "Count to ten: one, two,", "--no-chat", "-n", "30"};
    const CliResult full = run(base);
    const size_t five = full.out.find("five");
    ASSERT_NE(five, std::string::npos) << full.out;
    std::vector<std::string> stopped_args = base;
    stopped_args.insert(stopped_args.end(), {"-r", "five", "-r", "never-said"});
    const CliResult stopped = run(stopped_args);
    EXPECT_EQ(stopped.out, full.out.substr(0, five + 4) + "\n");
}

// -sp prints control tokens the model writes (here the opening of the assistant turn).
TEST_F(PromptCli, SpecialPrintsControlTokens) {
    const std::vector<std::string> base{"-p", "<|im_start|>user\\nHi<|im_end|>\\n", "-n", "4"};
    std::vector<std::string> with_sp = base;
    with_sp.push_back("-sp");
    EXPECT_TRUE(run(with_sp).out.starts_with("<|im_start|>assistant\n")) << run(with_sp).out;
    EXPECT_TRUE(run(base).out.starts_with("assistant\n")) << run(base).out;
}

// Flags that contradict each other are a usage error (exit 2) naming them.
TEST_F(PromptCli, NoChatExcludesChatFlags) {
    for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
             {"--no-chat", "--chat"}, {"--no-chat", "-sys", "Be brief."}, {"-no-cnv", "--chat-template", "chatml"}}) {
        std::vector<std::string> args{"run", "-m", model(), "-p", "hi"};
        args.insert(args.end(), extra.begin(), extra.end());
        const CliResult r = run_tessel(args);
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_NE(r.err.find("excludes"), std::string::npos) << r.err;
    }
}

// tessel chat: --in-prefix / --in-suffix wrap each user line (the prompt grows by their tokens).
TEST_F(PromptCli, ChatInPrefixAndSuffixWrapUserLines) {
    const auto prompt_tokens = [&](const std::vector<std::string>& extra) {
        std::vector<std::string> args{"chat", "-m", model(), "-n", "1", "--temp", "0"};
        args.insert(args.end(), extra.begin(), extra.end());
        const CliResult r = run_tessel(args, "Hello\n");
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return counts(r).first;
    };
    const int plain = prompt_tokens({});
    EXPECT_EQ(prompt_tokens({"--in-prefix", "Question:", "--in-suffix", "\\nAnswer briefly."}),
              plain + 2 + 4);  // "Question:" = 2 tokens; "\nAnswer briefly." = 4 tokens after escape decoding
}

}  // namespace
}  // namespace tessel
