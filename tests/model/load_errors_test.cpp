// Model load rejects bad hyper-parameters and shapes with tessel::Error(BadModel) naming the file
// and the key or tensor. Each case here was found by fuzz_model_load (tests/fuzz/) on a tiny llama
// whose metadata it mutated.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "model/model.hpp"
#include "support/test_paths.hpp"
#include "support/tiny_llama.hpp"
#include "tessel/errors.hpp"

namespace tessel {
namespace {

using gguf::KeyValue;
using gguf::Value;

/// Loads a tiny llama with `overrides` and returns the error it must give.
Error load_error(const std::string& file, std::vector<KeyValue> overrides) {
    test::TinyLlamaOptions opt;
    opt.overrides = std::move(overrides);
    const std::string path = test::write_tiny_llama(test::temp_dir() / file, opt).string();
    try {
        model::Model::load(path, {&cpu::cpu_device()});
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "the file is not named: " << e.what();
        return e;
    }
    ADD_FAILURE() << file << ": loaded";
    return Error(ErrorCode::Io, "");
}

void expect_bad_model(const Error& e, const std::string& names) {
    EXPECT_EQ(e.code(), ErrorCode::BadModel) << e.what();
    EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
}

// A float key that is not a finite positive float: an infinite or NaN epsilon or rope base gave a
// model that loaded and computed NaN, a FLOAT64 beyond float's range was converted to float
// (undefined behaviour in C++), and a denormal rope scaling factor made ROPE refuse its infinite
// inverse with an error naming no key or file.
TEST(ModelLoadErrors, FloatKeysMustBeFinitePositiveFloats) {
    const double inf = std::numeric_limits<double>::infinity();
    const struct {
        const char* key;
        Value value;
    } cases[] = {
        {"llama.attention.layer_norm_rms_epsilon", Value::f32(static_cast<float>(inf))},
        {"llama.attention.layer_norm_rms_epsilon", Value::f32(std::numeric_limits<float>::quiet_NaN())},
        {"llama.rope.freq_base", Value::f64(1e300)},
        {"llama.rope.freq_base", Value::f64(1e-300)},  // rounds to 0 as a float
        {"llama.rope.scaling.factor", Value::f32(static_cast<float>(inf))},
        {"llama.rope.scaling.factor", Value::f32(1e-45f)},  // a denormal: 1 / factor is inf
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(std::string(c.key) + " = " + c.value.to_string());
        expect_bad_model(load_error("tiny-bad-float.gguf", {{c.key, c.value}}), c.key);
    }
    // Large and small values a float holds still load.
    test::TinyLlamaOptions ok;
    ok.overrides = {{"llama.rope.freq_base", Value::f64(1e30)}, {"llama.attention.layer_norm_rms_epsilon", Value::f32(1e-30f)}};
    EXPECT_NO_THROW(model::Model::load(test::write_tiny_llama(test::temp_dir() / "tiny-float-range.gguf", ok).string(),
                                       {&cpu::cpu_device()}));
}

// head_count x key_length overflowed int64 when the load computed the query width (each key may be
// up to 2^40): UBSan's signed-overflow report.
TEST(ModelLoadErrors, HeadCountTimesKeyLengthOutOfRange) {
    const uint64_t big = uint64_t{1} << 32;
    expect_bad_model(load_error("tiny-head-overflow.gguf", {{"llama.embedding_length", Value::u64(big)},
                                                            {"llama.attention.head_count", Value::u64(big)},
                                                            {"llama.attention.head_count_kv", Value::u64(big)},
                                                            {"llama.attention.key_length", Value::u64(uint64_t{1} << 40)}}),
                     "attention.key_length");
}

// An embedding length that is not a whole number of the weights' blocks (48 for Q8_0's 32) made
// the expected shape itself invalid: the error was InvalidArgument naming neither file nor tensor.
TEST(ModelLoadErrors, ShapeTheTypeCannotHoldNamesTheTensor) {
    expect_bad_model(load_error("tiny-embd-48.gguf", {{"llama.embedding_length", Value::u32(48)}}),
                     "tensor 'token_embd.weight' has shape [128, 160, 1, 1], expected [48, 160, 1, 1]");
}

// A context length beyond int32 (positions and rope's n_ctx_orig are int32) was truncated when the
// graph was built: ROPE refused the negative result with an error naming no key.
TEST(ModelLoadErrors, ContextLengthBeyondInt32) {
    expect_bad_model(load_error("tiny-ctx.gguf", {{"llama.context_length", Value::u64(uint64_t{1} << 32)}}),
                     "llama.context_length = 4294967296 is out of range");
}

// An integer weight type (the kernels read I8..I64): an I32 token_embd made GET_ROWS give I32 rows
// that RMS_NORM refused with an error naming no file or tensor.
TEST(ModelLoadErrors, IntegerWeightsAreRejected) {
    test::TinyLlamaOptions opt;
    opt.matrix_type = DType::I32;
    const std::string path = test::write_tiny_llama(test::temp_dir() / "tiny-i32.gguf", opt).string();
    try {
        model::Model::load(path, {&cpu::cpu_device()});
        FAIL() << "loaded";
    } catch (const Error& e) {
        expect_bad_model(e, path + ": tensor 'token_embd.weight' has type I32, expected a float or quantized type");
    }
}

}  // namespace
}  // namespace tessel
