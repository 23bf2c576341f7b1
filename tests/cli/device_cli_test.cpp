// `--device` as a user meets it: `tessel run --device npu` generates the same greedy tokens as
// `--device cpu` and runs every node of the graph on NPU0 (the NPU takes the nodes it claims, the
// CPU the rest: here that is none), an unknown device name is
// one error line listing the devices, and `tessel bench --device cpu,npu` measures each device
// and names it in its records. Models: tiny random llamas (tests/support/tiny_llama); the run test
// carries the default model's tokenizer so the prompt text tokenizes as it would for a user.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "cli_run.hpp"
#include "support/smollm2.hpp"
#include "support/tiny_llama.hpp"

namespace tessel {
namespace {

using test::CliResult;
using test::run_tessel;

// The tiny model's greedy continuation is decided by its random weights; what is asserted is that
// both devices pick the same tokens (the CPU's output is the reference, computed in the same run).
TEST(CliDevice, RunOnNpuGivesTheCpuTokens) {
    TESSEL_REQUIRE_SMOLLM2();
    test::TinyLlamaOptions opt;
    opt.vocab_from = test::smollm2_path();
    opt.tied_output = true;
    const std::string model = test::write_tiny_llama(test::temp_dir() / "tiny.gguf", opt).string();
    // `where`: the stderr line naming where the last graph's nodes ran (every node on the one device)
    auto run_on = [&](const std::string& device, const std::string& where) {
        const CliResult r = run_tessel({"run", "-m", model, "--device", device, "-p", "The capital of France is", "-n", "4", "--temp", "0"});
        EXPECT_EQ(r.exit_code, 0) << device << ": " << r.err;
        EXPECT_TRUE(std::regex_search(r.err, std::regex("\\ntessel: the last graph ran [1-9][0-9]* nodes on " + where + "\\n")))
            << device << ": " << r.err;
        return r.out;
    };
    const std::string cpu = run_on("cpu", "CPU");
    ASSERT_FALSE(cpu.empty());
    EXPECT_EQ(run_on("npu", "NPU0"), cpu);
    EXPECT_EQ(run_on("NPU0", "NPU0"), cpu);  // a registered name, in any case
    EXPECT_EQ(run_on("npu0:0", "NPU0"), cpu);  // session 0 by its session name
}

TEST(CliDevice, UnknownDeviceIsOneErrorLineListingTheDevices) {
    test::TinyLlamaOptions opt;
    opt.vocab = true;
    const std::string model = test::write_tiny_llama(test::temp_dir() / "tiny.gguf", opt).string();
    for (const char* cmd : {"run", "bench", "perplexity"}) {
        std::vector<std::string> args{cmd, "-m", model, "--device", "gpu9"};
        if (std::string(cmd) == "run") args.insert(args.end(), {"-p", "hi", "-n", "1"});
        else if (std::string(cmd) == "bench") args.insert(args.end(), {"-p", "4", "-n", "0", "-r", "1"});
        else args.insert(args.end(), {"-f", model});
        const CliResult r = run_tessel(args);
        EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;  // a bad flag value (README: exit 2)
        const auto lines = r.err_lines();
        ASSERT_EQ(lines.size(), 1u) << r.err;
        EXPECT_TRUE(std::regex_search(lines[0], std::regex(R"(^tessel: error: --device: unknown device 'gpu9' \(devices: cpu, npu = npu0\))")))
            << lines[0];
    }
}

TEST(CliDevice, BenchMeasuresEachDeviceOfTheList) {
    test::TinyLlamaOptions opt;
    opt.vocab = true;
    const std::string model = test::write_tiny_llama(test::temp_dir() / "tiny.gguf", opt).string();
    const CliResult r = run_tessel({"bench", "-m", model, "--device", "cpu,npu", "-p", "8", "-n", "2", "-r", "1", "-t", "1", "-o", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.size(), 4u);  // (pp8, tg2) per device, devices outer
    for (size_t i = 0; i < 4; ++i) {
        const bool npu = i >= 2;
        EXPECT_EQ(j[i]["device"], npu ? "npu" : "cpu");
        EXPECT_EQ(j[i]["backends"], npu ? "NPU0,CPU" : "CPU");
        EXPECT_EQ(j[i]["n_prompt"], i % 2 == 0 ? 8 : 0);
        EXPECT_EQ(j[i]["samples_ns"].size(), 1u);
    }
}

}  // namespace
}  // namespace tessel
