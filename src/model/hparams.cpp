#include "model/hparams.hpp"

#include <cmath>
#include <cstdio>

#include "model/arch.hpp"
#include "tessel/errors.hpp"

namespace tessel::model {
namespace {

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

}  // namespace

const gguf::Value* KeyReader::find(const std::string& suffix) const { return f_.find(prefix_ + suffix); }

void KeyReader::bad(const std::string& what) const { throw Error(ErrorCode::BadModel, f_.name() + ": " + what); }

int64_t KeyReader::integer(const std::string& suffix, int64_t fallback, bool required, int64_t hi) const {
    const std::string key = prefix_ + suffix;
    const gguf::Value* v = f_.find(key);
    if (!v) {
        if (required) bad("missing key " + key);
        return fallback;
    }
    uint64_t x = 0;
    try {
        x = v->as_u64();
    } catch (const Error&) {
        bad("key " + key + " must be a positive integer, found " + v->to_string());
    }
    if (x == 0 || x > static_cast<uint64_t>(hi))
        bad("key " + key + " = " + std::to_string(x) + " is out of range (1 to " + std::to_string(hi) + ")");
    return static_cast<int64_t>(x);
}

float KeyReader::real(const std::string& suffix, float fallback, double lo, double hi) const {
    const std::string key = prefix_ + suffix;
    const gguf::Value* v = f_.find(key);
    if (!v) return fallback;
    double x = 0;
    try {
        x = v->as_f64();
    } catch (const Error&) {
        bad("key " + key + " must be a float, found " + v->to_string());
    }
    if (!std::isfinite(x) || x < lo || x > hi)
        bad("key " + key + " = " + v->to_string() + " is out of range (a finite number from " + range(lo, hi) + ")");
    return static_cast<float>(x);
}

Hparams read_hparams(const gguf::File& f) {
    Hparams h;
    const gguf::Value* arch = f.find("general.architecture");
    if (!arch || arch->type() != gguf::ValueType::STRING)
        throw Error(ErrorCode::BadModel, f.name() + ": missing key general.architecture (a string)");
    h.arch = arch->as_string();
    const ArchSpec& spec = find_arch(h.arch, f.name());
    if (const gguf::Value* n = f.find("general.name"); n && n->type() == gguf::ValueType::STRING) h.name = n->as_string();
    const KeyReader k(f, h.arch);
    const std::string& a = k.prefix();
    h.n_ctx_train = k.integer("context_length", 0, true, kMaxContext);
    h.n_embd = k.integer("embedding_length", 0, true, kMaxEmbedding);
    h.n_layer = k.integer("block_count", 0, true, kMaxLayers);
    h.n_head = k.integer("attention.head_count", 0, true, kMaxHeads);
    h.n_head_kv = k.integer("attention.head_count_kv", h.n_head, false, h.n_head);
    h.n_ff = k.integer("feed_forward_length", 0, true, 4 * kMaxEmbedding);
    if (h.n_head % h.n_head_kv != 0)
        k.bad("key " + a + "attention.head_count_kv = " + std::to_string(h.n_head_kv) + " does not divide " + a +
              "attention.head_count = " + std::to_string(h.n_head));
    const gguf::Value* key_length = k.find("attention.key_length");
    if (!key_length && h.n_embd % h.n_head != 0)
        k.bad("key " + a + "attention.head_count = " + std::to_string(h.n_head) + " does not divide " + a + "embedding_length = " +
              std::to_string(h.n_embd) + " (and " + a + "attention.key_length is absent)");
    h.head_dim = k.integer("attention.key_length", h.n_embd / h.n_head, false, kMaxHeadDim);
    if (k.integer("attention.value_length", h.head_dim, false, kMaxHeadDim) != h.head_dim)
        k.bad("key " + a + "attention.value_length differs from " + a + "attention.key_length (not supported)");
    // Bounded factors: n_head * head_dim < 2^26, so the products below cannot overflow.
    if (h.n_head * h.head_dim > kMaxEmbedding)
        k.bad("keys " + a + "attention.head_count x " + a + "attention.key_length = " + std::to_string(h.n_head * h.head_dim) +
              " is out of range (1 to " + std::to_string(kMaxEmbedding) + ")");
    h.n_rot = k.integer("rope.dimension_count", h.head_dim, false, h.head_dim);
    if (h.n_rot % 2 != 0) k.bad("key " + a + "rope.dimension_count = " + std::to_string(h.n_rot) + " must be even");
    h.rms_eps = k.real("attention.layer_norm_rms_epsilon", 1e-5f, 1e-30, 1.0);
    h.rope_freq_base = k.real("rope.freq_base", 10000.0f, 1.0, 1e12);
    if (const gguf::Value* t = k.find("rope.scaling.type"); t && t->type() == gguf::ValueType::STRING &&
                                                           t->as_string() != "none" && t->as_string() != "linear")
        throw Error(ErrorCode::Unsupported, f.name() + ": rope scaling '" + t->as_string() + "' is not supported (none, linear)");
    h.rope_freq_scale = 1.0f / k.real("rope.scaling.factor", 1.0f, 1.0 / 1024, 1024.0);
    if (spec.read_hparams) spec.read_hparams(k, h);
    return h;
}

}  // namespace tessel::model
