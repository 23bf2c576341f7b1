// `tessel quantize` end to end (model/quantize.hpp) on tiny llama GGUFs: the written tensors are
// quantize_row(dequantize_row(source)) of the reference kernels, bit for bit, with the types of
// the plan; metadata is kept; the result loads and decodes like its weights dequantized to F32;
// bad input gives tessel::Error and leaves no output file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cpu/cpu_backend.hpp"
#include "gguf/writer.hpp"
#include "model/quantize.hpp"
#include "quant/quant.hpp"
#include "runtime/context.hpp"
#include "support/nmse.hpp"
#include "support/test_paths.hpp"
#include "support/tiny_llama.hpp"
#include "tessel/errors.hpp"

namespace tessel {
namespace {

namespace fs = std::filesystem;

fs::path tiny(const fs::path& dir, DType type, int64_t n_embd, bool tied) {
    test::TinyLlamaOptions o;
    o.matrix_type = type;
    o.n_embd = n_embd;
    o.n_ff = 2 * n_embd;
    o.tied_output = tied;
    return test::write_tiny_llama(dir / (std::string("tiny-") + dtype_name(type) + ".gguf"), o);
}

/// Checks every tensor of `out` against `in`: the planned type, and data equal to the reference
/// conversion of the source rows (or the source bytes when the type is unchanged).
void expect_converted(const gguf::File& in, const gguf::File& out, const model::QuantPlan& plan) {
    ASSERT_EQ(out.tensors().size(), in.tensors().size());
    for (const model::TensorPlan& p : plan.tensors) {
        const gguf::TensorInfo& src = *p.info;
        SCOPED_TRACE(src.name);
        const gguf::TensorInfo* dst = out.find_tensor(src.name);
        ASSERT_NE(dst, nullptr);
        ASSERT_EQ(dst->type, p.to);
        ASSERT_EQ(dst->n_dims, src.n_dims);
        for (int d = 0; d < 4; ++d) ASSERT_EQ(dst->ne[d], src.ne[d]);
        if (src.type == dst->type) {
            ASSERT_EQ(dst->size, src.size);
            EXPECT_EQ(0, std::memcmp(out.tensor_data(*dst), in.tensor_data(src), src.size));
            continue;
        }
        const int64_t cols = src.ne[0], rows = src.n_elements() / cols;
        const uint64_t in_row = dtype_row_bytes(src.type, cols), out_row = dtype_row_bytes(dst->type, cols);
        ASSERT_EQ(dst->size, out_row * static_cast<uint64_t>(rows));
        std::vector<float> f(static_cast<size_t>(cols));
        std::vector<uint8_t> want(out_row);
        for (int64_t r = 0; r < rows; ++r) {
            quant::dequantize_row(src.type, in.tensor_data(src) + r * in_row, f.data(), cols);
            quant::quantize_row(dst->type, f.data(), want.data(), cols);
            ASSERT_EQ(0, std::memcmp(out.tensor_data(*dst) + r * out_row, want.data(), out_row)) << "row " << r;
        }
    }
}

void expect_metadata_kept(const gguf::File& in, const gguf::File& out, uint32_t file_type) {
    for (const gguf::KeyValue& kv : in.metadata()) {
        if (kv.key == "general.file_type" || kv.key == "general.quantization_version") continue;
        const gguf::Value* v = out.find(kv.key);
        ASSERT_NE(v, nullptr) << kv.key;
        EXPECT_TRUE(*v == kv.value) << kv.key;
    }
    ASSERT_NE(out.find("general.file_type"), nullptr);
    EXPECT_TRUE(*out.find("general.file_type") == gguf::Value::u32(file_type));
    ASSERT_NE(out.find("general.quantization_version"), nullptr);
    EXPECT_TRUE(*out.find("general.quantization_version") == gguf::Value::u32(2));
    const size_t added = (in.find("general.file_type") ? 0 : 1) + (in.find("general.quantization_version") ? 0 : 1);
    EXPECT_EQ(out.metadata().size(), in.metadata().size() + added);
}

/// Logits of 24 tokens decoded in one batch.
std::vector<std::vector<float>> logits(const fs::path& path) {
    auto m = model::Model::load(path.string(), {&cpu::cpu_device()});
    runtime::ContextParams p;
    p.n_ctx = 64;
    p.n_threads = 2;
    runtime::Context ctx(m, p);
    std::vector<runtime::BatchToken> b;
    for (int32_t i = 0; i < 24; ++i) b.push_back({(i * 37 + 11) % 160, i, 0, true});
    ctx.decode(b);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < ctx.n_outputs(); ++i) out.emplace_back(ctx.logits(i).begin(), ctx.logits(i).end());
    return out;
}


/// `path` with every block-quantized tensor dequantized to F32 (the reference kernels), written
/// next to it: the function the quantized file's weights define, without quantized matmuls.
fs::path f32_twin(const fs::path& path) {
    const gguf::File f = gguf::File::open(path.string());
    gguf::Writer w;
    for (const gguf::KeyValue& kv : f.metadata()) w.set(kv.key, kv.value);
    for (const gguf::TensorInfo& t : f.tensors()) {
        std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
        if (!dtype_info(t.type).quantized) {
            w.add_tensor(t.name, t.type, ne, f.tensor_data(t), t.size);
            continue;
        }
        std::vector<float> v(static_cast<size_t>(t.n_elements()));
        const uint64_t row = dtype_row_bytes(t.type, t.ne[0]);
        for (int64_t r = 0; r < t.n_elements() / t.ne[0]; ++r)
            quant::dequantize_row(t.type, f.tensor_data(t) + r * row, v.data() + r * t.ne[0], t.ne[0]);
        w.add_tensor(t.name, DType::F32, ne, v.data(), v.size() * sizeof(float));
    }
    const fs::path twin = path.string() + ".f32.gguf";
    w.write_file(twin.string());
    return twin;
}

/// The quantized model decodes what its weights say: logits close to its F32 twin's. The
/// difference is the 8-bit activation quantization inside each of the 15 quantized matmuls,
/// amplified by two random blocks (up to ~9e-3 seen here); other weights differ far more (the
/// F32 source and its Q4_K copy: 0.02 to 0.5).
void expect_decodes(const fs::path& path) {
    const auto ref = logits(f32_twin(path)), got = logits(path);
    ASSERT_EQ(ref.size(), got.size());
    for (size_t i = 0; i < ref.size(); ++i) {
        for (float v : got[i]) ASSERT_TRUE(std::isfinite(v));
        EXPECT_LT(test::nmse(got[i], ref[i]), 2e-2) << "token " << i;
    }
}


TEST(Quantize, F32ToQ4KMatchesReferenceAndDecodes) {
    // Rows of 128 (fallbacks to Q5_0 / Q8_0) and ffn_down rows of 256 (Q4_K / Q6_K).
    const fs::path dir = test::temp_dir();
    const fs::path src = tiny(dir, DType::F32, 128, false), dst = dir / "q4k.gguf";
    const model::QuantTarget& target = model::find_quant_target("Q4_K");
    size_t seen = 0;
    const model::QuantizeStats st = model::quantize_model(src.string(), dst.string(), target, {}, 2,
                                                          [&](const model::TensorPlan&) { ++seen; });
    const gguf::File in = gguf::File::open(src.string()), out = gguf::File::open(dst.string());
    EXPECT_EQ(seen, in.tensors().size());
    EXPECT_EQ(st.file_bytes, out.file_size());
    const model::QuantPlan plan = model::plan_quantization(in, target, {});
    expect_converted(in, out, plan);
    expect_metadata_kept(in, out, 15);
    uint64_t bytes_in = 0, bytes_out = 0;
    for (const auto& t : in.tensors()) bytes_in += t.size;
    for (const auto& t : out.tensors()) bytes_out += t.size;
    EXPECT_EQ(st.bytes_in, bytes_in);
    EXPECT_EQ(st.bytes_out, bytes_out);
    expect_decodes(dst);
}

TEST(Quantize, RequantizesQ8_0WithThreads) {
    // A quantized, tied source with rows of 256: every matrix is dequantized and requantized.
    const fs::path dir = test::temp_dir();
    const fs::path src = tiny(dir, DType::Q8_0, 256, true);
    for (const char* type : {"Q4_0", "IQ4_NL", "Q6_K", "MXFP4"}) {
        SCOPED_TRACE(type);
        const fs::path dst = dir / (std::string(type) + ".gguf");
        const model::QuantTarget& target = model::find_quant_target(type);
        const model::QuantOptions opt{.pure = std::string(type) == "MXFP4", .allow_requantize = true};
        model::quantize_model(src.string(), dst.string(), target, opt, 3);
        const gguf::File in = gguf::File::open(src.string()), out = gguf::File::open(dst.string());
        expect_converted(in, out, model::plan_quantization(in, target, opt));
        expect_metadata_kept(in, out, target.file_type);
        expect_decodes(dst);
    }
}

/// Runs `f`, expecting tessel::Error with `code` whose message contains `part`.
template <class F>
void expect_error(F f, ErrorCode code, const std::string& part) {
    try {
        f();
        ADD_FAILURE() << "expected an error containing " << part;
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), code) << e.what();
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

TEST(Quantize, ErrorsNameTheProblemAndLeaveNoOutput) {
    const fs::path dir = test::temp_dir();
    const fs::path f32 = tiny(dir, DType::F32, 128, false), q8 = tiny(dir, DType::Q8_0, 128, false);
    const fs::path out = dir / "out.gguf";
    const model::QuantTarget& q4 = model::find_quant_target("Q4_0");
    auto no_output = [&] {
        EXPECT_FALSE(fs::exists(out));
        EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
    };

    expect_error([&] { model::quantize_model(q8.string(), out.string(), q4, {}, 1); }, ErrorCode::InvalidArgument,
                 "--allow-requantize");
    no_output();
    expect_error([&] { model::quantize_model((dir / "missing.gguf").string(), out.string(), q4, {}, 1); }, ErrorCode::Io,
                 "missing.gguf");
    no_output();
    expect_error([&] { model::quantize_model(f32.string(), (dir / "no-such-dir" / "o.gguf").string(), q4, {}, 1); },
                 ErrorCode::Io, "no-such-dir");
    expect_error([&] { model::quantize_model(f32.string(), out.string(), q4, {}, 0); }, ErrorCode::InvalidArgument,
                 "threads");
    no_output();

    // The input named twice, also through another spelling: refused before anything is written.
    std::ifstream before_in(f32, std::ios::binary);
    const std::string before{std::istreambuf_iterator<char>(before_in), {}};
    const fs::path other_spelling = dir / "." / f32.filename();
    for (const fs::path& same : {f32, other_spelling})
        expect_error([&] { model::quantize_model(f32.string(), same.string(), q4, {}, 1); }, ErrorCode::InvalidArgument,
                     "is the input file");
    std::ifstream after_in(f32, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(after_in), {}), before);
    EXPECT_FALSE(fs::exists(f32.string() + ".tmp"));
}

}  // namespace
}  // namespace tessel
