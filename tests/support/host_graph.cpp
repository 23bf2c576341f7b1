#include "support/host_graph.hpp"

#include "cpu/ref/ref.hpp"
#include "cpu/threadpool.hpp"

namespace tessel::test {

HostMemory::HostMemory(Graph& g) {
    // const_cast: the graph hands out const access to its arena; tests own the graph.
    for (const Tensor& ct : g.tensors()) {
        auto& t = const_cast<Tensor&>(ct);
        if (t.view_src) continue;
        storage_.emplace_back(t.n_bytes() + 64, 0);
        t.data = storage_.back().data();
    }
    for (const Tensor& ct : g.tensors()) {
        auto& t = const_cast<Tensor&>(ct);
        if (t.view_src) t.data = static_cast<uint8_t*>(t.view_src->data) + t.view_offset;
    }
}

void run_reference(Graph& g, int n_threads) {
    cpu::ThreadPool pool(n_threads);
    for (Tensor* node : g.nodes()) pool.run_parts(n_threads, [node](cpu::ThreadContext& part) { cpu::ref::compute(*node, part); });
}

}  // namespace tessel::test
