#include "support/tiny_llama.hpp"

#include <random>
#include <string>
#include <vector>

#include "gguf/reader.hpp"
#include "gguf/writer.hpp"
#include "quant/quant.hpp"

namespace tessel::test {

std::filesystem::path write_tiny_llama(const std::filesystem::path& path, const TinyLlamaOptions& opt) {
    constexpr int64_t H = 4;
    const int64_t E = opt.n_embd, L = opt.n_layer, D = E / H, F = opt.n_ff, Hkv = opt.n_head_kv;
    int64_t V = 160;
    gguf::Writer w;
    if (!opt.vocab_from.empty()) {
        const auto vocab = gguf::File::open(opt.vocab_from.string());
        for (const gguf::KeyValue& kv : vocab.metadata())
            if (kv.key.starts_with("tokenizer.")) w.set(kv.key, kv.value);
        V = static_cast<int64_t>(vocab.find("tokenizer.ggml.tokens")->array_size());
    }
    w.set("general.architecture", gguf::Value::string(opt.arch));
    w.set("general.name", gguf::Value::string("tiny-llama-test"));
    const std::string k = opt.layout + ".";
    w.set(k + "context_length", gguf::Value::u32(512));
    w.set(k + "embedding_length", gguf::Value::u32(E));
    w.set(k + "block_count", gguf::Value::u32(L));
    w.set(k + "feed_forward_length", gguf::Value::u32(F));
    w.set(k + "attention.head_count", gguf::Value::u32(H));
    w.set(k + "attention.head_count_kv", gguf::Value::u32(Hkv));
    w.set(k + "attention.layer_norm_rms_epsilon", gguf::Value::f32(1e-5f));
    w.set(k + "rope.freq_base", gguf::Value::f32(10000.0f));
    if (opt.n_swa > 0) w.set(k + "attention.sliding_window", gguf::Value::u32(opt.n_swa));
    if (opt.vocab) {
        std::vector<std::string> tokens;
        for (int64_t i = 0; i < V; ++i) tokens.push_back(std::to_string(i).insert(0, 1, 't'));
        w.set("tokenizer.ggml.model", gguf::Value::string("gpt2"));
        w.set("tokenizer.ggml.tokens", gguf::Value::strings(tokens));
        w.set("tokenizer.ggml.token_type", gguf::Value::i32s(std::vector<int32_t>(V, 1)));
        w.set("tokenizer.ggml.merges", gguf::Value::strings({"t 0"}));
        w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(0));
        w.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(true));
    }
    for (const gguf::KeyValue& kv : opt.overrides) w.set(kv.key, kv.value);

    std::mt19937 rng(opt.seed);
    auto add = [&](const std::string& name, int64_t k, int64_t n, float scale, DType type) {
        if (name == opt.omit) return;
        std::normal_distribution<float> dist(0.0f, scale);
        std::vector<float> values(static_cast<size_t>(k * n));
        for (float& v : values) v = type == DType::F32 && n == 1 ? 1.0f + dist(rng) : dist(rng);
        std::vector<uint8_t> bytes(dtype_row_bytes(type, k) * static_cast<size_t>(n));
        if (!quant::has_quantize(type)) {  // e.g. integer types: seeded bytes
            for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
        } else {
            for (int64_t r = 0; r < n; ++r)
                quant::quantize_row(type, values.data() + r * k, bytes.data() + r * dtype_row_bytes(type, k), k);
        }
        std::vector<int64_t> ne{k};
        if (n > 1) ne.push_back(n);
        w.add_tensor(name, type, ne, bytes.data(), bytes.size());
    };
    const DType m = opt.matrix_type;
    add("token_embd.weight", E, V, 1.0f, m);
    add("output_norm.weight", E, 1, 0.1f, DType::F32);
    if (!opt.tied_output) add("output.weight", E, V, 0.1f, m);
    for (int64_t il = 0; il < L; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        add(b + "attn_norm.weight", E, 1, 0.1f, DType::F32);
        add(b + "attn_q.weight", E, H * D, 0.15f, m);
        add(b + "attn_k.weight", E, Hkv * D, 0.15f, m);
        add(b + "attn_v.weight", E, Hkv * D, 0.15f, m);
        if (opt.layout == "qwen2")
            for (const char* bias : {"attn_q.bias", "attn_k.bias", "attn_v.bias"})
                add(b + bias, bias[5] == 'q' ? H * D : Hkv * D, 1, 0.1f, DType::F32);
        if (opt.layout == "qwen3" || opt.layout == "gemma3") {
            add(b + "attn_q_norm.weight", D, 1, 0.1f, DType::F32);
            add(b + "attn_k_norm.weight", D, 1, 0.1f, DType::F32);
        }
        add(b + "attn_output.weight", H * D, E, 0.1f, m);
        if (opt.layout == "gemma3") add(b + "post_attention_norm.weight", E, 1, 0.1f, DType::F32);
        add(b + "ffn_norm.weight", E, 1, 0.1f, DType::F32);
        add(b + "ffn_gate.weight", E, F, 0.1f, m);
        add(b + "ffn_up.weight", E, F, 0.1f, m);
        add(b + "ffn_down.weight", F, E, 0.1f, m);
        if (opt.layout == "gemma3") add(b + "post_ffw_norm.weight", E, 1, 0.1f, DType::F32);
    }
    w.write_file(path.string());
    return path;
}

}  // namespace tessel::test
