// Helpers for the reference-kernel tests (ref_*_test.cpp): element access by indices through nb
// strides for F32/F16/BF16/I32 tensors, random fills, and running a graph on 1 and 3 threads
// with a check that every result is bit-identical.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "core/fp16.hpp"
#include "graph/graph.hpp"
#include "quant/quant.hpp"
#include "support/host_graph.hpp"

namespace reftest {

using tessel::DType;
using tessel::Tensor;

inline uint8_t* addr(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<uint8_t*>(t.data) + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

/// Element of a F32/F16/BF16 tensor as float.
inline float get(const Tensor& t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
    const uint8_t* p = addr(t, i0, i1, i2, i3);
    uint16_t h;
    float f;
    switch (t.type) {
        case DType::F16: std::memcpy(&h, p, 2); return tessel::fp16_to_fp32(h);
        case DType::BF16: std::memcpy(&h, p, 2); return tessel::bf16_to_fp32(h);
        default: std::memcpy(&f, p, 4); return f;
    }
}

inline void set(Tensor& t, float v, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
    uint8_t* p = addr(t, i0, i1, i2, i3);
    uint16_t h;
    switch (t.type) {
        case DType::F16: h = tessel::fp32_to_fp16(v); std::memcpy(p, &h, 2); return;
        case DType::BF16: h = tessel::fp32_to_bf16(v); std::memcpy(p, &h, 2); return;
        default: std::memcpy(p, &v, 4); return;
    }
}

inline int32_t get_i32(const Tensor& t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
    int32_t v;
    std::memcpy(&v, addr(t, i0, i1, i2, i3), 4);
    return v;
}
inline void set_i32(Tensor& t, int32_t v, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
    std::memcpy(addr(t, i0, i1, i2, i3), &v, 4);
}
inline void set_i64(Tensor& t, int64_t v, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
    std::memcpy(addr(t, i0, i1, i2, i3), &v, 8);
}

/// Calls f(i0, i1, i2, i3) for every element of t in ne order.
template <class F>
void for_each(const Tensor& t, F f) {
    for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t.ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) f(i0, i1, i2, i3);
}

/// Uniform random values in [lo, hi) into every element of a F32/F16/BF16 tensor.
inline void fill_random(Tensor& t, std::mt19937& rng, float lo = -2.0f, float hi = 2.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    for_each(t, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) { set(t, dist(rng), i0, i1, i2, i3); });
}

inline std::vector<uint8_t> bytes_of(const Tensor& t) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    return {p, p + t.n_bytes()};
}

/// Runs g on the reference kernels with 1 thread, then again with 3, and requires the bytes of
/// every tensor in `outs` to be identical. Outputs with their own storage are poisoned (0xA5)
/// before each run so an element a kernel forgets to write shows up.
inline void run_1_and_3(tessel::Graph& g, const std::vector<Tensor*>& outs) {
    auto poison = [&] {
        for (Tensor* t : outs)
            if (!t->view_src) std::memset(t->data, 0xA5, t->n_bytes());
    };
    poison();
    tessel::test::run_reference(g, 1);
    std::vector<std::vector<uint8_t>> first;
    for (Tensor* t : outs) first.push_back(bytes_of(*t));
    poison();
    tessel::test::run_reference(g, 3);
    size_t i = 0;
    for (Tensor* t : outs) EXPECT_EQ(bytes_of(*t), first[i++]) << "1 vs 3 threads differ for " << describe(*t);
}

/// n uniform random floats in [lo, hi) from a fixed seed.
inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

/// Writes logical values (ne order) into a contiguous tensor of any quantizable type, row by row.
inline void set_values(Tensor& t, const std::vector<float>& v) {
    ASSERT_TRUE(t.is_contiguous());
    ASSERT_EQ(static_cast<int64_t>(v.size()), t.n_elements());
    const int64_t K = t.ne[0];
    for (int64_t r = 0; r < t.n_rows(); ++r)
        tessel::quant::quantize_row(t.type, &v[r * K], static_cast<uint8_t*>(t.data) + r * t.nb[1], K);
}

/// Writes I32 values into a contiguous I32 tensor.
inline void set_ints(Tensor& t, const std::vector<int32_t>& v) {
    ASSERT_EQ(t.type, DType::I32);
    ASSERT_EQ(static_cast<int64_t>(v.size()), t.n_elements());
    std::memcpy(t.data, v.data(), v.size() * sizeof(int32_t));
}

/// Logical values of a contiguous tensor, dequantized row by row.
inline std::vector<float> get_values(const Tensor& t) {
    std::vector<float> v(t.n_elements());
    const int64_t K = t.ne[0];
    for (int64_t r = 0; r < t.n_rows(); ++r)
        tessel::quant::dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * t.nb[1], &v[r * K], K);
    return v;
}

/// Runs the graph with 1 and then 3 threads (output poisoned in between), requires identical
/// bits and returns the output values.
inline std::vector<float> run_values_1_and_3(tessel::Graph& g, Tensor* out) {
    tessel::test::run_reference(g, 1);
    std::vector<float> first = get_values(*out);
    std::memset(out->data, 0xff, out->n_bytes());  // NaN pattern: every element must be rewritten
    tessel::test::run_reference(g, 3);
    std::vector<float> second = get_values(*out);
    EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0)
        << "results differ between 1 and 3 threads";
    return first;
}

}  // namespace reftest
