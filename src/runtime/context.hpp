// A context: one model's KV cache, compute buffers and CPU thread pool; decodes batches.
//
// decode() takes a batch of (token, position, sequence, wants-logits) entries, cuts it into
// ubatches of at most n_ubatch tokens, and for each: takes free cache cells, builds (or reuses,
// when the shapes are unchanged) the forward graph, fills its inputs and runs it through the
// scheduler. Logits of the entries that asked for them are kept, in batch order, until the next
// decode().
//
// Devices: the model's (Model::devices(), e.g. [NPU0, CPU]); the context opens one backend on
// each and gives the scheduler all of them in that order, so an accelerator takes every node it
// claims and the CPU the rest. The KV cache lives in memory every device reads and writes in
// place (kv_buffer_type), so in-place cache writes (SET_ROWS) land where attention reads them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "backend/scheduler.hpp"
#include "model/kv_cache.hpp"
#include "model/arch.hpp"
#include "model/model.hpp"
#include "tessel/engine.hpp"

namespace tessel::runtime {

using tessel::BatchToken;
using tessel::ContextParams;
using tessel::FlashAttn;

/// Memory a context needs, bytes.
struct ContextMemory {
    double kv = 0;       ///< the KV cache: n_layer x (K + V) rows of n_embd_kv, n_ctx cells (exact)
    double compute = 0;  ///< the largest forward graph's buffers (an estimate, see context.cpp)
    double total() const { return kv + compute; }
};

/// What a context of `n_ctx` cells and `n_ubatch`-token graphs needs for the model `hp`
/// (doubles: an absurd size does not overflow).
ContextMemory context_memory(const model::Hparams& hp, int64_t n_ctx, int64_t n_ubatch, bool flash_attn, DType type_k, DType type_v);

/// Throws Error(OutOfMemory) naming the bytes needed (KV cache, compute) and available
/// (memory_headroom(), and which limit) when context_memory() exceeds what is available.
void check_context_fits(const model::Hparams& hp, int64_t n_ctx, int64_t n_ubatch, bool flash_attn, DType type_k, DType type_v);

/// A context's resolved parameters.
struct ContextPlan {
    int64_t n_ctx = 0;  ///< KV cells (ContextParams::n_ctx, or the model's capped at 4096 for 0)
    bool flash_attn = true;
    DType type_k = DType::F16, type_v = DType::F16;
};

/// Resolves and checks `params` for a context of the model `hp` as the constructor below does
/// (memory included), allocating nothing; throws what the constructor throws for them.
ContextPlan plan_context(const model::Hparams& hp, const ContextParams& params);

class Context {
public:
    /// Throws tessel::Error(InvalidArgument) for bad parameters (n_ctx < 1, n_ubatch < 1, a
    /// quantized V cache with flash attention off, unsupported cache types), and
    /// Error(OutOfMemory) naming the bytes needed and available (memory_headroom()) when the
    /// KV cache and compute buffers cannot fit, before allocating them.
    Context(std::shared_ptr<const model::Model> model, const ContextParams& params);
    ~Context();

    /// Decodes the batch (see above). Throws tessel::Error(InvalidArgument) naming the entry
    /// for a token outside the vocabulary, a negative position or a bad sequence id (before
    /// anything is computed), and Error(ContextFull) when the cache has no free cells for a
    /// ubatch (the cache then holds the ubatches decoded before it).
    void decode(std::span<const BatchToken> batch);

    /// Logits (n_vocab floats) of the i-th entry that asked for logits in the last decode.
    std::span<const float> logits(size_t i) const;
    size_t n_outputs() const { return n_out_; }

    model::KvCache& kv() { return *kv_; }
    const model::Model& model() const { return *model_; }
    int64_t n_ctx() const { return kv_->size(); }
    bool flash_attn() const { return flash_attn_; }
    /// Forward graphs built so far (a reused graph is not counted): for tests of graph reuse.
    int64_t graphs_built() const { return graphs_built_; }
    /// The scheduler of the last ubatch's graph (which backend ran which node): for tests.
    const Scheduler& scheduler() const { return *sched_; }
    /// From the next graph on, every node keeps its memory (none is reused by a later node), so
    /// after decode() each node's output and inputs can be read back (`tessel trace`).
    void keep_intermediates();
    /// The last ubatch's graph, or nullptr before the first decode.
    const Graph* graph() const { return graph_.get(); }
    /// Times every op of later decodes on every backend (tessel::Context::set_profiling).
    void set_profiling(bool on);
    /// The ops of the last decode while profiling, with their costs (op_cost.hpp).
    const std::vector<tessel::OpProfile>& last_profile() const { return profile_; }

private:
    void decode_ubatch(std::span<const BatchToken> ub);

    std::shared_ptr<const model::Model> model_;
    ContextParams params_;
    bool flash_attn_ = true;
    std::unique_ptr<model::KvCache> kv_;
    std::vector<std::unique_ptr<Backend>> backends_;  // one per model device, same order
    std::unique_ptr<Scheduler> sched_;
    std::unique_ptr<Graph> graph_;
    model::ForwardShape shape_;
    model::ForwardInputs in_;
    int64_t graphs_built_ = 0;
    bool keep_intermediates_ = false;
    bool profiling_ = false;
    std::vector<tessel::OpProfile> profile_;
    std::vector<float> logits_;
    size_t n_out_ = 0;
    // The last ubatch's inputs (members so that their memory is reused).
    std::vector<int64_t> cells_;
    std::vector<int32_t> tokens_, pos_, seq_, out_ids_;
    std::vector<uint16_t> mask_;
};

}  // namespace tessel::runtime
