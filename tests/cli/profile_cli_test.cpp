// `tessel profile` on a tiny random llama with the default model's tokenizer (2 blocks: 7 matmuls
// each, plus the output matmul), on the CPU and on the NPU: both tables (prompt, decode step) list
// every matmul of a graph, and their shares add up to 100 %.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "cli_run.hpp"
#include "support/smollm2.hpp"
#include "support/test_paths.hpp"
#include "support/tiny_llama.hpp"

namespace tessel {
namespace {

struct Row {
    std::string op, device;
    long count = 0;
    double ms = 0, share = 0;
};

struct Table {
    std::string title;
    std::vector<Row> rows;
};

/// The tables of `tessel profile`'s output: a title line, a header line, rows, a blank line.
std::vector<Table> tables(const std::string& out) {
    std::vector<Table> t;
    std::istringstream in(out);
    std::string line, prev;
    bool in_rows = false;
    const std::regex row(R"((\S+(?: x\d+)?)\s+(\S+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+(\S+)\s+(\S+))");
    while (std::getline(in, line)) {
        std::smatch m;
        if (line.starts_with("op ")) {
            t.push_back({prev, {}});
            in_rows = true;
        } else if (line.empty()) {
            in_rows = false;
        } else if (in_rows) {
            EXPECT_TRUE(std::regex_match(line, m, row)) << line;
            if (!m.empty()) t.back().rows.push_back({m[1], m[2], std::stol(m[3]), std::stod(m[4]), std::stod(m[5])});
        }
        prev = line;
    }
    return t;
}

class ProfileCli : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        dir_ = test::temp_dir();
        TESSEL_REQUIRE_SMOLLM2();
        test::TinyLlamaOptions opt;
        opt.vocab_from = test::smollm2_path();  // a tokenizer that reads any prompt
        opt.tied_output = true;                 // the output matmul reads token_embd
        model_ = test::write_tiny_llama(dir_ / "tiny.gguf", opt);
    }
    std::filesystem::path dir_, model_;
};

TEST_P(ProfileCli, TablesListEveryMatmul) {
    const std::string device = GetParam();
    const test::CliResult r = test::run_tessel({"profile", "-m", model_.string(), "--device", device, "-p", "Once upon a time", "-n", "3", "-t", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<Table> t = tables(r.out);
    ASSERT_EQ(t.size(), 2u) << r.out;
    EXPECT_TRUE(t[0].title.starts_with("prompt (4 tokens, one graph)")) << t[0].title;  // SmolLM2 adds no BOS
    EXPECT_TRUE(t[1].title.starts_with("decode (mean of 3 steps)")) << t[1].title;
    for (const Table& table : t) {
        long matmuls = 0;
        double share = 0;
        bool on_npu = false;
        for (const Row& row : table.rows) {
            EXPECT_GT(row.count, 0) << row.op;
            EXPECT_GE(row.ms, 0.0) << row.op;
            share += row.share;
            if (row.op.find("MUL_MAT") == std::string::npos) continue;
            const std::size_t x = row.op.find(" x");  // a fused N-output matmul
            matmuls += row.count * (x == std::string::npos ? 1 : std::stol(row.op.substr(x + 2)));
            on_npu = on_npu || row.device == "NPU0";
        }
        EXPECT_EQ(matmuls, 15) << table.title << "\n" << r.out;
        EXPECT_NEAR(share, 100.0, 0.1 * static_cast<double>(table.rows.size()) + 0.1) << table.title << "\n" << r.out;
        EXPECT_EQ(on_npu, device == "npu") << r.out;
    }
}

INSTANTIATE_TEST_SUITE_P(Devices, ProfileCli, ::testing::Values("cpu", "npu"));

TEST(ProfileCliFlags, BadDecodeCountIsAFlagError) {
    const test::CliResult r = test::run_tessel({"profile", "-n", "-1"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
}

}  // namespace
}  // namespace tessel
