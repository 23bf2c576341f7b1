#include "common/bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/bench.hpp"

namespace tessel::tools {
namespace {

using Json = nlohmann::ordered_json;

/// The record's scalar fields, typed and in output order (the source of both JSON and CSV).
Json scalar_fields(const BenchRecord& r) {
    const std::vector<double> ts = r.samples_ts();
    std::vector<double> ns(r.samples_ns.begin(), r.samples_ns.end());
    const SampleStats s_ns = sample_stats(ns), s_ts = sample_stats(ts);
    Json j;
    j["build_commit"] = r.build_commit;
    j["build_number"] = r.build_number;
    j["cpu_info"] = r.cpu_info;
    j["gpu_info"] = r.gpu_info;
    j["backends"] = r.backends;
    j["model_filename"] = r.model_filename;
    j["model_type"] = r.model_type;
    j["model_size"] = r.model_size;
    j["model_n_params"] = r.model_n_params;
    j["n_batch"] = r.n_batch;
    j["n_ubatch"] = r.n_ubatch;
    j["n_threads"] = r.n_threads;
    j["type_k"] = r.type_k;
    j["type_v"] = r.type_v;
    j["split_mode"] = r.split_mode;
    j["flash_attn"] = r.flash_attn;
    j["n_prompt"] = r.n_prompt;
    j["n_gen"] = r.n_gen;
    j["n_depth"] = 0;
    j["test_time"] = r.test_time;
    j["avg_ns"] = static_cast<uint64_t>(std::llround(s_ns.mean));
    j["stddev_ns"] = static_cast<uint64_t>(std::llround(s_ns.stddev));
    j["avg_ts"] = s_ts.mean;
    j["stddev_ts"] = s_ts.stddev;
    j["device"] = r.device;
    return j;
}

std::string csv_quote(const std::string& v) {
    std::string out = "\"";
    for (char c : v) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

std::string csv_value(const Json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_float()) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%f", v.get<double>());
        return buf;
    }
    return v.dump();  // integers
}

struct Column {
    const char* name;
    int width;  ///< llama-bench's: < 0 left-aligned, > 0 right-aligned
};

std::vector<Column> markdown_columns(const MarkdownColumns& c) {
    std::vector<Column> cols = {{"model", -30}, {"size", 10}, {"params", 10}, {"backend", -std::max(10, c.backend_width)}, {"threads", 7}};
    if (c.n_batch) cols.push_back({"n_batch", 7});
    if (c.n_ubatch) cols.push_back({"n_ubatch", 8});
    if (c.split_mode) cols.push_back({"sm", 5});
    if (c.flash_attn) cols.push_back({"fa", 3});
    cols.push_back({"test", 15});
    cols.push_back({"t/s", 20});
    return cols;
}

std::string cell(const std::string& text, int width) {
    char buf[512];
    std::snprintf(buf, sizeof buf, " %*s |", width, text.c_str());
    return buf;
}

std::string format2(const char* fmt, double a, double b = 0.0) {
    char buf[128];
    std::snprintf(buf, sizeof buf, fmt, a, b);
    return buf;
}

}  // namespace

std::vector<double> BenchRecord::samples_ts() const { return tokens_per_second(samples_ns, n_prompt + n_gen); }

std::string bench_json(const BenchRecord& r, int indent) {
    Json j = scalar_fields(r);
    j["samples_ns"] = r.samples_ns;
    j["samples_ts"] = r.samples_ts();
    const std::string text = j.dump(2);
    const std::string pad(static_cast<size_t>(indent), ' ');
    std::string out = pad;
    for (char c : text) {
        out += c;
        if (c == '\n') out += pad;
    }
    return out;
}

std::string bench_csv_header() {
    const Json fields = scalar_fields(BenchRecord{});
    std::string out;
    for (const auto& item : fields.items()) {
        if (!out.empty()) out += ',';
        out += item.key();
    }
    return out;
}

std::string bench_csv_row(const BenchRecord& r) {
    const Json fields = scalar_fields(r);
    std::string out;
    for (const auto& item : fields.items()) {
        if (!out.empty()) out += ',';
        out += csv_quote(csv_value(item.value()));
    }
    return out;
}

std::string bench_markdown_header(const MarkdownColumns& c) {
    std::string names = "|", rule = "|";
    for (const Column& col : markdown_columns(c)) {
        names += cell(col.name, col.width);
        rule += ' ';
        rule.append(static_cast<size_t>(std::abs(col.width) - 1), '-');
        rule += col.width > 0 ? ": |" : "- |";
    }
    return names + "\n" + rule + "\n";
}

std::string bench_markdown_row(const BenchRecord& r, const MarkdownColumns& c) {
    const SampleStats ts = sample_stats(r.samples_ts());
    const double size = static_cast<double>(r.model_size), params = static_cast<double>(r.model_n_params);
    std::string line = "|";
    for (const Column& col : markdown_columns(c)) {
        const std::string name = col.name;
        std::string v;
        int width = col.width;
        if (name == "model") v = r.model_type;
        else if (name == "size") v = size < 1024.0 * 1024 * 1024 ? format2("%.2f MiB", size / 1024 / 1024) : format2("%.2f GiB", size / 1024 / 1024 / 1024);
        else if (name == "params") v = params < 1e9 ? format2("%.2f M", params / 1e6) : format2("%.2f B", params / 1e9);
        else if (name == "backend") v = r.backends;
        else if (name == "threads") v = std::to_string(r.n_threads);
        else if (name == "n_batch") v = std::to_string(r.n_batch);
        else if (name == "n_ubatch") v = std::to_string(r.n_ubatch);
        else if (name == "sm") v = r.split_mode;
        else if (name == "fa") v = std::to_string(r.flash_attn);
        else if (name == "test") v = BenchTest{r.n_prompt, r.n_gen}.name();
        else v = format2("%.2f ± %.2f", ts.mean, ts.stddev), width += 1;  // t/s; '±' takes 2 bytes
        line += cell(v, width);
    }
    return line + "\n";
}

std::string utc_timestamp() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace tessel::tools
