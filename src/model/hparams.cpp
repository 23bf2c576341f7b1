#include "model/hparams.hpp"

#include <cmath>
#include <cstdio>

#include "tessel/errors.hpp"

namespace tessel::model {
namespace {

[[noreturn]] void bad(const gguf::File& f, const std::string& what) {
    throw Error(ErrorCode::BadModel, f.name() + ": " + what);
}

const gguf::Value* find(const gguf::File& f, const std::string& key) { return f.find(key); }

// Ranges of the hyper-parameters: wide enough for any released model, narrow enough that every
// size computed from them (n_head x head_dim, KV bytes per token, ...) fits 64 bits with room.
constexpr int64_t kMaxContext = int64_t{1} << 24;     // tokens
constexpr int64_t kMaxEmbedding = int64_t{1} << 18;   // embedding_length, feed_forward_length / 4
constexpr int64_t kMaxLayers = int64_t{1} << 12;
constexpr int64_t kMaxHeads = int64_t{1} << 12;
constexpr int64_t kMaxHeadDim = int64_t{1} << 14;

std::string range(double lo, double hi) {
    auto text = [](double x) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", x);
        return std::string(buf);
    };
    return text(lo) + " to " + text(hi);
}

/// An integer key in [1, hi]; `fallback` when absent and not required.
int64_t get_int(const gguf::File& f, const std::string& key, int64_t fallback, bool required, int64_t hi) {
    const gguf::Value* v = find(f, key);
    if (!v) {
        if (required) bad(f, "missing key " + key);
        return fallback;
    }
    uint64_t x = 0;
    try {
        x = v->as_u64();
    } catch (const Error&) {
        bad(f, "key " + key + " must be a positive integer, found " + v->to_string());
    }
    if (x == 0 || x > static_cast<uint64_t>(hi))
        bad(f, "key " + key + " = " + std::to_string(x) + " is out of range (1 to " + std::to_string(hi) + ")");
    return static_cast<int64_t>(x);
}

/// A float key, finite and in [lo, hi]; `fallback` when absent.
float get_float(const gguf::File& f, const std::string& key, float fallback, double lo, double hi) {
    const gguf::Value* v = find(f, key);
    if (!v) return fallback;
    double x = 0;
    try {
        x = v->as_f64();
    } catch (const Error&) {
        bad(f, "key " + key + " must be a float, found " + v->to_string());
    }
    if (!std::isfinite(x) || x < lo || x > hi)
        bad(f, "key " + key + " = " + v->to_string() + " is out of range (a finite number from " + range(lo, hi) + ")");
    return static_cast<float>(x);
}

}  // namespace

Hparams read_hparams(const gguf::File& f) {
    Hparams h;
    const gguf::Value* arch = find(f, "general.architecture");
    if (!arch || arch->type() != gguf::ValueType::STRING) bad(f, "missing key general.architecture (a string)");
    h.arch = arch->as_string();
    if (h.arch != "llama")
        throw Error(ErrorCode::Unsupported, f.name() + ": unknown architecture '" + h.arch + "' (supported: llama)");
    if (const gguf::Value* n = find(f, "general.name"); n && n->type() == gguf::ValueType::STRING) h.name = n->as_string();
    const std::string a = h.arch + ".";
    h.n_ctx_train = get_int(f, a + "context_length", 0, true, kMaxContext);
    h.n_embd = get_int(f, a + "embedding_length", 0, true, kMaxEmbedding);
    h.n_layer = get_int(f, a + "block_count", 0, true, kMaxLayers);
    h.n_head = get_int(f, a + "attention.head_count", 0, true, kMaxHeads);
    h.n_head_kv = get_int(f, a + "attention.head_count_kv", h.n_head, false, h.n_head);
    h.n_ff = get_int(f, a + "feed_forward_length", 0, true, 4 * kMaxEmbedding);
    if (h.n_embd % h.n_head != 0)
        bad(f, "key " + a + "attention.head_count = " + std::to_string(h.n_head) + " does not divide " + a + "embedding_length = " +
                   std::to_string(h.n_embd));
    if (h.n_head % h.n_head_kv != 0)
        bad(f, "key " + a + "attention.head_count_kv = " + std::to_string(h.n_head_kv) + " does not divide " + a +
                   "attention.head_count = " + std::to_string(h.n_head));
    h.head_dim = get_int(f, a + "attention.key_length", h.n_embd / h.n_head, false, kMaxHeadDim);
    if (get_int(f, a + "attention.value_length", h.head_dim, false, kMaxHeadDim) != h.head_dim)
        bad(f, "key " + a + "attention.value_length differs from " + a + "attention.key_length (not supported for llama)");
    // Bounded factors: n_head * head_dim < 2^26, so the products below cannot overflow.
    if (h.n_head * h.head_dim > kMaxEmbedding)
        bad(f, "keys " + a + "attention.head_count x " + a + "attention.key_length = " + std::to_string(h.n_head * h.head_dim) +
                   " is out of range (1 to " + std::to_string(kMaxEmbedding) + ")");
    h.n_rot = get_int(f, a + "rope.dimension_count", h.head_dim, false, h.head_dim);
    if (h.n_rot % 2 != 0) bad(f, "key " + a + "rope.dimension_count = " + std::to_string(h.n_rot) + " must be even");
    h.rms_eps = get_float(f, a + "attention.layer_norm_rms_epsilon", 1e-5f, 1e-30, 1.0);
    h.rope_freq_base = get_float(f, a + "rope.freq_base", 10000.0f, 1.0, 1e12);
    if (const gguf::Value* t = find(f, a + "rope.scaling.type"); t && t->type() == gguf::ValueType::STRING &&
                                                                  t->as_string() != "none" && t->as_string() != "linear")
        throw Error(ErrorCode::Unsupported, f.name() + ": rope scaling '" + t->as_string() + "' is not supported");
    h.rope_freq_scale = 1.0f / get_float(f, a + "rope.scaling.factor", 1.0f, 1.0 / 1024, 1024.0);
    return h;
}

}  // namespace tessel::model
