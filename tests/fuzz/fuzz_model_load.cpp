// libFuzzer target for model load: a tiny valid llama (built here, in memory) whose metadata and
// tensors the input mutates, written with gguf::Writer and loaded through the public API on the
// CPU (hyper-parameters, vocabulary, tensor checks, weight placement and loading), then a short
// text tokenized and detokenized and one or two decode steps run in a small context.
//
// Input, read front to back (fuzz_input.hpp; an exhausted input reads as zeros):
//   the starting geometry and weights' seed (1 byte), what to run after the load (1 byte: see
//   run()), the KV cache types (1 byte), the number of mutations (0..15), the mutations (each an op
//   byte and its arguments), then the text to tokenize (at most 64 bytes).
// Mutations: set a hyper-parameter / tokenizer / general key to any value type (integers at the
// edges, floats incl. inf / nan / denormals, strings, arrays), remove a key, edit the token,
// token-type and merge arrays entry by entry, set special token ids, change a tensor's type or a
// dimension, drop, rename or duplicate a tensor, fill a tensor with raw random bytes.
//
// tessel::Error is the only allowed failure, and one from Model::load must name the file; a crash,
// a sanitizer report, a leak, any other exception (std::bad_alloc, std::out_of_range, ...), logits
// of the wrong size or a token id outside the vocabulary is a bug.
// The file goes to one path per process in /dev/shm (the temporary folder when there is none),
// rewritten by each run and removed at a normal exit: tessel::Model::load reads a path.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.hpp"
#include "fuzz_input.hpp"
#include "gguf/writer.hpp"
#include "quant/quant.hpp"
#include "tessel/engine.hpp"
#include "tessel/errors.hpp"
#include "vocab/byte_level.hpp"

namespace {

using namespace tessel;
using gguf::Value;
using gguf::ValueType;

[[noreturn]] void broken(const std::string& what) {
    std::fprintf(stderr, "fuzz_model_load: %s\n", what.c_str());
    std::abort();
}

// ---------------------------------------------------------------------------------------------
// The model before mutation.

struct Geometry {
    int64_t n_embd, n_head, n_head_kv, n_ff, n_layer;
    DType matrix_type;
};

// Small shapes; the 256-wide one lets k-quant types (256-element blocks) fit its rows.
constexpr Geometry kGeometries[] = {
    {32, 4, 2, 64, 2, DType::Q8_0},
    {32, 2, 1, 32, 1, DType::F16},
    {64, 4, 4, 96, 1, DType::Q4_0},
    {256, 4, 2, 256, 1, DType::Q4_K},
};

struct TensorSpec {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    bool raw = false;  ///< random bytes instead of quantized normal values
};

struct ModelSpec {
    std::vector<gguf::KeyValue> kv;
    std::vector<TensorSpec> tensors;
    uint32_t seed = 0;

    Value* find(const std::string& key) {
        for (auto& e : kv)
            if (e.key == key) return &e.value;
        return nullptr;
    }
    void set(const std::string& key, Value v) {
        if (Value* old = find(key))
            *old = std::move(v);
        else
            kv.push_back({key, std::move(v)});
    }
};

/// A byte-level BPE vocabulary of 64 tokens: 40 byte symbols (letters, digits, space, a few
/// punctuation marks), merges of some of them, and special tokens.
void add_vocab(ModelSpec& m) {
    std::vector<std::string> tokens;
    for (const char c : std::string_view("abcdefghijklmnopqrstuvwxyz0123456789 .,!"))
        tokens.emplace_back(vocab::byte_to_symbol(static_cast<uint8_t>(c)));
    const std::string sp(vocab::byte_to_symbol(' '));
    const std::vector<std::pair<std::string, std::string>> pairs = {
        {"t", "h"}, {"th", "e"}, {sp, "the"}, {"i", "n"}, {"in", "g"}, {"e", "r"}, {sp, "a"}, {"o", "n"}, {"a", "n"},
        {"an", "d"}, {sp, "and"}, {"1", "2"}, {"h", "e"}, {"he", "l"}, {"hel", "l"}, {"hell", "o"}, {sp, "w"}, {"o", "r"}};
    std::vector<std::string> merges;
    for (const auto& [l, r] : pairs) {
        merges.push_back(l + " " + r);
        tokens.push_back(l + r);
    }
    std::vector<int32_t> types(tokens.size(), 1);
    for (const char* special : {"<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>", "[X]"}) {
        tokens.emplace_back(special);
        types.push_back(special[0] == '[' ? 4 : special[1] == 'u' ? 2 : 3);
    }
    m.set("tokenizer.ggml.model", Value::string("gpt2"));
    m.set("tokenizer.ggml.pre", Value::string("llama-bpe"));
    m.set("tokenizer.ggml.tokens", Value::strings(tokens));
    m.set("tokenizer.ggml.token_type", Value::i32s(types));
    m.set("tokenizer.ggml.merges", Value::strings(merges));
    m.set("tokenizer.ggml.bos_token_id", Value::u32(static_cast<uint32_t>(tokens.size() - 6)));
    m.set("tokenizer.ggml.eos_token_id", Value::u32(static_cast<uint32_t>(tokens.size() - 5)));
    m.set("tokenizer.ggml.add_bos_token", Value::boolean(true));
    m.set("tokenizer.chat_template", Value::string("{% for m in messages %}{{ m.content }}{% endfor %}"));
}

ModelSpec base_model(const Geometry& g, uint32_t seed) {
    ModelSpec m;
    m.seed = seed;
    const int64_t E = g.n_embd, H = g.n_head, D = E / H, Hkv = g.n_head_kv, F = g.n_ff;
    m.set("general.architecture", Value::string("llama"));
    m.set("general.name", Value::string("fuzz"));
    m.set("llama.context_length", Value::u32(64));
    m.set("llama.embedding_length", Value::u32(static_cast<uint32_t>(E)));
    m.set("llama.block_count", Value::u32(static_cast<uint32_t>(g.n_layer)));
    m.set("llama.feed_forward_length", Value::u32(static_cast<uint32_t>(F)));
    m.set("llama.attention.head_count", Value::u32(static_cast<uint32_t>(H)));
    m.set("llama.attention.head_count_kv", Value::u32(static_cast<uint32_t>(Hkv)));
    m.set("llama.attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
    m.set("llama.rope.freq_base", Value::f32(10000.0f));
    add_vocab(m);
    const int64_t V = static_cast<int64_t>(m.find("tokenizer.ggml.tokens")->array_size());
    const DType t = g.matrix_type;
    auto add = [&](std::string name, std::vector<int64_t> ne, DType type) { m.tensors.push_back({std::move(name), type, std::move(ne)}); };
    add("token_embd.weight", {E, V}, t);
    add("output_norm.weight", {E}, DType::F32);
    add("output.weight", {E, V}, t);
    for (int64_t il = 0; il < g.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        add(b + "attn_norm.weight", {E}, DType::F32);
        add(b + "attn_q.weight", {E, H * D}, t);
        add(b + "attn_k.weight", {E, Hkv * D}, t);
        add(b + "attn_v.weight", {E, Hkv * D}, t);
        add(b + "attn_output.weight", {H * D, E}, t);
        add(b + "ffn_norm.weight", {E}, DType::F32);
        add(b + "ffn_gate.weight", {E, F}, t);
        add(b + "ffn_up.weight", {E, F}, t);
        add(b + "ffn_down.weight", {F, E}, t);
    }
    return m;
}

// ---------------------------------------------------------------------------------------------
// Values the mutations write.

constexpr uint64_t kInts[] = {0, 1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 48, 63, 64, 65, 96, 128, 255, 256, 257, 4096,
                              65535, 65536, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000, uint64_t{1} << 40,
                              (uint64_t{1} << 40) + 1, uint64_t{1} << 62, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF};
constexpr double kFloats[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-5, 1e-6, 1e-30, 1e-45, 5e-324, 10000.0, 1e6, 1e30, 3.4e38,
                              1e39, 1e300, -1e300, std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::max(), std::numeric_limits<double>::min()};
constexpr const char* kStrings[] = {"", "llama", "gpt2", "none", "linear", "yarn", "default", "gpt-2", "llama-bpe",
                                    "llama3", "qwen2", "smollm", "deepseek-coder", "falcon", "t h", "he llo", " ",
                                    "\xC3", "\xE2\x96\x81", "<s>", "tokenizer.ggml.tokens"};

uint64_t pick_int(fuzz::Input& in) {
    const uint8_t how = in.u8();
    if (how < 200) return kInts[how % std::size(kInts)];
    if (how < 240) return in.u8();
    return in.u64();
}

double pick_float(fuzz::Input& in) {
    const uint8_t how = in.u8();
    if (how < 220) return kFloats[how % std::size(kFloats)];
    uint64_t bits = in.u64();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

std::string pick_string(fuzz::Input& in) { return in.flag() ? std::string(in.pick(kStrings)) : in.bytes(24); }

Value pick_scalar(fuzz::Input& in, ValueType t) {
    switch (t) {
        case ValueType::UINT8: return Value::u8(static_cast<uint8_t>(pick_int(in)));
        case ValueType::INT8: return Value::i8(static_cast<int8_t>(pick_int(in)));
        case ValueType::UINT16: return Value::u16(static_cast<uint16_t>(pick_int(in)));
        case ValueType::INT16: return Value::i16(static_cast<int16_t>(pick_int(in)));
        case ValueType::UINT32: return Value::u32(static_cast<uint32_t>(pick_int(in)));
        case ValueType::INT32: return Value::i32(static_cast<int32_t>(pick_int(in)));
        case ValueType::UINT64: return Value::u64(pick_int(in));
        case ValueType::INT64: return Value::i64(static_cast<int64_t>(pick_int(in)));
        case ValueType::FLOAT32: {
            const double d = pick_float(in);
            // Out-of-range doubles become +-inf here, as a file would store them (no UB cast).
            return Value::f32(std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()
                                  ? std::copysign(std::numeric_limits<float>::infinity(), d)
                                  : static_cast<float>(d));
        }
        case ValueType::FLOAT64: return Value::f64(pick_float(in));
        case ValueType::BOOL: return Value::boolean(in.flag());
        default: return Value::string(pick_string(in));
    }
}

/// Any value: a scalar of any type, or an array of up to 16 items (nested arrays one level deep).
Value pick_value(fuzz::Input& in, bool allow_array = true) {
    const auto t = static_cast<ValueType>(in.below(gguf::kValueTypeIdEnd));
    if (t != ValueType::ARRAY) return pick_scalar(in, t);
    if (!allow_array) return Value::u32(static_cast<uint32_t>(pick_int(in)));
    auto et = static_cast<ValueType>(in.below(gguf::kValueTypeIdEnd));
    std::vector<Value> items;
    const size_t n = in.below(17);
    for (size_t i = 0; i < n; ++i) items.push_back(et == ValueType::ARRAY ? pick_value(in, false) : pick_scalar(in, et));
    if (et == ValueType::ARRAY)  // nested arrays hold arrays: wrap each non-array item
        for (Value& v : items)
            if (v.type() != ValueType::ARRAY) v = Value::array(v.type(), {v});
    return Value::array(et, std::move(items));
}

// ---------------------------------------------------------------------------------------------
// Mutations.

// Hyper-parameters first: a zero byte (the most common) picks one whose change may still load.
constexpr const char* kKeys[] = {
    "llama.context_length", "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon",
    "llama.rope.scaling.factor", "llama.rope.scaling.type", "llama.rope.dimension_count", "llama.attention.key_length",
    "llama.attention.value_length", "llama.attention.head_count", "llama.attention.head_count_kv",
    "llama.embedding_length", "llama.block_count", "llama.feed_forward_length", "tokenizer.ggml.pre",
    "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
    "tokenizer.ggml.padding_token_id", "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.add_bos_token",
    "tokenizer.ggml.add_eos_token", "tokenizer.chat_template", "tokenizer.ggml.token_type", "tokenizer.ggml.merges",
    "tokenizer.ggml.tokens", "tokenizer.ggml.model", "general.name", "general.file_type", "general.alignment",
    "general.architecture",
};
constexpr const char* kIdKeys[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                   "tokenizer.ggml.padding_token_id", "tokenizer.ggml.unknown_token_id"};
constexpr DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16,   DType::Q8_0,  DType::Q4_0,  DType::Q4_1,
                            DType::Q5_0, DType::Q5_1, DType::Q8_1,   DType::Q2_K,  DType::Q3_K,  DType::Q4_K,
                            DType::Q5_K, DType::Q6_K, DType::Q8_K,   DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4,
                            DType::I8,   DType::I32,  DType::F64,    DType::IQ2_XXS, DType::TQ1_0, DType::Q1_0};
constexpr int64_t kDims[] = {1, 2, 3, 4, 8, 16, 31, 32, 33, 48, 64, 96, 128, 256, 512};
constexpr const char* kTensorNames[] = {"token_embd.weight", "output.weight", "output_norm.weight", "blk.0.attn_q.weight",
                                        "blk.1.attn_norm.weight", "blk.2.ffn_up.weight", "rope_freqs.weight", ""};

constexpr uint64_t kMaxTensorBytes = uint64_t{2} << 20;  // per model, so an iteration stays fast

/// Replaces, appends or drops one item of a string array (tokens, merges).
void edit_strings(fuzz::Input& in, ModelSpec& m, const char* key) {
    Value* v = m.find(key);
    if (!v || v->type() != ValueType::ARRAY || v->array_type() != ValueType::STRING) return;
    std::vector<std::string> items;
    for (size_t i = 0; i < v->array_size(); ++i) items.emplace_back(v->string_at(i));
    const uint8_t op = in.u8() % 4;
    const size_t at = items.empty() ? 0 : in.below(items.size());
    if (op == 0 && !items.empty()) items[at] = in.bytes(16);
    if (op == 1 && !items.empty()) items[at] = items[in.below(items.size())];  // a repeat
    if (op == 2) items.push_back(in.flag() ? in.bytes(16) : items.empty() ? "" : items[at] + " " + items[in.below(items.size())]);
    if (op == 3 && !items.empty()) items.erase(items.begin() + static_cast<ptrdiff_t>(at));
    *v = Value::strings(items);
}

/// Sets one token type (0..7, or any int32) or appends one.
void edit_types(fuzz::Input& in, ModelSpec& m) {
    Value* v = m.find("tokenizer.ggml.token_type");
    if (!v || v->type() != ValueType::ARRAY || v->array_type() != ValueType::INT32) return;
    std::vector<int32_t> types(v->array_size());
    std::memcpy(types.data(), v->packed_bytes().data(), types.size() * sizeof(int32_t));  // little-endian host
    const uint8_t op = in.u8() % 3;
    if (op == 0 && !types.empty()) types[in.below(types.size())] = static_cast<int32_t>(in.below(8));
    if (op == 1 && !types.empty()) types[in.below(types.size())] = static_cast<int32_t>(pick_int(in));
    if (op == 2) types.push_back(1);
    *v = Value::i32s(types);
}

/// Bytes of a tensor of this type and shape, or 0 when the shape is not one (a row that is not a
/// whole number of blocks, a dimension < 1) or too large.
uint64_t tensor_bytes(const TensorSpec& t) {
    if (t.ne.empty() || t.ne.size() > 4) return 0;
    uint64_t rows = 1;
    for (size_t d = 0; d < t.ne.size(); ++d) {
        if (t.ne[d] < 1 || t.ne[d] > 4096) return 0;
        if (d > 0) rows *= static_cast<uint64_t>(t.ne[d]);
    }
    const DTypeInfo& info = dtype_info(t.type);
    if (t.ne[0] % info.block_size != 0) return 0;
    return static_cast<uint64_t>(t.ne[0]) / info.block_size * info.block_bytes * rows;
}

uint64_t total_bytes(const ModelSpec& m) {
    uint64_t n = 0;
    for (const TensorSpec& t : m.tensors) n += tensor_bytes(t);
    return n;
}

/// Applies one mutation chosen by the input.
void mutate(fuzz::Input& in, ModelSpec& m) {
    const uint8_t op = in.u8() % 14;
    switch (op) {
        case 0:
        case 1: {  // a known key, any value
            const std::string key = in.pick(kKeys);
            m.set(key, pick_value(in));
            break;
        }
        case 2: {  // a known key, an integer from the interesting list in its own type
            const std::string key = in.pick(kKeys);
            m.set(key, Value::u32(static_cast<uint32_t>(pick_int(in))));
            break;
        }
        case 3: {  // drop a key
            if (!m.kv.empty()) m.kv.erase(m.kv.begin() + static_cast<ptrdiff_t>(in.below(m.kv.size())));
            break;
        }
        case 4: edit_strings(in, m, "tokenizer.ggml.tokens"); break;
        case 5: edit_strings(in, m, "tokenizer.ggml.merges"); break;
        case 6: edit_types(in, m); break;
        case 7: {  // a special token id near the vocabulary's size
            const Value* tokens = m.find("tokenizer.ggml.tokens");
            const size_t n = tokens && tokens->type() == ValueType::ARRAY ? tokens->array_size() : 0;
            const std::string key = in.pick(kIdKeys);
            const uint8_t how = in.u8() % 4;
            if (how == 0) m.set(key, Value::u32(static_cast<uint32_t>(in.below(n + 2))));
            if (how == 1) m.set(key, Value::i32(-1));
            if (how == 2) m.set(key, Value::i64(static_cast<int64_t>(n)));
            if (how == 3) m.set(in.flag() ? "tokenizer.ggml.add_bos_token" : "tokenizer.ggml.add_eos_token", Value::boolean(in.flag()));
            break;
        }
        case 8: {  // a tensor's type
            if (m.tensors.empty()) break;
            TensorSpec& t = m.tensors[in.below(m.tensors.size())];
            const DType old = t.type;
            t.type = in.pick(kTypes);
            if (tensor_bytes(t) == 0 || total_bytes(m) > kMaxTensorBytes) t.type = old;
            break;
        }
        case 9: {  // a tensor's dimension: changed, added or dropped
            if (m.tensors.empty()) break;
            TensorSpec& t = m.tensors[in.below(m.tensors.size())];
            const std::vector<int64_t> old = t.ne;
            const uint8_t how = in.u8() % 4;
            const size_t d = in.below(t.ne.size());
            if (how <= 1) t.ne[d] = in.pick(kDims);
            if (how == 2 && t.ne.size() < 4) t.ne.push_back(in.pick(kDims));
            if (how == 3 && t.ne.size() > 1) t.ne.pop_back();
            if (tensor_bytes(t) == 0 || total_bytes(m) > kMaxTensorBytes) t.ne = old;
            break;
        }
        case 10: {  // drop a tensor
            if (!m.tensors.empty()) m.tensors.erase(m.tensors.begin() + static_cast<ptrdiff_t>(in.below(m.tensors.size())));
            break;
        }
        case 11: {  // rename a tensor (possibly onto another's name: the writer refuses duplicates)
            if (m.tensors.empty()) break;
            TensorSpec& t = m.tensors[in.below(m.tensors.size())];
            t.name = in.flag() ? std::string(in.pick(kTensorNames)) : in.bytes(24);
            break;
        }
        case 12: {  // duplicate a tensor under a new name
            if (m.tensors.empty()) break;
            TensorSpec copy = m.tensors[in.below(m.tensors.size())];
            copy.name = in.pick(kTensorNames);
            m.tensors.push_back(copy);
            if (total_bytes(m) > kMaxTensorBytes) m.tensors.pop_back();
            break;
        }
        default: {  // raw random bytes as a tensor's data (NaN / inf scales and values)
            if (!m.tensors.empty()) m.tensors[in.below(m.tensors.size())].raw = true;
            break;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Serialization: tensor data is made from (seed, name, type, shape) and cached, since most
// iterations use the base model's tensors.

const std::vector<uint8_t>& tensor_data(const TensorSpec& t, uint32_t seed) {
    using Key = std::tuple<std::string, DType, std::vector<int64_t>, bool, uint32_t>;
    static std::map<Key, std::vector<uint8_t>> cache;
    static uint64_t cached_bytes = 0;
    Key key{t.name, t.type, t.ne, t.raw, seed};
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    if (cached_bytes > (uint64_t{64} << 20)) cache.clear(), cached_bytes = 0;
    std::vector<uint8_t> bytes(tensor_bytes(t));
    cached_bytes += bytes.size();
    std::mt19937 rng(seed ^ static_cast<uint32_t>(std::hash<std::string>{}(t.name)));
    const int64_t k = t.ne[0];
    const int64_t rows = static_cast<int64_t>(bytes.size() / dtype_row_bytes(t.type, k));
    if (t.raw || !quant::has_quantize(t.type)) {
        for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    } else {
        // At most 4 distinct rows, repeated: quantizing k-quant rows (a search per block) under the
        // sanitizers would otherwise take seconds for the largest tensors.
        const bool norm = t.ne.size() == 1;
        std::normal_distribution<float> dist(norm ? 1.0f : 0.0f, norm ? 0.1f : 0.2f);
        std::vector<float> row(static_cast<size_t>(k));
        const uint64_t row_bytes = dtype_row_bytes(t.type, k);
        for (int64_t r = 0; r < rows; ++r) {
            uint8_t* dst = bytes.data() + r * row_bytes;
            if (r >= 4) {
                std::memcpy(dst, bytes.data() + (r % 4) * row_bytes, row_bytes);
                continue;
            }
            for (float& x : row) x = dist(rng);
            quant::quantize_row(t.type, row.data(), dst, k);
        }
    }
    return cache.emplace(std::move(key), std::move(bytes)).first->second;
}

/// The model as a GGUF file. Keys or tensors the writer refuses (a mistyped well-known key such
/// as general.alignment, a duplicate tensor name) are left out, as if the mutation had dropped them.
std::vector<uint8_t> serialize(const ModelSpec& m) {
    gguf::Writer w;
    for (const gguf::KeyValue& e : m.kv) {
        try {
            w.set(e.key, e.value);
        } catch (const Error&) {
        }
    }
    for (const TensorSpec& t : m.tensors) {
        if (tensor_bytes(t) == 0) continue;
        const std::vector<uint8_t>& data = tensor_data(t, m.seed);
        try {
            w.add_tensor(t.name, t.type, t.ne, data.data(), data.size());
        } catch (const Error&) {
        }
    }
    return w.to_bytes();
}

std::string model_path() {
    std::filesystem::path dir = "/dev/shm";
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) dir = std::filesystem::temp_directory_path();
    return (dir / ("tessel-fuzz-model-load-" + std::to_string(getpid()) + ".gguf")).string();
}

const std::string& path() {
    static const std::string p = [] {
        std::string s = model_path();
        std::atexit([] { std::remove(model_path().c_str()); });
        return s;
    }();
    return p;
}

void write_file(const std::vector<uint8_t>& bytes) {
    FILE* f = std::fopen(path().c_str(), "wb");
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0)
        broken("cannot write " + path());
}

// ---------------------------------------------------------------------------------------------
// After a successful load: tokenize, detokenize, decode.

constexpr const char* kCacheTypes[] = {"f16", "f32", "q8_0"};
constexpr int64_t kCtx[] = {0, 1, 3, 32};  // 0: the model's context_length, at most 4096

/// options: bit 0 add BOS/EOS, 1 parse special tokens, 2 render special pieces, 3 decode, 4-5 the
/// context size, 6 two-token ubatches, 7 flash attention off; cache: the K and V cache types.
void run(const std::shared_ptr<const Model>& model, uint8_t options, uint8_t cache, std::string_view text) {
    const ModelInfo& info = model->info();
    const std::vector<int32_t> ids = model->tokenize(text, options & 1, options & 2);
    for (const int32_t id : ids) {
        if (id < 0 || id >= info.n_vocab) broken("tokenize gave id " + std::to_string(id) + " outside the vocabulary");
        (void)model->token_to_piece(id, options & 4);
        (void)model->is_eog(id);
    }
    (void)model->chat_template();
    if (!(options & 8)) return;

    ContextParams p;
    p.n_threads = 1;
    p.n_ctx = kCtx[(options >> 4) & 3];
    p.n_ubatch = options & 64 ? 2 : 512;
    p.flash_attn = options & 128 ? FlashAttn::Off : FlashAttn::On;
    p.type_k = kCacheTypes[(cache & 15) % std::size(kCacheTypes)];
    p.type_v = kCacheTypes[(cache >> 4) % std::size(kCacheTypes)];
    Context ctx(model, p);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < ids.size() && i < 3; ++i) batch.push_back({ids[i], static_cast<int32_t>(i), 0, false});
    if (batch.empty()) batch.push_back({0, 0, 0, false});
    batch.back().logits = true;
    ctx.decode(batch);
    if (ctx.n_outputs() != 1 || ctx.logits(0).size() != static_cast<size_t>(info.n_vocab)) broken("wrong number of logits");
    const BatchToken next{batch.back().token, static_cast<int32_t>(batch.size()), 0, true};
    ctx.decode({&next, 1});
    if (ctx.logits(0).size() != static_cast<size_t>(info.n_vocab)) broken("wrong number of logits after a second step");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::Input in(data, size);
    const uint8_t g = in.u8();
    ModelSpec m = base_model(kGeometries[g % std::size(kGeometries)], g / std::size(kGeometries));
    const uint8_t options = in.u8(), cache = in.u8();
    const size_t n_mutations = in.below(16);
    std::shared_ptr<const Model> model;
    std::string_view text;
    try {
        for (size_t i = 0; i < n_mutations; ++i) mutate(in, m);
        text = in.rest().substr(0, 64);
        write_file(serialize(m));
    } catch (const tessel::Error&) {
        return 0;  // a mutation the writer cannot express
    }
    try {
        model = Model::load(path(), "cpu");
    } catch (const tessel::Error& e) {
        // The expected outcome for most mutations. The message names the file (and the key or
        // tensor: not checked here), so a user can tell which model is bad.
        if (std::string_view(e.what()).find(path()) == std::string_view::npos)
            broken(std::string("a load error names no file: ") + e.what());
        return 0;
    }
    try {
        run(model, options, cache, text);
    } catch (const tessel::Error&) {
        // e.g. a context that cannot hold the tokens, a cache type the head size does not allow
    }
    return 0;
}
