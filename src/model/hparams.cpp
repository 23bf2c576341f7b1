#include "model/hparams.hpp"

#include <cmath>
#include <limits>

#include "tessel/errors.hpp"

namespace tessel::model {
namespace {

[[noreturn]] void bad(const gguf::File& f, const std::string& what) {
    throw Error(ErrorCode::BadModel, f.name() + ": " + what);
}

const gguf::Value* find(const gguf::File& f, const std::string& key) { return f.find(key); }

int64_t get_int(const gguf::File& f, const std::string& key, int64_t fallback, bool required) {
    const gguf::Value* v = find(f, key);
    if (!v) {
        if (required) bad(f, "missing key " + key);
        return fallback;
    }
    try {
        const uint64_t x = v->as_u64();
        if (x == 0 || x > (uint64_t{1} << 40)) bad(f, "key " + key + " = " + std::to_string(x) + " is out of range");
        return static_cast<int64_t>(x);
    } catch (const Error& e) {
        if (e.code() == ErrorCode::BadModel) throw;
        bad(f, "key " + key + " must be a positive integer, found " + v->to_string());
    }
}

float get_float(const gguf::File& f, const std::string& key, float fallback) {
    const gguf::Value* v = find(f, key);
    if (!v) return fallback;
    try {
        const double x = v->as_f64();
        // Read as a float: a NaN, an infinity, a FLOAT64 beyond float's range (whose conversion is
        // undefined behaviour) or one that rounds to 0 is not a positive float.
        if (!(x > 0.0) || !(x <= std::numeric_limits<float>::max()) || static_cast<float>(x) == 0.0f)
            bad(f, "key " + key + " must be a finite float > 0, found " + v->to_string());
        return static_cast<float>(x);
    } catch (const Error& e) {
        if (e.code() == ErrorCode::BadModel) throw;
        bad(f, "key " + key + " must be a float, found " + v->to_string());
    }
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
    h.n_ctx_train = get_int(f, a + "context_length", 0, true);
    // Positions are int32 (and so is rope's n_ctx_orig).
    if (h.n_ctx_train > std::numeric_limits<int32_t>::max())
        bad(f, "key " + a + "context_length = " + std::to_string(h.n_ctx_train) + " is out of range (at most " +
                   std::to_string(std::numeric_limits<int32_t>::max()) + ")");
    h.n_embd = get_int(f, a + "embedding_length", 0, true);
    h.n_layer = get_int(f, a + "block_count", 0, true);
    h.n_head = get_int(f, a + "attention.head_count", 0, true);
    h.n_head_kv = get_int(f, a + "attention.head_count_kv", h.n_head, false);
    h.n_ff = get_int(f, a + "feed_forward_length", 0, true);
    if (h.n_embd % h.n_head != 0)
        bad(f, "attention.head_count " + std::to_string(h.n_head) + " does not divide embedding_length " + std::to_string(h.n_embd));
    if (h.n_head % h.n_head_kv != 0)
        bad(f, "attention.head_count_kv " + std::to_string(h.n_head_kv) + " does not divide head_count " + std::to_string(h.n_head));
    h.head_dim = get_int(f, a + "attention.key_length", h.n_embd / h.n_head, false);
    // Each key is at most 2^40, so head_count x key_length can overflow 64 bits: the query width
    // must stay within the same bound (head_count_kv <= head_count, so the KV width does too).
    if (h.n_head > (int64_t{1} << 40) / h.head_dim)
        bad(f, "attention.head_count " + std::to_string(h.n_head) + " x attention.key_length " + std::to_string(h.head_dim) +
                   " is out of range");
    if (get_int(f, a + "attention.value_length", h.head_dim, false) != h.head_dim)
        bad(f, "attention.value_length differs from key_length (not supported for llama)");
    h.n_rot = get_int(f, a + "rope.dimension_count", h.head_dim, false);
    if (h.n_rot > h.head_dim || h.n_rot % 2 != 0) bad(f, "rope.dimension_count " + std::to_string(h.n_rot) + " must be even and <= the head size");
    h.rms_eps = get_float(f, a + "attention.layer_norm_rms_epsilon", 1e-5f);
    h.rope_freq_base = get_float(f, a + "rope.freq_base", 10000.0f);
    if (const gguf::Value* t = find(f, a + "rope.scaling.type"); t && t->type() == gguf::ValueType::STRING &&
                                                                  t->as_string() != "none" && t->as_string() != "linear")
        throw Error(ErrorCode::Unsupported, f.name() + ": rope scaling '" + t->as_string() + "' is not supported");
    const float factor = get_float(f, a + "rope.scaling.factor", 1.0f);
    h.rope_freq_scale = 1.0f / factor;
    if (!std::isfinite(h.rope_freq_scale))  // a denormal factor: ROPE refused the scale with no key named
        bad(f, "key " + a + "rope.scaling.factor = " + std::to_string(factor) + " is too small (its inverse is not a finite float)");
    return h;
}

}  // namespace tessel::model
