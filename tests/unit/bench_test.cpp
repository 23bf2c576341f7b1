// `tessel bench` building blocks: statistics, list parsing, llama.cpp's model description and the
// record formats (expected values computed by hand or taken from llama-bench's documented layout).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/bench.hpp"
#include "common/bench_report.hpp"
#include "common/model_desc.hpp"
#include "tessel/errors.hpp"

namespace tessel::tools {
namespace {

TEST(BenchStats, MeanAndSampleStddev) {
    // Sum 40 over 8 values; squared deviations 9+1+1+1+0+0+4+16 = 32, sample variance 32/7.
    const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
    const SampleStats s = sample_stats(v);
    EXPECT_DOUBLE_EQ(s.mean, 5.0);
    EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7.0), 1e-12);
    EXPECT_NEAR(s.stddev, 2.1380899, 1e-6);
}

TEST(BenchStats, EmptyAndSingle) {
    EXPECT_EQ(sample_stats({}).mean, 0.0);
    EXPECT_EQ(sample_stats({}).stddev, 0.0);
    const std::vector<double> one = {42.5};
    EXPECT_EQ(sample_stats(one).mean, 42.5);
    EXPECT_EQ(sample_stats(one).stddev, 0.0);
}

TEST(BenchStats, TokensPerSecond) {
    const std::vector<uint64_t> ns = {1000000000, 2000000000, 250000000, 0};
    const std::vector<double> ts = tokens_per_second(ns, 512);
    ASSERT_EQ(ts.size(), 4u);
    EXPECT_DOUBLE_EQ(ts[0], 512.0);
    EXPECT_DOUBLE_EQ(ts[1], 256.0);
    EXPECT_DOUBLE_EQ(ts[2], 2048.0);
    EXPECT_EQ(ts[3], 0.0);
}

TEST(BenchTestName, LlamaBenchNames) {
    EXPECT_EQ((BenchTest{512, 0}.name()), "pp512");
    EXPECT_EQ((BenchTest{0, 128}.name()), "tg128");
    EXPECT_EQ((BenchTest{512, 128}.name()), "pp512+tg128");
}

TEST(BenchLists, Ranges) {
    using V = std::vector<int64_t>;
    EXPECT_EQ(parse_int_ranges("512", "-p"), (V{512}));
    EXPECT_EQ(parse_int_ranges("1,2", "-t"), (V{1, 2}));
    EXPECT_EQ(parse_int_ranges("1-4", "-t"), (V{1, 2, 3, 4}));
    EXPECT_EQ(parse_int_ranges("128-512*2", "-p"), (V{128, 256, 512}));
    EXPECT_EQ(parse_int_ranges("0-10+5,64", "-n"), (V{0, 5, 10, 64}));
    EXPECT_EQ(parse_int_ranges("1-10*3", "-b"), (V{1, 3, 9}));
}

TEST(BenchLists, BadListsNameTheFlag) {
    for (const char* bad : {"", "a", "1,", ",1", "4-1", "1-", "0-8*2", "1-8*1", "1-3+0", "1-3/2", "-1", "3000000000", "1 2"}) {
        try {
            parse_int_ranges(bad, "-t");
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("-t"), std::string::npos) << e.what();
        }
    }
}

TEST(ModelDesc, FileTypeNames) {
    EXPECT_EQ(file_type_name(0), "all F32");
    EXPECT_EQ(file_type_name(3), "Q4_1");
    EXPECT_EQ(file_type_name(7), "Q8_0");
    EXPECT_EQ(file_type_name(15), "Q4_K - Medium");
    EXPECT_EQ(file_type_name(5), "unknown, may not work");  // removed Q4_2
}

TEST(ModelDesc, LlamaSizeClasses) {
    ModelInfo hp;
    hp.arch = "llama";
    hp.n_head = hp.n_head_kv = 32;
    auto with = [&](int64_t layers, int64_t vocab) {
        hp.n_layer = layers, hp.n_vocab = vocab;
        return size_class(hp);
    };
    EXPECT_EQ(with(30, 49152), "256M");  // SmolLM2-135M
    EXPECT_EQ(with(16, 128256), "1B");
    EXPECT_EQ(with(28, 128256), "3B");
    EXPECT_EQ(with(32, 49152), "3B");
    EXPECT_EQ(with(32, 32000), "7B");
    EXPECT_EQ(with(32, 128256), "8B");
    EXPECT_EQ(with(80, 32000), "65B");
    hp.n_head_kv = 8;
    EXPECT_EQ(with(80, 32000), "70B");
    EXPECT_EQ(with(2, 160), "?B");
    hp.arch = "qwen3";
    EXPECT_EQ(with(30, 49152), "?B");
}

// The other architectures of the table, as llama.cpp names the models tessel's tests run.
TEST(ModelDesc, OtherArchitecturesSizeClasses) {
    auto cls = [](const char* arch, int64_t layers, int64_t embd, int64_t heads = 16) {
        ModelInfo hp;
        hp.arch = arch, hp.n_layer = layers, hp.n_embd = embd, hp.n_head = heads;
        return size_class(hp);
    };
    EXPECT_EQ(cls("gemma3", 18, 640), "270M");  // gemma-3-270m
    EXPECT_EQ(cls("gemma3", 62, 5376), "27B");
    EXPECT_EQ(cls("qwen3", 28, 1024), "0.6B");  // Qwen3-0.6B
    EXPECT_EQ(cls("qwen3", 28, 2048), "1.7B");
    EXPECT_EQ(cls("qwen2", 24, 896), "1B");     // Qwen2-0.5B: llama.cpp's table expects n_embd 1024 for 0.5B
    EXPECT_EQ(cls("qwen2", 40, 2560, 20), "4B");
    EXPECT_EQ(cls("qwen2", 2, 896), "?B");      // the shape-true test files have 2 layers
}

BenchRecord sample_record() {
    BenchRecord r;
    r.build_commit = "abc1234";
    r.build_number = 42;
    r.cpu_info = "Test CPU \"X\"";
    r.model_filename = "/m/model.gguf";
    r.model_type = "llama 256M Q4_1";
    r.model_size = 98355200;       // 93.80 MiB
    r.model_n_params = 134515008;  // 134.52 M
    r.n_batch = 2048, r.n_ubatch = 512, r.n_threads = 2;
    r.n_prompt = 600;
    r.test_time = "2025-01-31T12:00:00Z";
    r.samples_ns = {1000000000, 2000000000, 3000000000};
    return r;
}

// samples 1, 2, 3 s of 600 tokens: 600, 300, 200 t/s; mean 1100/3; deviations 700/3, -200/3,
// -500/3; sample variance (490000 + 40000 + 250000) / 9 / 2 = 390000 / 9.
const double kMeanTs = 1100.0 / 3.0, kStdTs = std::sqrt(390000.0 / 9.0);

TEST(BenchReport, JsonFieldsAndValues) {
    const nlohmann::json j = nlohmann::json::parse(bench_json(sample_record(), 2));
    EXPECT_EQ(j["build_commit"], "abc1234");
    EXPECT_EQ(j["build_number"], 42);
    EXPECT_EQ(j["cpu_info"], "Test CPU \"X\"");
    EXPECT_EQ(j["backends"], "CPU");
    EXPECT_EQ(j["device"], "cpu");
    EXPECT_EQ(j["model_type"], "llama 256M Q4_1");
    EXPECT_EQ(j["model_size"], 98355200u);
    EXPECT_EQ(j["model_n_params"], 134515008u);
    EXPECT_EQ(j["n_threads"], 2);
    EXPECT_EQ(j["flash_attn"], -1);
    EXPECT_EQ(j["n_prompt"], 600);
    EXPECT_EQ(j["n_gen"], 0);
    EXPECT_EQ(j["n_depth"], 0);
    EXPECT_EQ(j["type_k"], "f16");
    EXPECT_EQ(j["split_mode"], "row");
    EXPECT_EQ(j["avg_ns"], 2000000000u);
    EXPECT_EQ(j["stddev_ns"], 1000000000u);
    EXPECT_NEAR(j["avg_ts"].get<double>(), kMeanTs, 1e-9);
    EXPECT_NEAR(j["stddev_ts"].get<double>(), kStdTs, 1e-9);
    EXPECT_EQ(j["samples_ns"], (std::vector<uint64_t>{1000000000, 2000000000, 3000000000}));
    ASSERT_EQ(j["samples_ts"].size(), 3u);
    EXPECT_DOUBLE_EQ(j["samples_ts"][0].get<double>(), 600.0);
    EXPECT_DOUBLE_EQ(j["samples_ts"][2].get<double>(), 200.0);
}

TEST(BenchReport, JsonIndentPrefixesEveryLine) {
    const std::string text = bench_json(sample_record(), 4);
    size_t start = 0;
    while (start < text.size()) {
        EXPECT_EQ(text.compare(start, 4, "    "), 0) << text.substr(start, 40);
        const size_t nl = text.find('\n', start);
        if (nl == std::string::npos) break;
        start = nl + 1;
    }
}

TEST(BenchReport, Csv) {
    EXPECT_EQ(bench_csv_header(),
              "build_commit,build_number,cpu_info,gpu_info,backends,model_filename,model_type,model_size,model_n_params,"
              "n_batch,n_ubatch,n_threads,type_k,type_v,split_mode,flash_attn,n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,"
              "avg_ts,stddev_ts,device");
    EXPECT_EQ(bench_csv_row(sample_record()),
              "\"abc1234\",\"42\",\"Test CPU \"\"X\"\"\",\"\",\"CPU\",\"/m/model.gguf\",\"llama 256M Q4_1\",\"98355200\","
              "\"134515008\",\"2048\",\"512\",\"2\",\"f16\",\"f16\",\"row\",\"-1\",\"600\",\"0\",\"0\",\"2025-01-31T12:00:00Z\","
              "\"2000000000\",\"1000000000\",\"366.666667\",\"208.166600\",\"cpu\"");
}

TEST(BenchReport, MarkdownLayoutOfLlamaBench) {
    const MarkdownColumns cols;
    EXPECT_EQ(bench_markdown_header(cols),
              "| model                          |       size |     params | backend    | threads |            test |                  t/s |\n"
              "| ------------------------------ | ---------: | ---------: | ---------- | ------: | --------------: | -------------------: |\n");
    EXPECT_EQ(bench_markdown_row(sample_record(), cols),
              "| llama 256M Q4_1                |  93.80 MiB |   134.52 M | CPU        |       2 |           pp600 |      366.67 ± 208.17 |\n");
    const MarkdownColumns all{true, true, true, true};
    EXPECT_EQ(bench_markdown_header(all).substr(0, bench_markdown_header(all).find('\n')),
              "| model                          |       size |     params | backend    | threads | n_batch | n_ubatch |    sm |  fa |            test |                  t/s |");
    // a group's backends ("NPU[0-1],CPU") widen their column in the header and every row alike
    MarkdownColumns wide;
    wide.backend_width = 12;
    BenchRecord group = sample_record();
    group.backends = "NPU[0-1],CPU";
    EXPECT_EQ(bench_markdown_header(wide).substr(0, bench_markdown_header(wide).find('\n')),
              "| model                          |       size |     params | backend      | threads |            test |                  t/s |");
    EXPECT_EQ(bench_markdown_row(group, wide),
              "| llama 256M Q4_1                |  93.80 MiB |   134.52 M | NPU[0-1],CPU |       2 |           pp600 |      366.67 ± 208.17 |\n");
}

}  // namespace
}  // namespace tessel::tools
