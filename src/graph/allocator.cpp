#include "graph/allocator.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <unordered_set>

#include "tessel/errors.hpp"

namespace tessel {
namespace {

size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

/// Storage owner of a tensor (itself unless it is a view).
const Tensor* owner(const Tensor* t) { return t->view_src ? t->view_src : t; }

/// Free ranges keyed by offset; best-fit allocation, coalescing on release.
class FreeList {
public:
    size_t allocate(size_t size) {
        auto best = free_.end();
        for (auto it = free_.begin(); it != free_.end(); ++it)
            if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
        if (best == free_.end()) {
            // grow: reuse a free block touching the end, if any
            size_t offset = high_;
            if (!free_.empty()) {
                auto last = std::prev(free_.end());
                if (last->first + last->second == high_) {
                    offset = last->first;
                    free_.erase(last);
                }
            }
            high_ = offset + size;
            return offset;
        }
        const size_t offset = best->first;
        const size_t rest = best->second - size;
        free_.erase(best);
        if (rest) free_[offset + size] = rest;
        return offset;
    }

    void release(size_t offset, size_t size) {
        auto next = free_.lower_bound(offset);
        if (next != free_.end() && offset + size == next->first) {
            size += next->second;
            next = free_.erase(next);
        }
        if (next != free_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second == offset) {
                prev->second += size;
                return;
            }
        }
        free_[offset] = size;
    }

    size_t high() const { return high_; }

private:
    std::map<size_t, size_t> free_;
    size_t high_ = 0;
};

}  // namespace

AllocPlan plan_allocation(const std::vector<Tensor*>& nodes, const std::function<bool(const Tensor&)>& needs_memory,
                          const std::function<size_t(const Tensor&)>& size_of, size_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        throw Error(ErrorCode::InvalidArgument, "allocation alignment " + std::to_string(alignment) + " is not a power of two");

    // Last step at which each storage owner is read (directly or through a view).
    std::unordered_map<const Tensor*, size_t> last_use;
    for (size_t step = 0; step < nodes.size(); ++step)
        for (const Tensor* s : nodes[step]->src)
            if (s) last_use[owner(s)] = step;
    // Storage that must outlive the graph: outputs and inputs, also when only a view of the
    // storage carries the flag (e.g. the last token's logits selected by a view).
    std::unordered_set<const Tensor*> keep;
    for (const Tensor* n : nodes) {
        if (n->flags & (kFlagOutput | kFlagInput)) keep.insert(owner(n));
        for (const Tensor* s : n->src)
            if (s && (s->flags & (kFlagOutput | kFlagInput))) keep.insert(owner(s));
    }

    AllocPlan plan;
    FreeList free_list;
    auto padded = [&](const Tensor* t) { return align_up(std::max<size_t>(size_of(*t), 1), alignment); };
    auto place = [&](const Tensor* t) {
        if (t->view_src || plan.offset.count(t) || !needs_memory(*t)) return;
        const size_t bytes = padded(t);
        plan.offset[t] = free_list.allocate(bytes);
        plan.total_bytes += bytes;
    };
    // Leaves that need memory (inputs) are placed first and kept.
    for (const Tensor* n : nodes)
        for (const Tensor* s : n->src)
            if (s && s->op == Op::NONE) place(owner(s));

    // Step by step: place the node's output, then release the tensors whose last reader it was
    // (after placing, so an output never overlaps the inputs it is computed from).
    std::vector<std::vector<const Tensor*>> release_at(nodes.size());
    for (size_t step = 0; step < nodes.size(); ++step) {
        const Tensor* t = nodes[step];
        place(t);
        if (plan.offset.count(t) && !keep.count(t)) {
            auto it = last_use.find(t);
            const size_t last = it == last_use.end() ? step : std::max(it->second, step);
            release_at[last].push_back(t);
        }
        for (const Tensor* r : release_at[step]) free_list.release(plan.offset.at(r), padded(r));
    }
    plan.size = free_list.high();
    return plan;
}

}  // namespace tessel
