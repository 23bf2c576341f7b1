#include "model/quant_plan.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <optional>

#include "quant/quant.hpp"
#include "tessel/errors.hpp"

namespace tessel::model {
namespace {

// LLAMA_FTYPE_* values: llama.cpp include/llama.h; names: tools/quantize/quantize.cpp.
constexpr uint32_t kFtypeF16 = 1, kFtypeQ4_0 = 2, kFtypeQ4_1 = 3, kFtypeQ8_0 = 7, kFtypeQ5_0 = 8,
                   kFtypeQ5_1 = 9, kFtypeQ4_K_M = 15, kFtypeQ6_K = 18, kFtypeIQ4_NL = 25, kFtypeMXFP4_MOE = 38;

constexpr QuantTarget kTargets[] = {
    {"Q4_0", "Q4_0", kFtypeQ4_0, DType::Q4_0},
    {"Q4_1", "Q4_1", kFtypeQ4_1, DType::Q4_1},
    {"Q5_0", "Q5_0", kFtypeQ5_0, DType::Q5_0},
    {"Q5_1", "Q5_1", kFtypeQ5_1, DType::Q5_1},
    {"Q8_0", "Q8_0", kFtypeQ8_0, DType::Q8_0},
    {"IQ4_NL", "IQ4_NL", kFtypeIQ4_NL, DType::IQ4_NL},
    {"MXFP4", "MXFP4_MOE", kFtypeMXFP4_MOE, DType::MXFP4},
    {"MXFP4_MOE", "MXFP4_MOE", kFtypeMXFP4_MOE, DType::MXFP4},
    {"Q4_K", "Q4_K_M", kFtypeQ4_K_M, DType::Q4_K},
    {"Q4_K_M", "Q4_K_M", kFtypeQ4_K_M, DType::Q4_K},
    {"Q6_K", "Q6_K", kFtypeQ6_K, DType::Q6_K},
    {"F16", "F16", kFtypeF16, DType::F16},
};

// Substrings that keep a tensor in its source type (llama.cpp's tensor_allows_quantization).
constexpr std::string_view kKeepSubstrings[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
    "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
    "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
    "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
    "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
    "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
    ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger",
    "a.rvq.codebook", "mm.a.code_embd",
};
constexpr std::string_view kKeepNames[] = {"position_embd.weight", "token_types.weight"};

enum class Category { Output, TokenEmbd, AttnV, AttnK, AttnOutput, FfnDown, Other };

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Category category_of(std::string_view name) {
    if (name == "output.weight") return Category::Output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
    // attn_qkv and attn_kv_b count as attn_v (llama.cpp's category_is_attn_v).
    if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") || contains(name, "attn_v.weight"))
        return Category::AttnV;
    if (contains(name, "attn_k.weight")) return Category::AttnK;
    if (contains(name, "attn_output.weight")) return Category::AttnOutput;
    if (contains(name, "ffn_down")) return Category::FfnDown;
    return Category::Other;
}

/// Dimensions up to the last one above 1 (ggml_n_dims).
uint32_t effective_dims(const gguf::TensorInfo& t) {
    uint32_t n = 1;
    for (uint32_t d = 1; d < 4; ++d)
        if (t.ne[d] > 1) n = d + 1;
    return n;
}

/// Why `t` keeps its source type, or nullopt when it may be quantized.
std::optional<std::string> keep_reason(const gguf::TensorInfo& t) {
    const std::string_view name = t.name;
    if (effective_dims(t) < 2) return "kept: 1-D";
    if (!name.ends_with("weight")) return "kept: not a weight";
    for (std::string_view s : kKeepSubstrings)
        if (contains(name, s)) return "kept: " + std::string(s);
    for (std::string_view s : kKeepNames)
        if (name == s) return "kept: " + std::string(s);
    return std::nullopt;
}

/// Layer of a "blk.N." name, or -1.
int layer_of(std::string_view name) {
    if (!name.starts_with("blk.")) return -1;
    int v = 0;
    size_t i = 4;
    if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) v = v * 10 + (name[i] - '0');
    return v;
}

/// First element of a scalar or per-layer array key, or `fallback` when absent.
int64_t key_first(const gguf::File& f, const std::string& key, int64_t fallback) {
    const gguf::Value* v = f.find(key);
    if (!v) return fallback;
    try {
        if (v->type() != gguf::ValueType::ARRAY) return v->as_i64();
        if (v->array_size() > 0) return v->at(0).as_i64();
    } catch (const Error&) {
    }
    throw Error(ErrorCode::BadModel, f.name() + ": key " + key + ": expected an integer or an array of integers");
}

struct ModelFacts {
    std::string arch;
    int64_t n_layer = 0;
    int64_t n_gqa = 0;     ///< n_head / n_head_kv of layer 0 (0 when n_head_kv is 0)
    int64_t n_expert = 0;
    bool llama_70b = false;  ///< llama.cpp's LLM_TYPE_70B: llama, 80 layers, n_head != n_head_kv
};

ModelFacts read_facts(const gguf::File& f) {
    ModelFacts m;
    const gguf::Value* arch = f.find("general.architecture");
    if (!arch || arch->type() != gguf::ValueType::STRING)
        throw Error(ErrorCode::BadModel, f.name() + ": key general.architecture: expected a string");
    m.arch = arch->as_string();
    m.n_layer = key_first(f, m.arch + ".block_count", -1);
    if (m.n_layer < 0) throw Error(ErrorCode::BadModel, f.name() + ": key " + m.arch + ".block_count is missing");
    const int64_t n_head = key_first(f, m.arch + ".attention.head_count", 0);
    const int64_t n_head_kv = key_first(f, m.arch + ".attention.head_count_kv", n_head);
    m.n_gqa = n_head_kv == 0 ? 0 : n_head / n_head_kv;
    m.n_expert = key_first(f, m.arch + ".expert_count", 0);
    m.llama_70b = m.arch == "llama" && m.n_layer == 80 && n_head != n_head_kv;
    return m;
}

bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

struct Choice {
    DType type;
    std::string reason;
};

/// llama.cpp's mixture (llama_tensor_get_type_impl) for the targets tessel offers.
class Mixture {
public:
    Mixture(const gguf::File& f, const QuantTarget& t) : f_(f), t_(t), m_(read_facts(f)) {
        tied_ = f.find_tensor("output.weight") == nullptr;
        for (const auto& ti : f.tensors())
            if (category_of(ti.name) == Category::AttnV) ++n_attn_v_;
    }

    Choice choose(const gguf::TensorInfo& ti) {
        const uint32_t ft = t_.file_type;
        const DType def = t_.default_type;
        const Category cat = category_of(ti.name);
        const bool falcon = m_.arch == "falcon";
        if (cat == Category::Output || (tied_ && cat == Category::TokenEmbd)) {
            const std::string what = cat == Category::Output ? "output" : "output (tied token_embd)";
            if (ft == kFtypeMXFP4_MOE) return {DType::Q8_0, what + ": MXFP4 mixture"};
            if (falcon || ti.ne[0] % dtype_info(def).block_size != 0) return {DType::Q8_0, what};
            if (def != DType::Q8_0) return {DType::Q6_K, what};
            return {def, what};
        }
        if (ft == kFtypeMXFP4_MOE) {
            const bool expert_role = m_.arch != "bailingmoe3" || contains(ti.name, "ffn_up") ||
                                     contains(ti.name, "ffn_gate") || contains(ti.name, "ffn_down");
            if (ti.ne[2] > 1 && expert_role) return {DType::MXFP4, "expert tensor"};
            return {DType::Q8_0, "MXFP4 mixture: not an expert tensor"};
        }
        if (cat == Category::AttnV) {
            const int64_t i = i_attn_v_++;
            Choice c{def, "default"};
            if (ft == kFtypeIQ4_NL && m_.n_gqa >= 4)
                c = {DType::Q5_K, "attn_v, n_gqa >= 4"};
            else if (ft == kFtypeQ4_K_M && use_more_bits(i, n_attn_v_))
                c = {DType::Q6_K, "more bits: attn_v (" + std::to_string(i) + " of " + std::to_string(n_attn_v_) + ")"};
            if (m_.llama_70b && (c.type == DType::Q3_K || c.type == DType::Q4_K)) c = {DType::Q5_K, "attn_v of a 70B llama"};
            if (m_.n_expert == 8) c = {DType::Q8_0, "attn_v of an 8-expert model"};
            return c;
        }
        if (cat == Category::AttnK && m_.n_expert == 8) return {DType::Q8_0, "attn_k of an 8-expert model"};
        if (cat == Category::FfnDown) {
            const int64_t i = m_.n_expert > 1 ? expert_layer(ti.name) : i_ffn_down_;
            ++i_ffn_down_;
            const int64_t n = m_.n_layer;
            const std::string at = " (layer " + std::to_string(i) + " of " + std::to_string(n) + ")";
            if (ft == kFtypeQ4_K_M && falcon) {
                if (i < n / 16) return {DType::Q6_K, "ffn_down, falcon" + at};
                if (use_more_bits(i, n)) return {DType::Q5_K, "ffn_down, falcon" + at};
                return {DType::Q4_K, "ffn_down, falcon" + at};
            }
            if (ft == kFtypeQ4_K_M && use_more_bits(i, n)) return {DType::Q6_K, "more bits: ffn_down" + at};
            if (ft == kFtypeIQ4_NL && i < n / 8) return {DType::Q5_K, "first eighth: ffn_down" + at};
            return {def, "default"};
        }
        if (cat == Category::AttnOutput && !falcon && m_.n_expert == 8 && (ft == kFtypeQ4_K_M || ft == kFtypeIQ4_NL))
            return {DType::Q5_K, "attn_output of an 8-expert model"};
        return {def, "default"};
    }

private:
    int64_t expert_layer(const std::string& name) const {
        const int il = layer_of(name);
        if (il < 0 || il >= m_.n_layer)
            throw Error(ErrorCode::BadModel, f_.name() + ": tensor " + name + ": expected a name blk.N. with N below " +
                                                 std::to_string(m_.n_layer));
        return il;
    }

    const gguf::File& f_;
    const QuantTarget& t_;
    ModelFacts m_;
    bool tied_ = false;
    int64_t n_attn_v_ = 0, i_attn_v_ = 0, i_ffn_down_ = 0;
};

/// llama.cpp's tensor_type_fallback: a type whose block does not divide the rows.
Choice fallback(const gguf::TensorInfo& ti, Choice c) {
    const int64_t cols = ti.ne[0];
    const uint32_t block = dtype_info(c.type).block_size;
    if (cols % block == 0) return c;
    DType to = c.type;
    switch (c.type) {
        case DType::Q4_K: to = DType::Q5_0; break;
        case DType::Q5_K: to = DType::Q5_1; break;
        case DType::Q6_K: to = DType::Q8_0; break;
        default: break;  // a 32-block type has no smaller block: F16 below
    }
    if (cols % dtype_info(to).block_size != 0) to = DType::F16;
    return {to, c.reason + "; fallback " + dtype_name(c.type) + " -> " + dtype_name(to) + ": ne[0] " + std::to_string(cols) +
                    " not a multiple of " + std::to_string(block)};
}

/// llama.cpp's tensor order: by layer number (non-layer tensors first), then by name.
std::vector<size_t> llama_order(const std::vector<gguf::TensorInfo>& ts) {
    std::vector<size_t> order(ts.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const int la = layer_of(ts[a].name), lb = layer_of(ts[b].name);
        return la != lb ? la < lb : ts[a].name < ts[b].name;
    });
    return order;
}

void check_convertible(const gguf::File& in, const TensorPlan& p, const QuantOptions& opt) {
    const gguf::TensorInfo& t = *p.info;
    const std::string what = in.name() + ": tensor " + t.name + " (" + dtype_name(t.type) + " -> " + dtype_name(p.to) + ")";
    // Sources llama.cpp converts: F32, F16, BF16 and block types with a dequantizer.
    const bool readable = t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16 ||
                          (dtype_info(t.type).quantized && quant::has_dequantize(t.type));
    if (!readable) throw Error(ErrorCode::Unsupported, what + ": cannot convert from " + dtype_name(t.type));
    if (!quant::has_quantize(p.to)) throw Error(ErrorCode::Unsupported, what + ": no quantizer for " + dtype_name(p.to));
    if (dtype_info(t.type).quantized && !opt.allow_requantize)
        throw Error(ErrorCode::InvalidArgument, what + ": the tensor is already quantized; requantizing loses precision, "
                                                       "pass --allow-requantize to do it anyway");
}

}  // namespace

std::span<const QuantTarget> quant_targets() { return kTargets; }

const QuantTarget& find_quant_target(std::string_view name) {
    for (const QuantTarget& t : kTargets) {
        const bool same = std::equal(name.begin(), name.end(), t.name, t.name + std::char_traits<char>::length(t.name),
                                     [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; });
        if (same) return t;
    }
    std::string valid;
    for (const QuantTarget& t : kTargets) valid += std::string(valid.empty() ? "" : ", ") + t.name;
    throw Error(ErrorCode::InvalidArgument, "unknown quantization type '" + std::string(name) + "' (valid: " + valid + ")");
}

QuantPlan plan_quantization(const gguf::File& in, const QuantTarget& target, const QuantOptions& opt) {
    if (const gguf::Value* n = in.find("split.count"); n && n->as_u64() > 1)
        throw Error(ErrorCode::Unsupported, in.name() + ": one part of a split model (split.count " +
                                                std::to_string(n->as_u64()) + "); merge the parts first");
    const auto& ts = in.tensors();
    QuantPlan plan{&target, {}};
    plan.tensors.resize(ts.size());
    Mixture mix(in, target);
    const bool quantized_default = dtype_info(target.default_type).quantized;
    for (size_t i : llama_order(ts)) {
        const gguf::TensorInfo& t = ts[i];
        const std::optional<std::string> keep = keep_reason(t);
        Choice c{t.type, keep.value_or("")};
        if (!keep && !quantized_default) {
            c = {target.default_type, "default"};
        } else if (!keep) {
            c = fallback(t, opt.pure ? Choice{target.default_type, "pure"} : mix.choose(t));
        }
        if (!keep && c.type == t.type) c.reason += "; same type: copied";
        plan.tensors[i] = {&t, c.type, c.reason, dtype_row_bytes(c.type, t.ne[0]) * static_cast<uint64_t>(t.ne[1] * t.ne[2] * t.ne[3])};
    }
    for (const TensorPlan& p : plan.tensors)
        if (p.converts()) check_convertible(in, p, opt);
    return plan;
}

}  // namespace tessel::model
