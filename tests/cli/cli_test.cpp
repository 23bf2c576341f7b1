// The tessel CLI as a user meets it: bad input to `tessel run` gives one clear line on stderr and
// a non-zero exit (a missing file, a corrupt file, an unknown architecture, a prompt longer than
// the context, an unknown chat template), `tessel chat` keeps the conversation between turns and
// `tessel tokenize` gives llama.cpp's ids for a SentencePiece vocabulary.
// The binary under test is the build's (TESSEL_CLI_PATH). Models: tiny random llamas carrying
// the default model's tokenizer, and the default model itself for the chat test.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "gguf/reader.hpp"
#include "runtime/chat_template.hpp"
#include "common/generate.hpp"
#include "gguf/writer.hpp"
#include "support/smollm2.hpp"
#include "support/test_paths.hpp"
#include "support/tiny_llama.hpp"
#include "tessel/sampling.hpp"

namespace tessel {
namespace {

using test::CliResult;
using test::run_tessel;

/// Expects a failed run that printed exactly one `tessel: error: ...` line matching `what`.
void expect_one_error_line(const CliResult& r, const std::string& what) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_TRUE(lines[0].starts_with("tessel: error: ")) << lines[0];
    EXPECT_TRUE(std::regex_search(lines[0], std::regex(what))) << lines[0] << "\n  expected to match: " << what;
}

class CliErrors : public ::testing::Test {
protected:
    void SetUp() override {
        TESSEL_REQUIRE_SMOLLM2();
        dir_ = test::temp_dir();
    }
    /// A tiny random llama with the default model's tokenizer (and chat template).
    std::string tiny(const std::string& file, test::TinyLlamaOptions opt = {}) {
        opt.vocab_from = test::smollm2_path();
        opt.tied_output = true;
        return test::write_tiny_llama(dir_ / file, opt).string();
    }
    std::filesystem::path dir_;
};

TEST_F(CliErrors, MissingModelFile) {
    const std::string path = (dir_ / "absent.gguf").string();
    expect_one_error_line(run_tessel({"run", "-m", path, "-p", "hi", "-n", "2"}), "absent\\.gguf");
}

TEST_F(CliErrors, CorruptModelFile) {
    const std::string good = tiny("good.gguf");
    const std::string bytes = test::read_all(good);
    const std::string bad = (dir_ / "truncated.gguf").string();
    std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    expect_one_error_line(run_tessel({"run", "-m", bad, "-p", "hi", "-n", "2"}), "truncated\\.gguf");
    // The same file intact runs: the error above is about the damage, not the model.
    const CliResult ok = run_tessel({"run", "-m", good, "-p", "hi", "-n", "2", "--temp", "0"});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(CliErrors, UnknownArchitecture) {
    test::TinyLlamaOptions opt;
    opt.arch = "mamba9";
    expect_one_error_line(run_tessel({"run", "-m", tiny("mamba9.gguf", opt), "-p", "hi"}), "mamba9");
}

TEST_F(CliErrors, PromptLongerThanContext) {
    std::string prompt;
    for (int i = 0; i < 40; ++i) prompt += "The quick brown fox jumps over the lazy dog. ";
    expect_one_error_line(run_tessel({"run", "-m", tiny("m.gguf"), "-c", "64", "-p", prompt}), "context");
}

TEST_F(CliErrors, PromptFileThatIsNoFile) {
    expect_one_error_line(run_tessel({"run", "-m", tiny("m.gguf"), "-f", dir_.string()}), "not a regular file");
    expect_one_error_line(run_tessel({"run", "-m", tiny("m.gguf"), "-f", (dir_ / "absent.txt").string()}),
                          "absent\\.txt: cannot read");
}

// An empty prompt is an argument error (exit 2), named before the model is loaded: a missing
// model file would be reported otherwise.
TEST_F(CliErrors, EmptyPromptIsAnArgumentError) {
    const std::string absent = (dir_ / "absent.gguf").string();
    const std::string empty = (dir_ / "empty.txt").string();
    std::ofstream(empty).flush();
    for (const auto& [args, what] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"run", "-m", absent, "-p", ""}, "-p: the prompt is empty"},
             {{"run", "-m", absent, "-f", empty}, "-f: the file '" + empty + "' is empty"}}) {
        const CliResult r = run_tessel(args);
        EXPECT_EQ(r.exit_code, 2) << r.err;
        const auto lines = r.err_lines();
        ASSERT_EQ(lines.size(), 1u) << r.err;
        EXPECT_NE(lines[0].find(what), std::string::npos) << lines[0];
    }
}

// Sampling values outside the sampler's domain are flag errors: exit 2, one line naming the flag.
TEST_F(CliErrors, BadSamplingValueNamesTheFlag) {
    const std::string model = tiny("m.gguf");
    for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
             {"--top-k", "-5"}, {"--top-p", "2"}, {"--temp", "nan"}, {"--repeat-penalty", "0"}, {"--seed", "-2"},
             {"--repeat-last-n", "-2"}, {"--typical", "1.5"}, {"--top-nsigma", "inf"}, {"--xtc-probability", "-0.1"},
             {"--xtc-threshold", "2"}, {"--dry-multiplier", "-1"}, {"--dry-base", "0.9"}, {"--dry-allowed-length", "-1"},
             {"--dry-penalty-last-n", "-2"}, {"--dry-sequence-breaker", ""}, {"--mirostat", "3"}, {"--mirostat-lr", "nan"},
             {"--mirostat-ent", "-1"}, {"--logit-bias", "15043"}, {"--logit-bias", "15043+inf"}, {"--logit-bias", "x-1"},
             {"--logit-bias", "15043*2"}, {"--logit-bias", "49152+1"}, {"--samplers", "top_k;foo"}, {"--sampling-seq", "kq"}}) {
        const CliResult r = run_tessel({"run", "-m", model, "-p", "hi", flag, value});
        EXPECT_EQ(r.exit_code, 2) << flag << " " << value << ": " << r.err;
        const auto lines = r.err_lines();
        ASSERT_EQ(lines.size(), 1u) << r.err;
        EXPECT_NE(lines[0].find(flag), std::string::npos) << lines[0];
    }
}

// An empty or invalid TESSEL_* value is a setting error like a bad flag: exit 2, one line naming
// the variable, whichever layer reads it (CLI start, model load, GGUF reader, packed kernels).
TEST_F(CliErrors, BadEnvironmentValueNamesTheVariable) {
    const std::string model = tiny("m.gguf");
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"TESSEL_CPU_ISA", ""}, {"TESSEL_CPU_ISA", "avx9"}, {"TESSEL_CPU_PACKED", ""}, {"TESSEL_CPU_PACKED", "2"},
             {"TESSEL_CPU_CHUNK_MULT", "0"}, {"TESSEL_NPU_TIMEOUT_MS", "5"}, {"TESSEL_NPU_LINK", ""},
             {"TESSEL_GGUF_MAX_METADATA", "0"}, {"TESSEL_GGUF_MAX_METADATA", "12k"}, {"TESSEL_GGUF_MAX_METADATA", ""},
             {"TESSEL_NPU_DEVICE_EXE", "/nonexistent/tessel"}}) {
        test::CliOptions o;
        o.env = {name + "=" + value};
        const CliResult r = run_tessel({"run", "-m", model, "-p", "hi", "-n", "2", "--temp", "0"}, o);
        EXPECT_EQ(r.exit_code, 2) << name << "='" << value << "': " << r.err;
        const auto lines = r.err_lines();
        ASSERT_EQ(lines.size(), 1u) << name << "='" << value << "': " << r.err;
        EXPECT_TRUE(lines[0].starts_with("tessel: error: " + name)) << lines[0];
    }
    test::CliOptions o;
    o.env = {"TESSEL_MODEL="};  // without -m
    const CliResult r = run_tessel({"run", "-p", "hi", "-n", "2"}, o);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("tessel: error: TESSEL_MODEL is set but empty"), std::string::npos) << r.err;
}

// A context too large for the memory the process may take is refused before it is allocated,
// naming the bytes and the limit; under the same 4 GiB address-space limit a context that fits
// runs. The limit (prlimit --as) makes the result independent of the host's memory; sanitizer
// runtimes reserve terabytes of address space, so the check runs in builds without them.
TEST_F(CliErrors, ContextTooLargeForMemoryIsRefused) {
    if (test::kSanitized) GTEST_SKIP() << "RLIMIT_AS cannot be set under a sanitizer's shadow memory";
    test::CliOptions o;
    o.wrapper = {"prlimit", "--as=4294967296", "--"};
    const std::string model = test::smollm2_path().string();
    const CliResult big = run_tessel({"run", "-m", model, "-c", "1048576", "-p", "hi", "-n", "2"}, o);
    EXPECT_EQ(big.exit_code, 1) << big.err;
    EXPECT_NE(big.err.find("tessel: warning: -c 1048576 is more than the model's training context (8192 tokens)"), std::string::npos) << big.err;
    EXPECT_TRUE(std::regex_search(big.err, std::regex("tessel: error: a context of 1048576 tokens needs 2[0-9.]+ GiB \\(KV cache "
                                                      "22\\.5 GiB, compute buffers about [0-9.]+ [MG]iB\\), but [0-9.]+ GiB are "
                                                      "available \\(RLIMIT_AS\\)")))
        << big.err;
    EXPECT_LT(big.max_rss_kib, 1 << 20) << "KiB: refused before allocating";
    const CliResult fits = run_tessel({"run", "-m", model, "-c", "8192", "-p", "hi", "-n", "2", "--temp", "0"}, o);
    EXPECT_EQ(fits.exit_code, 0) << fits.err;
    const CliResult bench = run_tessel({"bench", "-m", model, "-p", "8,300000", "-n", "0", "-r", "1"}, o);
    EXPECT_EQ(bench.exit_code, 1) << bench.err;
    EXPECT_NE(bench.err.find("tessel: error: pp300000: a context of 300000 tokens needs"), std::string::npos) << bench.err;
    EXPECT_EQ(bench.out.find("pp8"), std::string::npos) << "nothing is measured before the check:\n" << bench.out;
}

TEST_F(CliErrors, ConflictingFlagsAreAFlagError) {
    const CliResult r = run_tessel({"run", "-m", tiny("m.gguf"), "-p", "hi", "-n", "2", "-ctv", "q8_0", "-fa", "off"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_NE(lines[0].find("--cache-type-v q8_0 needs flash attention"), std::string::npos) << lines[0];
}

TEST_F(CliErrors, UnknownChatTemplateName) {
    const CliResult r = run_tessel({"run", "-m", tiny("m.gguf"), "--chat", "--chat-template", "vicuna9", "-p", "hi"});
    EXPECT_NE(r.exit_code, 0);
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_NE(lines[0].find("vicuna9"), std::string::npos) << lines[0];
}

TEST_F(CliErrors, UnsupportedChatTemplateInModelWithNoKnownFormat) {
    // Write the tiny model, then rewrite it with a chat template tessel's Jinja cannot render (an
    // include) and no fingerprint knows.
    const auto src = gguf::File::open(tiny("m.gguf"));
    gguf::Writer w;
    for (const auto& kv : src.metadata())
        if (kv.key != "general.alignment") w.set(kv.key, kv.value);
    w.set("tokenizer.chat_template", gguf::Value::string("{% include 'base.jinja' %}"));
    for (const auto& t : src.tensors())
        w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), src.tensor_data(t),
                     t.size);
    const std::string path = (dir_ / "odd_template.gguf").string();
    w.write_file(path);
    expect_one_error_line(run_tessel({"run", "-m", path, "--chat", "-p", "hi"}),
                          "unknown chat template .*unsupported tag 'include'");
}

TEST_F(CliErrors, ChatTemplateFile) {
    const std::string raising = (dir_ / "raising.jinja").string();
    std::ofstream(raising) << "{{ raise_exception('this template takes no chat') }}";
    expect_one_error_line(run_tessel({"run", "-m", tiny("m.gguf"), "--chat", "--chat-template-file", raising, "-p", "hi"}),
                          "^tessel: error: this template takes no chat$");
    const std::string empty = (dir_ / "empty.jinja").string();
    std::ofstream{empty};
    expect_one_error_line(run_tessel({"run", "-m", tiny("m.gguf"), "--chat", "--chat-template-file", empty, "-p", "hi"}),
                          "--chat-template-file: '.*empty\\.jinja' is empty");
    expect_one_error_line(run_tessel({"run", "-m", tiny("m.gguf"), "--chat", "--chat-template-file",
                                      (dir_ / "absent.jinja").string(), "-p", "hi"}),
                          "absent\\.jinja");
    // A file and a name exclude each other (a usage error).
    const CliResult both = run_tessel({"run", "-m", tiny("m.gguf"), "--chat", "--chat-template", "chatml",
                                       "--chat-template-file", raising, "-p", "hi"});
    EXPECT_EQ(both.exit_code, 2) << both.err;
}

// Two turns on the default model, greedy. The second answer must be exactly what a fresh context
// generates for the whole conversation (turn one, its answer, turn two): tessel's logits do not
// depend on how the tokens were split into decodes, so only a conversation kept wrongly in the
// cache could change it. And turn two decodes only its new tokens, not the conversation again.
std::string greedy_reply(const std::shared_ptr<const Model>& model, const std::vector<runtime::ChatMessage>& msgs,
                         int n) {
    ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = 1;
    Context ctx(model, cp);
    SamplerParams sp;
    sp.temp = 0.0f;
    Sampler sampler(sp, static_cast<int32_t>(model->info().n_vocab));
    tools::GenerateParams gp;
    gp.n_predict = n;
    const auto tmpl = runtime::detect_chat_template(model->chat_template());
    const auto tokens = model->tokenize(runtime::format_chat(tmpl, msgs), true, true);
    std::string reply;
    int32_t n_past = 0;
    tools::generate(ctx, *model, sampler, tokens, n_past, gp,
                      [&](int32_t t) { reply += model->token_to_piece(t); });
    return reply;
}

// Ids of llama.cpp's SPM tokenizer (ggml-vocab-llama-spm.gguf.out: "Hello world" -> 15043 3186, BOS 1).
TEST(CliTokenize, SentencePieceVocabularyGivesLlamaCppIds) {
    TESSEL_REQUIRE_SHARED_DIR();
    const std::string vocab = (test::shared_dir() / "peer-data" / "tokenizer" / "ggml-vocab-llama-spm.gguf").string();
    const CliResult ids = run_tessel({"tokenize", "-m", vocab, "-p", "Hello world", "--ids"});
    EXPECT_EQ(ids.exit_code, 0) << ids.err;
    EXPECT_EQ(ids.out, "[1, 15043, 3186]\n");
    const CliResult pieces = run_tessel({"tokenize", "-m", vocab, "-p", "Hello world", "--no-bos"});
    EXPECT_EQ(pieces.exit_code, 0) << pieces.err;
    EXPECT_EQ(pieces.out, " 15043 -> ' Hello'\n  3186 -> ' world'\n");
}

TEST(CliChat, KeepsTheConversationBetweenTurns) {
    TESSEL_REQUIRE_SMOLLM2();
    const std::string turn1 = "My name is Ada and I live in Paris.", turn2 = "What is my name?";
    constexpr int kTokens = 16;
    const CliResult r = run_tessel({"chat", "-m", test::smollm2_path().string(), "-n", std::to_string(kTokens),
                                    "--temp", "0", "-t", "1"},
                                   turn1 + "\n" + turn2 + "\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;

    const auto model = Model::load(test::smollm2_path().string());
    std::vector<runtime::ChatMessage> msgs{{"user", turn1}};
    const std::string reply1 = greedy_reply(model, msgs, kTokens);
    msgs.push_back({"assistant", reply1});
    msgs.push_back({"user", turn2});
    const std::string reply2 = greedy_reply(model, msgs, kTokens);
    EXPECT_EQ(r.out, reply1 + "\n" + reply2 + "\n");

    std::vector<long> prompt_tokens;
    const std::regex stats("tessel: prompt ([0-9]+) tokens");
    for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), stats); it != std::sregex_iterator(); ++it)
        prompt_tokens.push_back(std::stol((*it)[1]));
    ASSERT_EQ(prompt_tokens.size(), 2u) << r.err;
    const auto tmpl = runtime::detect_chat_template(model->chat_template());
    const long whole = static_cast<long>(model->tokenize(runtime::format_chat(tmpl, msgs), true, true).size());
    EXPECT_LT(prompt_tokens[1], whole / 2) << "turn two decoded the conversation again";
}

// A turn too long for the context is refused with a message and the chat goes on as if it had
// not been sent: the reply to the next turn is the one of the conversation without it.
TEST(CliChat, RefusesATurnTooLongForTheContextAndGoesOn) {
    TESSEL_REQUIRE_SMOLLM2();
    const std::string turn1 = "My name is Ada and I live in Paris.", turn2 = "What is my name?";
    std::string long_turn;
    for (int i = 0; i < 120; ++i) long_turn += "The quick brown fox jumps over the lazy dog. ";
    constexpr int kTokens = 16;
    const CliResult r = run_tessel({"chat", "-m", test::smollm2_path().string(), "-n", std::to_string(kTokens), "--temp", "0",
                                    "-t", "1", "-c", "512"},
                                   turn1 + "\n" + long_turn + "\n" + turn2 + "\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex("tessel chat: with this message the conversation is [0-9]+ tokens, the "
                                                    "context holds 512: it was not sent")))
        << r.err;
    const auto model = Model::load(test::smollm2_path().string());
    std::vector<runtime::ChatMessage> msgs{{"user", turn1}};
    const std::string reply1 = greedy_reply(model, msgs, kTokens);
    msgs.push_back({"assistant", reply1});
    msgs.push_back({"user", turn2});
    EXPECT_EQ(r.out, reply1 + "\n" + greedy_reply(model, msgs, kTokens) + "\n");
}

}  // namespace
}  // namespace tessel

namespace tessel {
namespace {

using test::CliResult;
using test::run_tessel;

// `tessel quantize` end to end: one line per tensor, a file tessel loads and runs, and a bad
// TYPE refused with one line before anything is written.
TEST(CliQuantize, WritesAModelThatRuns) {
    const auto dir = test::temp_dir();
    test::TinyLlamaOptions opt;
    opt.matrix_type = DType::F32;
    opt.vocab = true;
    const std::string in = test::write_tiny_llama(dir / "f32.gguf", opt).string();
    const std::string out = (dir / "q8.gguf").string();
    const CliResult r = run_tessel({"quantize", in, out, "Q8_0", "-t", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto src = gguf::File::open(in);
    const auto dst = gguf::File::open(out);
    ASSERT_EQ(dst.tensors().size(), src.tensors().size());
    size_t listed = 0;
    for (const auto& t : src.tensors()) listed += r.out.find(" " + t.name + " ") != std::string::npos;
    EXPECT_EQ(listed, src.tensors().size()) << r.out;
    EXPECT_EQ(dst.find_tensor("blk.0.attn_q.weight")->type, DType::Q8_0);
    EXPECT_EQ(dst.find_tensor("blk.0.attn_norm.weight")->type, DType::F32);
    const CliResult gen = run_tessel({"run", "-m", out, "-p", "t1 t2", "-n", "4", "--temp", "0"});
    EXPECT_EQ(gen.exit_code, 0) << gen.err;

    // A FIFO (or device) at OUT is refused, not replaced by the new file.
    const auto fifo = dir / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const CliResult onto_fifo = run_tessel({"quantize", in, fifo.string(), "Q8_0"});
    EXPECT_EQ(onto_fifo.exit_code, 1);
    ASSERT_EQ(onto_fifo.err_lines().size(), 1u) << onto_fifo.err;
    EXPECT_NE(onto_fifo.err.find("not a regular file"), std::string::npos) << onto_fifo.err;
    EXPECT_TRUE(std::filesystem::is_fifo(fifo));

    const CliResult bad = run_tessel({"quantize", in, (dir / "x.gguf").string(), "Q3_X"});
    EXPECT_EQ(bad.exit_code, 2);
    ASSERT_EQ(bad.err_lines().size(), 1u) << bad.err;
    EXPECT_NE(bad.err.find("Q3_X"), std::string::npos) << bad.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "x.gguf"));
}

}  // namespace
}  // namespace tessel
