#include "backend/scheduler.hpp"

#include <algorithm>
#include <atomic>
#include <string>

#include "graph/allocator.hpp"
#include "tessel/errors.hpp"

namespace tessel {
namespace {

const Tensor* owner(const Tensor* t) { return t->view_src ? t->view_src : t; }

bool is_weight(const Tensor& t) {
    return (t.flags & kFlagWeight) || (t.buffer && t.buffer->usage() == BufferUsage::Weights);
}

}  // namespace

Scheduler::Scheduler(std::vector<Backend*> backends) : backends_(std::move(backends)) {
    for (Backend* b : backends_)
        if (b->device().kind() == DeviceKind::Cpu) cpu_ = b;
    if (!cpu_) throw Error(ErrorCode::InvalidArgument, "scheduler: a CPU backend is required as the fallback");
    // An accelerator may offer host memory it reads in place for the CPU's compute buffers.
    for (Backend* b : backends_)
        if (b != cpu_)
            if (void* p = b->device().proc("cpu_compute_buffer_type"); p && !cpu_compute_type_)
                cpu_compute_type_ = static_cast<BufferType*>(p);
}

BufferType& Scheduler::compute_type(const Backend& b) const {
    if (&b == cpu_ && cpu_compute_type_) return *cpu_compute_type_;
    return const_cast<Backend&>(b).device().buffer_type();
}

Scheduler::~Scheduler() { release(); }

Backend* Scheduler::assign(const Tensor& node) const {
    // 0. an in-place writer (its result a view of memory that already exists, e.g. SET_ROWS into
    //    the KV cache) runs where that memory is addressed: a copy would take its writes.
    if (node.view_src && owner(&node)->buffer) {
        const BufferType& dst = owner(&node)->buffer->type();
        for (Backend* b : backends_)
            if (b->device().supports_buft(dst) && b->device().supports_op(node)) return b;
        return nullptr;
    }
    // 1. where the weights are
    for (const Tensor* s : node.src) {
        if (!s) continue;
        const Tensor* o = owner(s);
        if (!is_weight(*o) || !o->buffer) continue;
        for (Backend* b : backends_)
            if (b->device().supports_buft(o->buffer->type()) && b->device().supports_op(node)) return b;
    }
    // 2. priority order; the CPU supports every op its reference kernels cover
    for (Backend* b : backends_)
        if (b->device().supports_op(node)) return b;
    return nullptr;
}

void Scheduler::release() {
    // Give the graph back as it was before allocate(): original sources, no scheduler memory.
    for (auto it = rewrites_.rbegin(); it != rewrites_.rend(); ++it) it->node->src[it->slot] = it->original;
    rewrites_.clear();
    for (Tensor* t : placed_) {
        t->buffer = nullptr;
        t->data = nullptr;
    }
    placed_.clear();
    for (Tensor* t : split_outputs_) t->flags &= ~kFlagSplitOutput;
    split_outputs_.clear();
    splits_.clear();
    assignment_.clear();
    compute_buffers_.clear();
    staging_.clear();
    copy_tensors_.clear();
    events_.clear();
}

void Scheduler::allocate(Graph& g) {
    release();

    // 1. assignment (views follow their source node, or the CPU for views of leaves)
    for (Tensor* n : g.nodes()) {
        Backend* b = nullptr;
        if (op_is_view(n->op)) {
            auto it = assignment_.find(n->src[0]);
            b = it != assignment_.end() ? it->second : cpu_;
        } else {
            b = assign(*n);
            if (!b) {
                std::string where;
                if (n->view_src && owner(n)->buffer) where = " writing into " + owner(n)->buffer->type().name() + " memory";
                throw Error(ErrorCode::Unsupported, std::string("no backend supports ") + op_name(n->op) + " " + describe(*n) + where);
            }
        }
        assignment_[n] = b;
    }

    // 2. splits of consecutive nodes on one backend (views join the current split)
    for (Tensor* n : g.nodes()) {
        Backend* b = assignment_.at(n);
        if (op_is_view(n->op) && !splits_.empty()) {
            b = splits_.back().backend;
            assignment_[n] = b;
        }
        if (splits_.empty() || splits_.back().backend != b) splits_.push_back({b, {}, {}});
        splits_.back().nodes.push_back(n);
    }

    // 2b. each backend reorders its splits' nodes (Backend::graph_optimize) before memory is
    //     planned, so the liveness plan follows the order the nodes run in.
    std::vector<Tensor*> order;
    order.reserve(g.nodes().size());
    for (Split& s : splits_) {
        s.backend->graph_optimize(s.nodes);
        order.insert(order.end(), s.nodes.begin(), s.nodes.end());
    }
    // 2b. outputs read by a node of another split: their backend must write them (one that fuses
    //     nodes may otherwise leave an intermediate unwritten that only its own split reads)
    std::unordered_map<const Tensor*, size_t> split_of;
    for (size_t i = 0; i < splits_.size(); ++i)
        for (Tensor* n : splits_[i].nodes) split_of[n] = i;
    for (size_t i = 0; i < splits_.size(); ++i)
        for (Tensor* n : splits_[i].nodes)
            for (Tensor* s : n->src)
                for (Tensor* t : {s, s ? s->view_src : nullptr}) {
                    const auto it = t ? split_of.find(t) : split_of.end();
                    if (it == split_of.end() || it->second == i || (t->flags & kFlagSplitOutput)) continue;
                    t->flags |= kFlagSplitOutput;
                    split_outputs_.push_back(t);
                }

    // 3. inputs without memory (leaves the caller fills) go to host memory
    size_t host_bytes = 0;
    BufferType& host_type = compute_type(*cpu_);
    const size_t align = host_type.alignment();
    std::vector<Tensor*> host_leaves;
    for (Tensor* l : g.leaves())
        if (!l->buffer && !l->view_src) {
            host_leaves.push_back(l);
            host_bytes += (host_type.alloc_size(*l) + align - 1) / align * align;
        }
    if (!host_leaves.empty()) {
        staging_.push_back(host_type.alloc_buffer(host_bytes));
        Buffer& buf = *staging_.back();
        buf.set_usage(BufferUsage::Compute);
        size_t off = 0;
        for (Tensor* l : host_leaves) {
            buf.init_tensor(*l, off);
            placed_.push_back(l);
            off += (host_type.alloc_size(*l) + align - 1) / align * align;
        }
    }

    // 4. compute buffers per backend, planned over the whole node order (as reordered)
    for (Backend* b : backends_) {
        BufferType& bt = compute_type(*b);
        auto mine = [&](const Tensor& t) {
            auto it = assignment_.find(&t);
            return it != assignment_.end() && it->second == b && !t.view_src && !op_is_view(t.op);
        };
        AllocPlan plan = plan_allocation(order, mine, [&](const Tensor& t) { return bt.alloc_size(t); }, bt.alignment());
        if (plan.offset.empty()) continue;
        auto buf = bt.alloc_buffer(plan.size);
        buf->set_usage(BufferUsage::Compute);
        for (Tensor* n : order)
            if (plan.offset.count(n)) {
                buf->init_tensor(*n, plan.offset.at(n));
                placed_.push_back(n);
            }
        compute_buffers_[b] = std::move(buf);
    }
    for (Tensor* n : g.nodes())  // views once their owners have data
        if (n->view_src && n->view_src->buffer && !n->buffer) {
            n->view_src->buffer->init_tensor(*n, 0);
            placed_.push_back(n);
        }

    // 5. copies of split inputs the split's device cannot read. A view is served by a copy of
    //    its whole storage owner plus a local view into that copy.
    for (Split& s : splits_) {
        std::unordered_map<const Tensor*, Tensor*> local;  // original (owner or view) -> local tensor
        auto local_copy = [&](Tensor* o) {
            auto it = local.find(o);
            if (it != local.end()) return it->second;
            BufferType& bt = compute_type(*s.backend);
            auto copy = std::make_unique<Tensor>(*o);
            copy->op = Op::NONE;
            copy->src = {};
            copy->view_src = nullptr;
            copy->view_offset = 0;
            copy->name = o->name + " (copy)";
            staging_.push_back(bt.alloc_buffer(bt.alloc_size(*copy)));
            staging_.back()->set_usage(BufferUsage::Compute);
            staging_.back()->init_tensor(*copy, 0);
            s.copies.emplace_back(o, copy.get());
            Tensor* c = copy.get();
            copy_tensors_.push_back(std::move(copy));
            return local[o] = c;
        };
        for (Tensor* n : s.nodes)
            for (int slot = 0; slot < kMaxSrc; ++slot) {
                Tensor* src = n->src[slot];
                if (!src || op_is_view(n->op)) continue;
                Tensor* o = src->view_src ? src->view_src : src;
                if (!o->buffer || s.backend->device().supports_buft(o->buffer->type())) continue;
                Tensor* replacement = local_copy(o);
                if (src->view_src) {
                    auto it = local.find(src);
                    if (it == local.end()) {
                        auto view = std::make_unique<Tensor>(*src);
                        view->src = {replacement};
                        view->view_src = replacement;
                        view->buffer = replacement->buffer;
                        view->data = static_cast<uint8_t*>(replacement->data) + src->view_offset;
                        view->name = src->name + " (copy)";
                        it = local.emplace(src, view.get()).first;
                        copy_tensors_.push_back(std::move(view));
                    }
                    replacement = it->second;
                }
                rewrites_.push_back({n, slot, src});
                n->src[slot] = replacement;
            }
    }
    for (size_t i = 0; i < splits_.size(); ++i) events_.push_back(splits_[i].backend->device().new_event());
    static std::atomic<uint64_t> next_uid{1};
    for (Split& s : splits_) s.uid = next_uid++;
}

void Scheduler::compute() {
    const bool mixed = std::any_of(splits_.begin(), splits_.end(), [&](const Split& s) { return s.backend != cpu_; });
    for (size_t i = 0; i < splits_.size(); ++i) {
        Split& s = splits_[i];
        // While an accelerator computes, the CPU's workers sleep rather than spin.
        if (mixed) cpu_->set_idle(s.backend != cpu_);
        if (i > 0) s.backend->event_wait(*events_[i - 1]);
        for (auto& [src, copy] : s.copies) {
            Backend* producer = backend_of(*src);
            if (producer && s.backend->cpy_tensor_async(*producer, *src, *copy)) continue;  // device to device
            if (producer) producer->synchronize();
            const size_t n = src->n_bytes();
            if (copy_bytes_.size() < n) copy_bytes_.resize(n);
            src->buffer->get_tensor(*src, copy_bytes_.data(), 0, n);
            copy->buffer->set_tensor(*copy, copy_bytes_.data(), 0, n);
        }
        s.backend->graph_compute(s.nodes, s.uid);
        s.backend->event_record(*events_[i]);
    }
    for (Backend* b : backends_) b->synchronize();
    if (mixed) cpu_->set_idle(false);
}

Backend* Scheduler::backend_of(const Tensor& t) const {
    auto it = assignment_.find(&t);
    return it == assignment_.end() ? nullptr : it->second;
}

size_t Scheduler::compute_buffer_size(const Backend& b) const {
    auto it = compute_buffers_.find(&b);
    return it == compute_buffers_.end() ? 0 : it->second->size();
}

}  // namespace tessel
