// `tessel bench` end to end on a tiny random llama: the binary is run as a user would run it and
// its JSON, CSV and markdown are checked field by field against the GGUF file and against each
// other (speeds are never checked, only their consistency with the samples).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_run.hpp"
#include "gguf/reader.hpp"
#include "support/test_paths.hpp"
#include "support/tiny_llama.hpp"

namespace tessel {
namespace {

/// Runs `tessel bench ARGS...`.
test::CliResult tessel_bench(const std::filesystem::path&, std::vector<std::string> args) {
    args.insert(args.begin(), "bench");
    return test::run_tessel(args);
}

struct FileFacts {
    uint64_t bytes = 0, params = 0;
};

/// llama-bench's model_size and model_n_params: tensor data bytes and elements of the whole file.
FileFacts facts(const std::filesystem::path& p) {
    FileFacts f;
    const gguf::File file = gguf::File::open(p.string());
    for (const gguf::TensorInfo& t : file.tensors()) f.bytes += t.size, f.params += static_cast<uint64_t>(t.n_elements());
    return f;
}

std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
}

/// Splits a CSV line whose every value is double-quoted (quotes inside doubled).
std::vector<std::string> csv_values(const std::string& line) {
    std::vector<std::string> v;
    size_t i = 0;
    while (i < line.size()) {
        EXPECT_EQ(line[i], '"') << line;
        std::string cur;
        for (++i; i < line.size(); ++i) {
            if (line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
            else if (line[i] == '"') break;
            else cur += line[i];
        }
        v.push_back(cur);
        i += 2;  // closing quote and comma
    }
    return v;
}

class BenchCli : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = test::temp_dir();
        test::TinyLlamaOptions opt;
        opt.vocab = true;
        model_ = test::write_tiny_llama(dir_ / "tiny.gguf", opt);
        facts_ = facts(model_);
    }
    std::filesystem::path dir_, model_;
    FileFacts facts_;
};

// 2 blocks (no llama.cpp size class), no general.file_type, Q8_0 the most common tensor type.
const char* kTinyType = "llama ?B (guessed) Q8_0";

TEST_F(BenchCli, JsonRecords) {
    const test::CliResult r = tessel_bench(dir_, {"-m", model_.string(), "-p", "8", "-n", "4", "-r", "2", "-t", "1", "-o", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), 2u);
    const std::regex rfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
    for (size_t i = 0; i < 2; ++i) {
        const nlohmann::json& t = j[i];
        for (const char* f : {"build_commit", "cpu_info", "gpu_info", "backends", "model_filename", "model_type", "type_k",
                              "type_v", "test_time", "device"})
            EXPECT_TRUE(t[f].is_string()) << f;
        for (const char* f : {"build_number", "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "flash_attn",
                              "n_prompt", "n_gen", "n_depth", "avg_ns", "stddev_ns"})
            EXPECT_TRUE(t[f].is_number_integer()) << f;
        for (const char* f : {"avg_ts", "stddev_ts"}) EXPECT_TRUE(t[f].is_number()) << f;
        EXPECT_EQ(t["model_filename"], model_.string());
        EXPECT_EQ(t["model_type"], kTinyType);
        EXPECT_EQ(t["model_size"], facts_.bytes);
        EXPECT_EQ(t["model_n_params"], facts_.params);
        EXPECT_EQ(t["backends"], "CPU");
        EXPECT_EQ(t["device"], "cpu");
        EXPECT_EQ(t["n_threads"], 1);
        EXPECT_EQ(t["n_batch"], 2048);
        EXPECT_EQ(t["n_ubatch"], 512);
        EXPECT_EQ(t["flash_attn"], -1);
        EXPECT_TRUE(std::regex_match(t["test_time"].get<std::string>(), rfc3339)) << t["test_time"];
        EXPECT_EQ(t["n_prompt"], i == 0 ? 8 : 0);
        EXPECT_EQ(t["n_gen"], i == 0 ? 0 : 4);
        const auto ns = t["samples_ns"].get<std::vector<uint64_t>>();
        const auto ts = t["samples_ts"].get<std::vector<double>>();
        ASSERT_EQ(ns.size(), 2u);
        ASSERT_EQ(ts.size(), 2u);
        const double n_tokens = i == 0 ? 8 : 4;
        for (size_t k = 0; k < 2; ++k) {
            EXPECT_GT(ns[k], 0u);
            EXPECT_NEAR(ts[k], n_tokens * 1e9 / static_cast<double>(ns[k]), 1e-9 * ts[k]);
        }
        const double mean_ts = (ts[0] + ts[1]) / 2, sd_ts = std::fabs(ts[0] - ts[1]) / std::sqrt(2.0);
        EXPECT_NEAR(t["avg_ts"].get<double>(), mean_ts, 1e-9 * mean_ts);
        EXPECT_NEAR(t["stddev_ts"].get<double>(), sd_ts, 1e-9 * mean_ts);
        const double mean_ns = (static_cast<double>(ns[0]) + static_cast<double>(ns[1])) / 2;
        EXPECT_NEAR(t["avg_ns"].get<double>(), mean_ns, 1.0);
        EXPECT_NEAR(t["stddev_ns"].get<double>(), std::fabs(static_cast<double>(ns[0]) - static_cast<double>(ns[1])) / std::sqrt(2.0), 1.0);
    }
}

TEST_F(BenchCli, CsvRecords) {
    const test::CliResult r = tessel_bench(dir_, {"-m", model_.string(), "-p", "8", "-n", "4", "-r", "2", "-t", "1,2", "-o", "csv"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> ls = lines(r.out);
    ASSERT_EQ(ls.size(), 5u) << r.out;  // header, then pp8 and tg4 for 1 and 2 threads
    std::vector<std::string> names;
    for (std::string rest = ls[0]; !rest.empty();) {
        const size_t c = rest.find(',');
        names.push_back(rest.substr(0, c));
        rest = c == std::string::npos ? "" : rest.substr(c + 1);
    }
    const std::pair<int, int> expect[] = {{8, 0}, {0, 4}, {8, 0}, {0, 4}};
    for (size_t i = 1; i < ls.size(); ++i) {
        const std::vector<std::string> v = csv_values(ls[i]);
        ASSERT_EQ(v.size(), names.size()) << ls[i];
        std::map<std::string, std::string> m;
        for (size_t k = 0; k < v.size(); ++k) m[names[k]] = v[k];
        EXPECT_EQ(m["model_filename"], model_.string());
        EXPECT_EQ(m["model_type"], kTinyType);
        EXPECT_EQ(m["model_size"], std::to_string(facts_.bytes));
        EXPECT_EQ(m["model_n_params"], std::to_string(facts_.params));
        EXPECT_EQ(m["n_threads"], i <= 2 ? "1" : "2");
        EXPECT_EQ(m["n_prompt"], std::to_string(expect[i - 1].first));
        EXPECT_EQ(m["n_gen"], std::to_string(expect[i - 1].second));
        EXPECT_EQ(m["device"], "cpu");
        EXPECT_TRUE(std::regex_match(m["avg_ts"], std::regex(R"(\d+\.\d{6})"))) << m["avg_ts"];
        EXPECT_TRUE(std::regex_match(m["avg_ns"], std::regex(R"([1-9]\d*)"))) << m["avg_ns"];
        // avg_ts is the mean of per-repetition speeds, so it is at least n_tokens / avg time.
        const double n_tokens = expect[i - 1].first + expect[i - 1].second;
        EXPECT_GE(std::stod(m["avg_ts"]) * (1 + 1e-6), n_tokens * 1e9 / std::stod(m["avg_ns"]));
    }
}

TEST_F(BenchCli, MarkdownTable) {
    const test::CliResult r = tessel_bench(dir_, {"-m", model_.string(), "-p", "8", "-n", "4", "-r", "2", "-t", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> ls = lines(r.out);
    ASSERT_EQ(ls.size(), 6u) << r.out;  // 2 header lines, 2 rows, a blank line, the build line
    EXPECT_EQ(ls[0], "| model                          |       size |     params | backend    | threads |            test |                  t/s |");
    const std::regex row(R"(\| llama \?B \(guessed\) Q8_0 +\| +[0-9.]+ MiB \| +[0-9.]+ M \| CPU +\| +1 \| +(pp8|tg4) \| +[0-9.]+ ± [0-9.]+ \|)");
    EXPECT_TRUE(std::regex_match(ls[2], row)) << ls[2];
    EXPECT_TRUE(std::regex_match(ls[3], row)) << ls[3];
    EXPECT_NE(ls[2].find("pp8"), std::string::npos);
    EXPECT_NE(ls[3].find("tg4"), std::string::npos);
    char size[32];
    std::snprintf(size, sizeof size, "%.2f MiB", static_cast<double>(facts_.bytes) / 1024 / 1024);
    EXPECT_NE(ls[2].find(size), std::string::npos) << ls[2];
    EXPECT_EQ(ls[4], "");
    EXPECT_EQ(ls[5].rfind("build: ", 0), 0u) << ls[5];
}

TEST_F(BenchCli, UsageErrorsExit2ModelErrorsExit1) {
    auto one_error_line = [](const test::CliResult& r) {
        const std::vector<std::string> ls = lines(r.err);
        return ls.size() == 1 && ls[0].rfind("tessel: error: ", 0) == 0;
    };
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"-o", "xml"}, {"-p", "0", "-n", "0"}, {"-t", "1,x"}, {"-p", "8-2"}, {"-b", "0"}, {"-fa", "maybe"}, {"-r", "0"},
             {"-t", "5000"}, {"-p", "99999999"}, {"-n", "1,16777217"}}) {
        std::vector<std::string> full = {"-m", model_.string()};
        full.insert(full.end(), args.begin(), args.end());
        const test::CliResult r = tessel_bench(dir_, full);
        EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
        EXPECT_TRUE(one_error_line(r)) << r.err;
        EXPECT_EQ(r.out, "") << args[0];
    }
    const test::CliResult missing = tessel_bench(dir_, {"-m", (dir_ / "missing.gguf").string(), "-p", "8", "-n", "0", "-r", "1"});
    EXPECT_EQ(missing.exit_code, 1) << missing.err;
    EXPECT_TRUE(one_error_line(missing)) << missing.err;
    EXPECT_NE(missing.err.find("missing.gguf"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace tessel
