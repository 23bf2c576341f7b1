// `tessel info FILE`: describe a GGUF file (header, metadata and tensor table) as text or JSON.
// Its developer options (--system, --kernels) are in dev/info_system.cpp.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.hpp"
#include "dev/commands.hpp"
#include "tessel/gguf_file.hpp"
#include "text.hpp"

namespace tessel::cli {
namespace {

using Value = GgufValue;
using ValueType = GgufType;

constexpr size_t kArrayPreview = 8;  // elements shown per array in text output
constexpr size_t kJsonArrayPreview = 64;
constexpr size_t kStringPreview = 120;

std::string quote(const std::string& s) {
    std::string body = s.size() > kStringPreview ? s.substr(0, kStringPreview) + "..." : s;
    return nlohmann::ordered_json(body).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string scalar_text(const Value& v) {
    switch (v.type()) {
        case ValueType::UInt8: case ValueType::UInt16: case ValueType::UInt32: case ValueType::UInt64:
            return std::to_string(v.as_u64());
        case ValueType::Int8: case ValueType::Int16: case ValueType::Int32: case ValueType::Int64:
            return std::to_string(v.as_i64());
        case ValueType::Float32: case ValueType::Float64: {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.9g", v.as_f64());
            return buf;
        }
        case ValueType::Bool: return v.as_bool() ? "true" : "false";
        case ValueType::String: return quote(v.as_string());
        case ValueType::Array: break;
    }
    return "?";
}

std::string value_text(const Value& v) {
    if (v.type() != ValueType::Array) return scalar_text(v);
    const size_t n = v.array_size();
    std::string out = "[";
    for (size_t i = 0; i < n && i < kArrayPreview; ++i) {
        if (i) out += ", ";
        out += value_text(v.at(i));
    }
    if (n > kArrayPreview) out += ", ... (" + std::to_string(n) + " total)";
    return out + "]";
}

std::string type_text(const Value& v) {
    if (v.type() != ValueType::Array) return gguf_type_name(v.type());
    return std::string("arr[") + gguf_type_name(v.array_type()) + "," + std::to_string(v.array_size()) + "]";
}

nlohmann::ordered_json value_json(const Value& v, bool full) {
    switch (v.type()) {
        case ValueType::UInt8: case ValueType::UInt16: case ValueType::UInt32: case ValueType::UInt64:
            return v.as_u64();
        case ValueType::Int8: case ValueType::Int16: case ValueType::Int32: case ValueType::Int64:
            return v.as_i64();
        case ValueType::Float32: case ValueType::Float64: return v.as_f64();
        case ValueType::Bool: return v.as_bool();
        case ValueType::String: return v.as_string();
        case ValueType::Array: {
            nlohmann::ordered_json values = nlohmann::ordered_json::array();
            const size_t size = v.array_size();
            const size_t n = full ? size : std::min(size, kJsonArrayPreview);
            for (size_t i = 0; i < n; ++i) values.push_back(value_json(v.at(i), full));
            return {{"array_type", gguf_type_name(v.array_type())}, {"length", size}, {"values", values}};
        }
    }
    return nullptr;
}

void print_text(const GgufFile& f) {
    std::printf("file: %s\n", printable(f.path()).c_str());
    std::printf("gguf version %u, alignment %" PRIu64 ", data offset %" PRIu64 ", file size %" PRIu64 " bytes\n",
                f.version(), f.alignment(), f.data_offset(), f.file_size());
    std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
    size_t key_width = 0;
    for (const auto& kv : f.metadata()) key_width = std::max(key_width, printable(kv.key).size());
    for (const auto& kv : f.metadata())
        std::printf("  %-*s %-18s = %s\n", static_cast<int>(key_width), printable(kv.key).c_str(),
                    type_text(kv.value).c_str(), value_text(kv.value).c_str());

    uint64_t total = 0;
    size_t name_width = 4;
    for (const auto& t : f.tensors()) {
        total += t.bytes;
        name_width = std::max(name_width, printable(t.name).size());
    }
    std::printf("\ntensors (%zu, %" PRIu64 " bytes):\n", f.tensors().size(), total);
    std::printf("  %-*s %-8s %-24s %12s %12s\n", static_cast<int>(name_width), "name", "type", "shape (ne)", "bytes", "offset");
    for (const auto& t : f.tensors())
        std::printf("  %-*s %-8s %-24s %12" PRIu64 " %12" PRIu64 "%s\n", static_cast<int>(name_width), printable(t.name).c_str(),
                    t.type.c_str(), shape_text(t.shape).c_str(), t.bytes, t.offset, t.type_supported ? "" : "  (unsupported type)");
}

void print_json(const GgufFile& f, bool full) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& kv : f.metadata()) meta[kv.key] = value_json(kv.value, full);
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (const auto& t : f.tensors()) {
        nlohmann::ordered_json ne = nlohmann::ordered_json::array();
        for (int64_t d : t.shape) ne.push_back(d);
        tensors.push_back({{"name", t.name}, {"type", t.type}, {"ne", ne}, {"bytes", t.bytes},
                           {"offset", t.offset}, {"supported", t.type_supported}});
    }
    nlohmann::ordered_json out = {{"file", f.path()},       {"version", f.version()},     {"alignment", f.alignment()},
                          {"data_offset", f.data_offset()}, {"file_size", f.file_size()}, {"metadata", meta},
                          {"tensors", tensors}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
}

}  // namespace

void add_info_command(CLI::App& app) {
    struct Options {
        std::string file;
        bool json = false;
        bool full_arrays = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("info", "Print a GGUF file's metadata and tensor table, or (--system) this CPU");
    CLI::Option* file = cmd->add_option("file", opts->file, "GGUF file (not with --system)");
    cmd->add_flag("--json", opts->json, "Print JSON (arrays show their first 64 values)");
    CLI::Option* full = cmd->add_flag("--full-arrays", opts->full_arrays, "With --json: print every array value")->needs("--json");
    const auto developer_option = dev::add_info_developer_options(*cmd, file, full);
    cmd->callback([opts, file, developer_option] {
        if (developer_option(opts->json)) return;
        if (file->count() == 0) throw CLI::RequiredError("info: a FILE or --system");
        const GgufFile f = GgufFile::open(opts->file);
        if (opts->json)
            print_json(f, opts->full_arrays);
        else
            print_text(f);
    });
}

}  // namespace tessel::cli
