// Test helper: give every tensor of a graph host memory and run the graph on the reference
// kernels. (The real allocator with liveness reuse lives in src/graph; this one never reuses.)
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "graph/graph.hpp"

namespace tessel::test {

/// Owns one zeroed allocation per non-view tensor of a graph (plus slack so kernels that read
/// whole blocks never run off the end) and points views at their owner's storage.
class HostMemory {
public:
    /// Allocates for every tensor created in g so far (leaves and nodes, listed or not).
    explicit HostMemory(Graph& g);

    /// Fills a F32 tensor with values from f(i) for element i in ne order (contiguous only).
    template <class F>
    static void fill(Tensor& t, F f) {
        auto* p = static_cast<float*>(t.data);
        for (int64_t i = 0; i < t.n_elements(); ++i) p[i] = f(i);
    }

private:
    std::deque<std::vector<uint8_t>> storage_;
};

/// Runs g.nodes() in order on the reference kernels with n_threads threads.
void run_reference(Graph& g, int n_threads);

}  // namespace tessel::test
