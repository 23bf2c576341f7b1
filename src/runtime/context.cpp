#include "runtime/context.hpp"

#include <algorithm>
#include <cstring>

#include "core/memory.hpp"
#include "runtime/op_cost.hpp"
#include "tessel/errors.hpp"

namespace tessel::runtime {
namespace {

constexpr int64_t kDefaultMaxCtx = 4096;

DType cache_type(const std::string& name, const char* which) {
    const auto t = dtype_from_name(name);
    if (!t || (*t != DType::F16 && *t != DType::F32 && *t != DType::Q8_0))
        throw Error(ErrorCode::InvalidArgument, std::string("KV cache type '") + name + "' for " + which +
                                                    " is not supported (use f16, f32 or q8_0)");
    return *t;
}

void write_input(Tensor* t, const void* data, size_t bytes) { t->buffer->set_tensor(*t, data, 0, bytes); }

/// Memory for the KV cache that every device reads and writes in place: the first accelerator's
/// host buffer type (proc "host_buffer_type", e.g. NPU0-HOST) when every device supports it, else
/// the CPU's (the last device's) buffer type.
BufferType& kv_buffer_type(const std::vector<Device*>& devices) {
    for (Device* d : devices) {
        if (d->kind() == DeviceKind::Cpu) continue;
        auto* bt = static_cast<BufferType*>(d->proc("host_buffer_type"));
        if (bt && std::all_of(devices.begin(), devices.end(), [&](Device* o) { return o->supports_buft(*bt); })) return *bt;
    }
    return devices.back()->buffer_type();
}

}  // namespace

// The compute estimate is the activations of one ubatch of T tokens, in F32: about 6 rows of
// n_embd and 3 of n_ff live at once, the logits (T x n_vocab), and the attention scores
// (n_head x n_kv x T, twice: scores and softmax) without flash attention, or one row of n_kv
// per head and thread with it. The scheduler reuses buffers, so this bounds the graph's peak.
ContextMemory context_memory(const model::Hparams& hp, int64_t n_ctx, int64_t n_ubatch, bool flash_attn, DType type_k, DType type_v) {
    const double ctx = static_cast<double>(n_ctx), T = static_cast<double>(std::min(n_ubatch, n_ctx));
    auto row = [&](DType t) {
        const DTypeInfo& i = dtype_info(t);
        return static_cast<double>(hp.n_embd_kv()) / i.block_size * i.block_bytes;
    };
    ContextMemory m;
    m.kv = static_cast<double>(hp.n_layer) * (row(type_k) + row(type_v)) * ctx;
    const double heads = static_cast<double>(hp.n_head);
    const double attn = flash_attn ? heads * (T * static_cast<double>(hp.head_dim) + ctx * 16) : 2 * heads * ctx * T;
    m.compute = 4 * (T * (6 * static_cast<double>(hp.n_embd) + 3 * static_cast<double>(hp.n_ff) + static_cast<double>(hp.n_vocab)) + attn);
    return m;
}

void check_context_fits(const model::Hparams& hp, int64_t n_ctx, int64_t n_ubatch, bool flash_attn, DType type_k, DType type_v) {
    const ContextMemory need = context_memory(hp, n_ctx, n_ubatch, flash_attn, type_k, type_v);
    const MemoryHeadroom room = memory_headroom();
    if (need.total() <= static_cast<double>(room.bytes)) return;
    auto bytes = [](double b) { return format_bytes(b >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(b)); };
    throw Error(ErrorCode::OutOfMemory, "a context of " + std::to_string(n_ctx) + " tokens needs " + bytes(need.total()) + " (KV cache " +
                                            bytes(need.kv) + ", compute buffers about " + bytes(need.compute) + "), but " +
                                            format_bytes(room.bytes) + " are available (" + room.limited_by +
                                            "): lower the context size or the ubatch size");
}

ContextPlan plan_context(const model::Hparams& hp, const ContextParams& params) {
    if (params.n_ctx < 0) throw Error(ErrorCode::InvalidArgument, "context size must be >= 1 token (0: the model's)");
    if (params.n_ubatch < 1) throw Error(ErrorCode::InvalidArgument, "ubatch size must be >= 1 token");
    if (params.n_threads < 0 || params.n_threads > kMaxThreads)
        throw Error(ErrorCode::InvalidArgument, "thread count " + std::to_string(params.n_threads) + " outside 0.." +
                                                    std::to_string(kMaxThreads) + " (0: the number of physical cores)");
    if (!params.kv_unified && (params.n_seq_max < 1 || params.n_seq_max > model::KvCache::kMaxSeq))
        throw Error(ErrorCode::InvalidArgument, "n_seq_max " + std::to_string(params.n_seq_max) + " outside 1.." +
                                                    std::to_string(model::KvCache::kMaxSeq) + " (a KV cache split by sequence)");
    ContextPlan p;
    p.n_ctx = params.n_ctx ? params.n_ctx : std::min(hp.n_ctx_train, kDefaultMaxCtx);
    p.flash_attn = params.flash_attn != FlashAttn::Off;
    p.type_k = cache_type(params.type_k, "K"), p.type_v = cache_type(params.type_v, "V");
    if (!p.flash_attn && dtype_info(p.type_v).quantized)
        throw Error(ErrorCode::InvalidArgument, std::string("a ") + dtype_name(p.type_v) + " V cache needs flash attention (-fa on)");
    check_context_fits(hp, p.n_ctx, params.n_ubatch, p.flash_attn, p.type_k, p.type_v);
    return p;
}

Context::Context(std::shared_ptr<const model::Model> model, const ContextParams& params)
    : model_(std::move(model)), params_(params) {
    const model::Hparams& hp = model_->hparams();
    const ContextPlan plan = plan_context(hp, params_);
    flash_attn_ = plan.flash_attn;
    kv_ = std::make_unique<model::KvCache>(hp, plan.n_ctx, plan.type_k, plan.type_v, kv_buffer_type(model_->devices()),
                                           params_.kv_unified ? 0 : params_.n_seq_max);
    BackendParams bp;
    bp.n_threads = params_.n_threads;
    bp.split_rows = params_.split_mode == SplitMode::Row;
    std::vector<Backend*> order;
    for (Device* d : model_->devices()) {
        backends_.push_back(d->init_backend(bp));
        order.push_back(backends_.back().get());
    }
    sched_ = std::make_unique<Scheduler>(order);
}

Context::~Context() {
    if (sched_) sched_->release();
}

void Context::decode(std::span<const BatchToken> batch) {
    const int64_t n_vocab = model_->hparams().n_vocab;
    for (size_t i = 0; i < batch.size(); ++i) {
        const BatchToken& b = batch[i];
        auto where = [i] { return "batch entry " + std::to_string(i) + ": "; };  // built only for an error
        if (b.token < 0 || b.token >= n_vocab)
            throw Error(ErrorCode::InvalidArgument, where() + "token " + std::to_string(b.token) + " outside the vocabulary (0.." +
                                                        std::to_string(n_vocab - 1) + ")");
        if (b.pos < 0) throw Error(ErrorCode::InvalidArgument, where() + "negative position " + std::to_string(b.pos));
        if (b.seq < 0 || b.seq >= model::KvCache::kMaxSeq)
            throw Error(ErrorCode::InvalidArgument, where() + "sequence id " + std::to_string(b.seq) + " outside 0.." +
                                                        std::to_string(model::KvCache::kMaxSeq - 1));
    }
    n_out_ = 0;
    logits_.clear();
    profile_.clear();
    for (size_t i = 0; i < batch.size(); i += static_cast<size_t>(params_.n_ubatch))
        decode_ubatch(batch.subspan(i, std::min(batch.size() - i, static_cast<size_t>(params_.n_ubatch))));
}

void Context::decode_ubatch(std::span<const BatchToken> ub) {
    const int64_t T = static_cast<int64_t>(ub.size());
    // The per-ubatch inputs live in members whose capacity stays: decode steps allocate nothing.
    tokens_.clear(), pos_.clear(), seq_.clear(), out_ids_.clear();
    for (int64_t t = 0; t < T; ++t) {
        const BatchToken& b = ub[static_cast<size_t>(t)];
        tokens_.push_back(b.token), pos_.push_back(b.pos), seq_.push_back(b.seq);
        if (b.logits) out_ids_.push_back(static_cast<int32_t>(t));
    }
    cells_.resize(ub.size());
    kv_->find_cells(pos_, seq_, cells_);
    for (int64_t t = 0; t < T; ++t) kv_->occupy(cells_[static_cast<size_t>(t)], pos_[static_cast<size_t>(t)], seq_[static_cast<size_t>(t)]);

    model::ForwardShape shape{T, kv_->n_kv(), std::max<int64_t>(1, static_cast<int64_t>(out_ids_.size())), flash_attn_};
    if (out_ids_.empty()) out_ids_.push_back(static_cast<int32_t>(T - 1));  // a graph needs an output; discarded
    if (!graph_ || shape.n_tokens != shape_.n_tokens || shape.n_kv != shape_.n_kv || shape.n_out != shape_.n_out) {
        sched_->release();
        graph_ = std::make_unique<Graph>();
        in_ = model_->build_forward(*graph_, kv_->layers(), shape);
        if (keep_intermediates_)
            for (Tensor* n : graph_->nodes()) n->flags |= kFlagOutput;  // the allocator never reuses outputs
        sched_->allocate(*graph_);
        shape_ = shape;
        ++graphs_built_;
    }

    write_input(in_.tokens, tokens_.data(), tokens_.size() * sizeof(int32_t));
    write_input(in_.pos, pos_.data(), pos_.size() * sizeof(int32_t));
    write_input(in_.kv_idx, cells_.data(), cells_.size() * sizeof(int64_t));
    mask_.resize(static_cast<size_t>(shape.n_kv * T));
    for (auto [mask, n_swa] : {std::pair{in_.mask, int64_t{0}}, std::pair{in_.mask_swa, model_->hparams().n_swa}})
        if (mask) {
            kv_->fill_mask(pos_, seq_, shape.n_kv, mask_.data(), n_swa);
            write_input(mask, mask_.data(), mask_.size() * sizeof(uint16_t));
        }
    if (in_.out_ids) write_input(in_.out_ids, out_ids_.data(), out_ids_.size() * sizeof(int32_t));
    sched_->compute();
    if (profiling_)  // compute has synchronized every backend; the graph's nodes are alive
        for (const auto& b : backends_)
            for (const OpTiming& t : b->take_profile()) profile_.push_back(op_profile(t, b->name()));

    const size_t wanted = static_cast<size_t>(std::count_if(ub.begin(), ub.end(), [](const BatchToken& b) { return b.logits; }));
    if (wanted == 0) return;
    const size_t n_vocab = static_cast<size_t>(model_->hparams().n_vocab);
    logits_.resize((n_out_ + wanted) * n_vocab);
    in_.logits->buffer->get_tensor(*in_.logits, logits_.data() + n_out_ * n_vocab, 0, wanted * n_vocab * sizeof(float));
    n_out_ += wanted;
}

void Context::set_profiling(bool on) {
    profiling_ = on;
    profile_.clear();
    for (const auto& b : backends_) b->set_profiling(on);
}

void Context::keep_intermediates() {
    keep_intermediates_ = true;
    sched_->release();
    graph_.reset();  // the next ubatch builds a graph with every node kept
}

std::span<const float> Context::logits(size_t i) const {
    if (i >= n_out_)
        throw Error(ErrorCode::InvalidArgument, "logits " + std::to_string(i) + " requested, the last decode kept " + std::to_string(n_out_));
    const size_t n_vocab = static_cast<size_t>(model_->hparams().n_vocab);
    return {logits_.data() + i * n_vocab, n_vocab};
}

}  // namespace tessel::runtime
