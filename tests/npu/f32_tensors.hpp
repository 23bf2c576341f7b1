// F32 tensor contents for the NPU host tests: a ramp written through the tensor's buffer, and the
// values read back.
#pragma once

#include <vector>

#include "backend/buffer.hpp"
#include "graph/tensor.hpp"

namespace tessel::npu {

/// Writes base + 0.25 * (i % 97) to element i of F32 tensor t.
inline void fill_ramp(Tensor& t, float base) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = base + 0.25f * static_cast<float>(i % 97);
    t.buffer->set_tensor(t, v.data(), 0, v.size() * sizeof(float));
}

/// The elements of F32 tensor t.
inline std::vector<float> read_f32(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    t.buffer->get_tensor(t, v.data(), 0, v.size() * sizeof(float));
    return v;
}

}  // namespace tessel::npu
