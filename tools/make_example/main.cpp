// tessel-make-example OUT.gguf: write a small, valid GGUF (llama-style metadata, a few tensors
// in F32 / F16 / Q8_0 / Q4_K) with tessel's own writer and quantizers. Used by scripts/run.sh
// to show `tessel info` before a real model is needed.
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "core/dtype.hpp"
#include "gguf/writer.hpp"
#include "quant/quant.hpp"

namespace {

using namespace tessel;

// Deterministic smooth test data: a few sines, no RNG state to keep.
std::vector<float> make_values(int64_t n, float freq) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = std::sin(freq * static_cast<float>(i)) * 0.5f + 0.01f * static_cast<float>(i % 7);
    return v;
}

void add_quantized(gguf::Writer& w, const std::string& name, DType type, int64_t ne0, int64_t ne1, float freq) {
    const std::vector<float> values = make_values(ne0 * ne1, freq);
    std::vector<uint8_t> bytes(dtype_row_bytes(type, ne0) * static_cast<uint64_t>(ne1));
    const uint64_t row = dtype_row_bytes(type, ne0);
    for (int64_t r = 0; r < ne1; ++r) quant::quantize_row(type, values.data() + r * ne0, bytes.data() + r * row, ne0);
    std::vector<int64_t> shape{ne0};
    if (ne1 > 1) shape.push_back(ne1);
    w.add_tensor(name, type, shape, bytes.data(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 || argv[1][0] == '-') {
        std::fprintf(stderr, "usage: %s OUT.gguf\n", argv[0]);
        return 2;
    }
    try {
        gguf::Writer w;
        w.set("general.architecture", gguf::Value::string("llama"));
        w.set("general.name", gguf::Value::string("tessel example"));
        w.set("llama.context_length", gguf::Value::u32(256));
        w.set("llama.embedding_length", gguf::Value::u32(256));
        w.set("llama.block_count", gguf::Value::u32(1));
        w.set("llama.rope.freq_base", gguf::Value::f32(10000.0f));
        std::vector<gguf::Value> tokens;
        for (const char* t : {"<s>", "</s>", "hello", "world"}) tokens.push_back(gguf::Value::string(t));
        w.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::STRING, std::move(tokens)));
        add_quantized(w, "token_embd.weight", DType::Q8_0, 256, 4, 0.05f);
        add_quantized(w, "blk.0.attn_norm.weight", DType::F32, 256, 1, 0.0f);
        add_quantized(w, "blk.0.ffn_up.weight", DType::Q4_K, 256, 8, 0.11f);
        add_quantized(w, "output.weight", DType::F16, 256, 4, 0.07f);
        w.write_file(argv[1]);
        std::printf("wrote %s\n", argv[1]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tessel-make-example: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
