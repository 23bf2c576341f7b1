// `tessel info`: describe a GGUF file (metadata and tensor table), or with --system this machine's
// CPU (model, cores, ISA features and tiers under TESSEL_CPU_ISA), as text or JSON.
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.hpp"
#include "core/cpu_features.hpp"
#include "core/dtype.hpp"
#include "cpu/packed/buffer.hpp"
#include "cpu/packed/kernel.hpp"
#include "cpu/packed/report.hpp"
#include "cpu/threadpool.hpp"
#include "gguf/reader.hpp"
#include "text.hpp"

namespace tessel::cli {
namespace {

using gguf::Value;
using gguf::ValueType;

constexpr size_t kArrayPreview = 8;  // elements shown per array in text output
constexpr size_t kJsonArrayPreview = 64;
constexpr size_t kStringPreview = 120;

std::string quote(const std::string& s) {
    std::string body = s.size() > kStringPreview ? s.substr(0, kStringPreview) + "..." : s;
    return nlohmann::ordered_json(body).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string scalar_text(const Value& v) {
    switch (v.type()) {
        case ValueType::UINT8: case ValueType::UINT16: case ValueType::UINT32: case ValueType::UINT64:
            return std::to_string(v.as_u64());
        case ValueType::INT8: case ValueType::INT16: case ValueType::INT32: case ValueType::INT64:
            return std::to_string(v.as_i64());
        case ValueType::FLOAT32: case ValueType::FLOAT64: {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.9g", v.as_f64());
            return buf;
        }
        case ValueType::BOOL: return v.as_bool() ? "true" : "false";
        case ValueType::STRING: return quote(v.as_string());
        case ValueType::ARRAY: break;
    }
    return "?";
}

std::string value_text(const Value& v) {
    if (v.type() != ValueType::ARRAY) return scalar_text(v);
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
    if (v.type() != ValueType::ARRAY) return gguf::value_type_name(v.type());
    return std::string("arr[") + gguf::value_type_name(v.array_type()) + "," + std::to_string(v.array_size()) + "]";
}

nlohmann::ordered_json value_json(const Value& v, bool full) {
    switch (v.type()) {
        case ValueType::UINT8: case ValueType::UINT16: case ValueType::UINT32: case ValueType::UINT64:
            return v.as_u64();
        case ValueType::INT8: case ValueType::INT16: case ValueType::INT32: case ValueType::INT64:
            return v.as_i64();
        case ValueType::FLOAT32: case ValueType::FLOAT64: return v.as_f64();
        case ValueType::BOOL: return v.as_bool();
        case ValueType::STRING: return v.as_string();
        case ValueType::ARRAY: {
            nlohmann::ordered_json values = nlohmann::ordered_json::array();
            const size_t size = v.array_size();
            const size_t n = full ? size : std::min(size, kJsonArrayPreview);
            for (size_t i = 0; i < n; ++i) values.push_back(value_json(v.at(i), full));
            return {{"array_type", gguf::value_type_name(v.array_type())}, {"length", size}, {"values", values}};
        }
    }
    return nullptr;
}

void print_text(const gguf::File& f) {
    std::printf("file: %s\n", printable(f.name()).c_str());
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
        total += t.size;
        name_width = std::max(name_width, printable(t.name).size());
    }
    std::printf("\ntensors (%zu, %" PRIu64 " bytes):\n", f.tensors().size(), total);
    std::printf("  %-*s %-8s %-24s %12s %12s\n", static_cast<int>(name_width), "name", "type", "shape (ne)", "bytes", "offset");
    for (const auto& t : f.tensors()) {
        const DTypeInfo& info = dtype_info(t.type);
        std::printf("  %-*s %-8s %-24s %12" PRIu64 " %12" PRIu64 "%s\n", static_cast<int>(name_width), printable(t.name).c_str(),
                    info.name, shape_text(t).c_str(), t.size, t.offset, info.supported ? "" : "  (unsupported type)");
    }
}

void print_json(const gguf::File& f, bool full) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& kv : f.metadata()) meta[kv.key] = value_json(kv.value, full);
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (const auto& t : f.tensors()) {
        nlohmann::ordered_json ne = nlohmann::ordered_json::array();
        for (uint32_t d = 0; d < t.n_dims; ++d) ne.push_back(t.ne[d]);
        tensors.push_back({{"name", t.name}, {"type", dtype_name(t.type)}, {"ne", ne}, {"bytes", t.size},
                           {"offset", t.offset}, {"supported", dtype_info(t.type).supported}});
    }
    nlohmann::ordered_json out = {{"file", f.name()},       {"version", f.version()},     {"alignment", f.alignment()},
                          {"data_offset", f.data_offset()}, {"file_size", f.file_size()}, {"metadata", meta},
                          {"tensors", tensors}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
}

void print_system(bool json) {
    // Usable features first: a bad TESSEL_CPU_ISA is reported before anything is printed.
    const CpuFeatures& use = usable_cpu_features();
    const CpuFeatures& det = cpu_features();
    const std::optional<std::string> env = cpu_isa_env();
    const int cores = cpu::default_thread_count();
    if (json) {
        nlohmann::ordered_json features = nlohmann::ordered_json::object();
        for (const CpuFeatureInfo& fi : cpu_feature_table())
            if (fi.arch == det.arch)
                features[fi.name] = {{"detected", det.*fi.member}, {"usable", use.*fi.member}, {"tier", tier_name(fi.tier)}};
        nlohmann::ordered_json out = {{"cpu", det.model},
                                      {"arch", arch_name(det.arch)},
                                      {"physical_cores", cores},
                                      {"features", features}};
        if (det.arch == CpuArch::Arm) {
            out["sve_vector_bytes"] = {{"detected", det.sve_vector_bytes}, {"usable", use.sve_vector_bytes}};
            out["sme_vector_bytes"] = {{"detected", det.sme_vector_bytes}, {"usable", use.sme_vector_bytes}};
        }
        out["best_tier"] = tier_name(best_tier(det));
        out["usable_tier"] = tier_name(best_tier(use));
        out["tessel_cpu_isa"] = env ? nlohmann::ordered_json(*env) : nlohmann::ordered_json(nullptr);
        std::printf("%s\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
        return;
    }
    std::printf("cpu: %s\n", printable(det.model.empty() ? "unknown" : det.model).c_str());
    std::printf("arch: %s\n", arch_name(det.arch));
    std::printf("physical cores: %d\n", cores);
    std::printf("TESSEL_CPU_ISA: %s\n", env ? printable(*env).c_str() : "(unset)");
    std::printf("best tier: %s\n", tier_name(best_tier(det)));
    std::printf("usable tier: %s\n", tier_name(best_tier(use)));
    std::printf("\nfeatures:\n  %-12s %-10s %-8s %s\n", "name", "detected", "usable", "tier");
    for (const CpuFeatureInfo& fi : cpu_feature_table())
        if (fi.arch == det.arch)
            std::printf("  %-12s %-10s %-8s %s\n", fi.name, det.*fi.member ? "yes" : "no", use.*fi.member ? "yes" : "no",
                        tier_name(fi.tier));
    if (det.arch == CpuArch::Arm) {
        std::printf("\nsve vector length: %d bytes (usable: %d)\n", det.sve_vector_bytes, use.sve_vector_bytes);
        std::printf("sme vector length: %d bytes (usable: %d)\n", det.sme_vector_bytes, use.sme_vector_bytes);
    }
}

}  // namespace

void add_info_command(CLI::App& app) {
    struct Options {
        std::string file;
        bool json = false;
        bool full_arrays = false;
        bool system = false;
        bool kernels = false;
        int threads = 0;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("info", "Print a GGUF file's metadata and tensor table, or (--system) this CPU");
    CLI::Option* file = cmd->add_option("file", opts->file, "GGUF file (not with --system)");
    cmd->add_flag("--json", opts->json, "Print JSON (arrays show their first 64 values)");
    CLI::Option* full = cmd->add_flag("--full-arrays", opts->full_arrays, "With --json: print every array value")->needs("--json");
    cmd->add_flag("--system", opts->system,
                  "Print the CPU: model, physical cores, ISA features (detected / usable under TESSEL_CPU_ISA), tiers")
        ->excludes(file)
        ->excludes(full);
    cmd->add_flag("--kernels", opts->kernels,
                  "Print the packed CPU kernels: per weight type every compiled kernel, whether this CPU runs it, "
                  "and which one the chain selects (for -t threads) and why")
        ->excludes(file)
        ->excludes(full);
    cmd->add_option("-t,--threads", opts->threads, "With --kernels: thread count for the chain's plan (0: physical cores)")
        ->check(CLI::Range(0, 1024));
    cmd->callback([opts, file] {
        if (opts->system) return print_system(opts->json);
        if (opts->kernels) {
            const int threads = opts->threads > 0 ? opts->threads : cpu::default_thread_count();
            const std::string report =
                cpu::packed::kernel_report(usable_cpu_features(), cpu_features(), threads, cpu::packed::matrix_thread_cap());
            std::fputs(report.c_str(), stdout);
            if (!cpu::packed::packed_enabled()) std::puts("\nTESSEL_CPU_PACKED=0: weights are not packed");
            return;
        }
        if (file->count() == 0) throw CLI::RequiredError("info: a FILE or --system");
        const gguf::File f = gguf::File::open(opts->file);
        if (opts->json)
            print_json(f, opts->full_arrays);
        else
            print_text(f);
    });
}

}  // namespace tessel::cli
