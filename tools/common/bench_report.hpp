// Records of `tessel bench` and their output formats, with llama-bench's field names, value
// formats and markdown layout (tools/llama-bench/llama-bench.cpp), so scripts written for
// llama-bench read tessel's output:
//
//  - JSON: one object per test: the fields below with their JSON types (strings, integers, the
//    speeds as numbers), plus samples_ns (integers) and samples_ts (numbers); tessel adds
//    `device` (the device name, e.g. "cpu").
//  - CSV: a header line of the field names, then one line per test with every value in double
//    quotes (a quote doubled), integers in decimal and speeds with 6 decimals (llama-bench's
//    std::to_string); no samples.
//  - markdown: | model | size | params | backend | threads | [n_batch] [n_ubatch] [sm] [fa] | test | t/s |
//    where size is MiB (GiB from 1 GiB) with 2 decimals, params millions "M" (billions "B" from
//    1e9), t/s "mean ± stddev" with 2 decimals; n_batch, n_ubatch, sm and fa are shown when a value
//    other than the default (2048, 512, row, auto) or several values were asked for.
//
// Fields (llama-bench's subset that applies to tessel): build_commit, build_number, cpu_info,
// gpu_info, backends, model_filename, model_type, model_size (bytes of tensor data),
// model_n_params (tensor elements), n_batch, n_ubatch, n_threads, type_k, type_v, split_mode
// ("none" or "row"; a device group's split, llama-bench's -sm), flash_attn (-1 auto, 0 off, 1 on), n_prompt, n_gen, n_depth (always 0), test_time (RFC 3339 UTC), avg_ns,
// stddev_ns (rounded to whole ns), avg_ts, stddev_ts (tokens/s; sample stddev), device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::tools {

/// One test's result (see the field list above).
struct BenchRecord {
    std::string build_commit;   ///< short git commit of the build ("unknown" without git)
    int64_t build_number = 0;   ///< commits in the build's history (0 without git)
    std::string cpu_info;       ///< CPU model name
    std::string gpu_info;       ///< "" (no GPU backends)
    std::string backends = "CPU";
    std::string model_filename;
    std::string model_type;     ///< llama.cpp's description, e.g. "llama 256M Q4_1" (model_desc.hpp)
    uint64_t model_size = 0;    ///< bytes of tensor data
    uint64_t model_n_params = 0;
    int64_t n_batch = 0, n_ubatch = 0;
    int n_threads = 0;
    std::string type_k = "f16", type_v = "f16";
    std::string split_mode = "row";  ///< "none" or "row"
    int flash_attn = -1;        ///< -1 auto, 0 off, 1 on
    int64_t n_prompt = 0, n_gen = 0;
    std::string test_time;      ///< e.g. "2025-01-31T12:00:00Z"
    std::vector<uint64_t> samples_ns;
    std::string device = "cpu";

    /// Tokens per second of each sample ((n_prompt + n_gen) · 1e9 / ns).
    std::vector<double> samples_ts() const;
};

/// Which optional markdown columns to show.
struct MarkdownColumns {
    bool n_batch = false, n_ubatch = false, split_mode = false, flash_attn = false;
    int backend_width = 10;  ///< llama-bench's 10, or the longest backends value the run will print
};

/// The record as a JSON object (fields in the order above), pretty-printed with 2-space
/// indentation; every line is prefixed by `indent` spaces.
std::string bench_json(const BenchRecord& r, int indent = 0);
/// The CSV header line (field names) and a record's line, each without a trailing newline.
std::string bench_csv_header();
std::string bench_csv_row(const BenchRecord& r);
/// The markdown table's two header lines and a record's line, each ending in '\n'.
std::string bench_markdown_header(const MarkdownColumns& cols);
std::string bench_markdown_row(const BenchRecord& r, const MarkdownColumns& cols);
/// The current time as RFC 3339 UTC, e.g. "2025-01-31T12:00:00Z" (llama-bench's test_time).
std::string utc_timestamp();

}  // namespace tessel::tools
