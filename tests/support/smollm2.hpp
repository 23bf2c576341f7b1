// Shared pieces of the tests that run the default model (SmolLM2-135M-Instruct Q4_1) against
// reference data in tests/data/smollm2/: where the cached model is, reading tensors of a
// reference GGUF, a teacher-forced forward pass, and the NMSE of a logit vector.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/reader.hpp"
#include "support/nmse.hpp"
#include "support/test_paths.hpp"
#include "tessel/engine.hpp"

namespace tessel::test {

/// The default model in tessel's cache (tools::model_cache_dir()); it may not exist.
std::filesystem::path smollm2_path();

/// Use in a test's SetUp when smollm2_path() does not exist: fails under CI (the model must have
/// been fetched), otherwise skips saying the test did not run.
#define TESSEL_REQUIRE_SMOLLM2()                                                                   \
    do {                                                                                           \
        if (!std::filesystem::exists(::tessel::test::smollm2_path())) {                            \
            if (::tessel::test::in_ci()) FAIL() << "default model missing from the cache (run tessel once to fetch it)"; \
            GTEST_SKIP() << "NOT RUN: default model not in the cache (run `tessel run -p hi` once to fetch it)"; \
        }                                                                                          \
    } while (0)

/// The data of tensor `name` of a reference file as T values. Throws std::runtime_error when the
/// tensor is missing.
template <typename T>
std::vector<T> reference_tensor(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* info = f.find_tensor(name);
    if (!info) throw std::runtime_error("reference data lacks " + name);
    std::vector<T> out(info->size / sizeof(T));
    std::memcpy(out.data(), f.tensor_data(*info), info->size);
    return out;
}

/// Where a compute node (not a view) of a graph ran: its backend's device and the kernel.
struct NodeRun {
    std::string node;    ///< op and name, e.g. "MUL_MAT ffn_up-3"
    std::string device;  ///< e.g. "CPU", "NPU0"
    std::string kernel;  ///< Backend::kernel_name ("ref": the CPU's reference kernel)
};
/// The compute nodes of ctx's last graph, in order.
std::vector<NodeRun> last_graph_runs(Context& ctx);

/// Teacher-forced logits (n_vocab floats per position) of every position of `tokens`, decoded as
/// sequence 0 in ubatches of `n_ubatch` tokens with one thread (results do not depend on the
/// thread count; ctest -j2 runs two suites at once). `last_graph`, when given, gets the last
/// ubatch's last_graph_runs().
std::vector<std::vector<float>> teacher_forced_logits(const std::shared_ptr<const Model>& model,
                                                      const std::vector<int32_t>& tokens, FlashAttn fa,
                                                      int64_t n_ubatch, std::vector<NodeRun>* last_graph = nullptr);

}  // namespace tessel::test
