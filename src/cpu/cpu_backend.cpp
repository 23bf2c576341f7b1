#include "cpu/cpu_backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/env.hpp"
#include "cpu/graph_plan.hpp"
#include "cpu/kernels/kernel.hpp"
#include "cpu/packed/buffer.hpp"
#include "cpu/packed/kernel.hpp"
#include "cpu/packed/mul_mat.hpp"
#include "cpu/ref/ref.hpp"
#include "cpu/threadpool.hpp"
#include "cpu/topology.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu {
namespace {

/// TESSEL_CPU_SPIN: microseconds a waiting thread spins before it blocks (threadpool.hpp). Throws
/// Error(Environment) naming the variable when it is not a whole number in 0..100000.
WaitPolicy wait_policy_from_env() {
    const auto fallback = static_cast<uint64_t>(WaitPolicy{}.spin.count());
    return WaitPolicy{std::chrono::microseconds(env::whole_number("TESSEL_CPU_SPIN", 0, 100000, fallback))};
}

class HostBuffer final : public Buffer {
public:
    HostBuffer(BufferType& type, size_t size) : Buffer(type, size) {
        const size_t align = type.alignment();
        const size_t bytes = (std::max<size_t>(size, 1) + align - 1) / align * align;
        data_ = static_cast<uint8_t*>(std::aligned_alloc(align, bytes));
        if (!data_) throw Error(ErrorCode::Io, "cannot allocate a CPU buffer of " + std::to_string(size) + " bytes");
    }
    ~HostBuffer() override { std::free(data_); }

    void* base() override { return data_; }
    void set_tensor(Tensor& t, const void* src, size_t offset, size_t size) override {
        check_range(t, offset, size, "set_tensor");
        std::memcpy(static_cast<uint8_t*>(t.data) + offset, src, size);
    }
    void get_tensor(const Tensor& t, void* dst, size_t offset, size_t size) const override {
        check_range(t, offset, size, "get_tensor");
        std::memcpy(dst, static_cast<const uint8_t*>(t.data) + offset, size);
    }
    void clear(uint8_t value) override { std::memset(data_, value, size()); }

private:
    uint8_t* data_ = nullptr;
};

/// CPU work is synchronous, so an event is complete as soon as it is recorded.
class CpuEvent final : public Event {
public:
    void synchronize() override {}
    bool query() override { return true; }
};

/// Runs each graph by its plan (graph_plan.hpp): planned on the first graph_compute of a uid and
/// cached, so later calls do no kernel selection and no packed-path planning, and run the whole
/// node list in one pool run.
class CpuBackend final : public Backend {
public:
    CpuBackend(CpuDevice& dev, int n_threads)
        : dev_(dev), pool_(n_threads, wait_policy_from_env()), tuning_(packed::tuning_from_env()) {}
    Device& device() override { return dev_; }
    void graph_compute(const std::vector<Tensor*>& nodes, uint64_t graph_uid = 0) override {
        last_ = nullptr;  // until a plan exists: planning may throw
        last_ = &plan_for(nodes, graph_uid);
        void* work = work_buffer(last_->plan.work);
        if (profiling_) return compute_timed(work);
        auto walk_all = [this, work](ThreadContext& ctx) {
            walk(last_->plan, ctx, [work](const PlannedNode& n, ThreadContext& c) { run_node(n, c, work); });
        };
        if (last_->plan.parallel)
            pool_.run(walk_all);
        else
            pool_.run_solo(walk_all);
    }
    void set_profiling(bool on) override {
        profiling_ = on;
        timings_.clear();
    }
    std::vector<OpTiming> take_profile() override { return std::exchange(timings_, {}); }
    void synchronize() override {}
    std::string kernel_name(const Tensor& t) const override {
        if (last_)
            for (const PlannedNode& n : last_->plan.nodes)
                if (n.node == &t) return planned_kernel_name(n);
        return "";
    }
    void event_record(Event&) override {}
    void event_wait(Event& e) override { e.synchronize(); }
    void set_idle(bool idle) override {
        if (idle) pool_.pause();
        else pool_.resume();
    }

private:
    /// Graphs whose plans are kept: those a context alternates between (prompt and decode graphs,
    /// the CPU splits of a graph shared with an accelerator); the least recently used goes first.
    static constexpr size_t kCachedGraphs = 16;

    struct Cached {
        uint64_t uid = 0;   ///< 0: empty
        uint64_t used = 0;  ///< use_clock_ at the last use
        size_t n_nodes = 0;            ///< the graph's nodes (views included), a check of the uid's promise
        const Tensor* first = nullptr;  ///< and its first node
        GraphPlan plan;
    };

    static uint64_t now_ns() {
        const auto t = std::chrono::steady_clock::now().time_since_epoch();
        return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t).count());
    }

    /// graph_compute while profiling: the walk timed per step (walk_timed); a parallel node takes
    /// its step's time, a solo node its own, and the rest of a solo step (the barrier: waking and
    /// waiting for the team) goes to an op "(sync)" of no node, so the ops add up to the graph's time.
    void compute_timed(void* work) {
        const GraphPlan& g = last_->plan;
        node_ns_.assign(g.nodes.size(), 0);
        step_end_.assign(g.steps.size(), 0);
        const uint64_t start = now_ns();
        auto walk_all = [this, work, &g](ThreadContext& ctx) {
            walk_timed(g, ctx, [work](const PlannedNode& n, ThreadContext& c) { run_node(n, c, work); }, now_ns, node_ns_.data(),
                       step_end_.data());
        };
        if (g.parallel)
            pool_.run(walk_all);
        else
            pool_.run_solo(walk_all);
        uint64_t prev = start;
        for (size_t s = 0; s < g.steps.size(); ++s) {
            const Step& st = g.steps[s];
            const uint64_t step_ns = step_end_[s] > prev ? step_end_[s] - prev : 0;
            prev = std::max(prev, step_end_[s]);
            if (!st.solo) {
                timings_.push_back({op_name(g.nodes[st.begin].node->op), step_ns, {g.nodes[st.begin].node}});
                continue;
            }
            uint64_t own = 0;
            for (uint32_t i = st.begin; i < st.end; ++i) {
                timings_.push_back({op_name(g.nodes[i].node->op), node_ns_[i], {g.nodes[i].node}});
                own += node_ns_[i];
            }
            if (step_ns > own) timings_.push_back({"(sync)", step_ns - own, {}});
        }
    }

    /// The packed driver claims its own chunks; fast and reference kernels split by (ith, nth),
    /// so they run as the plan's parts.
    static void run_node(const PlannedNode& n, ThreadContext& ctx, void* work) {
        switch (n.path) {
        case PlannedNode::Path::Packed: packed::run(*n.node, n.packed, ctx, work); break;
        case PlannedNode::Path::Fast: ctx.parts(n.parts, [&](ThreadContext& part) { n.kernel->run(*n.node, part, work); }); break;
        case PlannedNode::Path::Reference: ctx.parts(n.parts, [&](ThreadContext& part) { ref::compute(*n.node, part); }); break;
        }
    }

    /// The cached plan of graph_uid, or a new plan of `nodes` (uid 0: planned on every call, never
    /// cached). A failed plan leaves nothing cached.
    Cached& plan_for(const std::vector<Tensor*>& nodes, uint64_t graph_uid) {
        ++use_clock_;
        if (graph_uid == 0) {
            uncached_.uid = 0;
            plan_graph(nodes, pool_.size(), tuning_, uncached_.plan);
            return uncached_;
        }
        Cached* victim = &cache_[0];
        for (Cached& c : cache_) {
            if (c.uid == graph_uid) {
                if (c.n_nodes != nodes.size() || (!nodes.empty() && c.first != nodes.front()))
                    throw Error(ErrorCode::InvalidArgument, "CPU backend: graph_uid " + std::to_string(graph_uid) +
                                                                " was computed before with other nodes (Backend::graph_compute)");
                c.used = use_clock_;
                return c;
            }
            if (c.used < victim->used) victim = &c;
        }
        victim->uid = 0;
        plan_graph(nodes, pool_.size(), tuning_, victim->plan);
        victim->uid = graph_uid;
        victim->used = use_clock_;
        victim->n_nodes = nodes.size();
        victim->first = nodes.empty() ? nullptr : nodes.front();
        return *victim;
    }

    /// The shared work buffer, grown to at least `bytes` (64-byte aligned).
    void* work_buffer(size_t bytes) {
        if (bytes > work_size_) {
            work_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
            if (!work_) throw Error(ErrorCode::Io, "cannot allocate a CPU work buffer of " + std::to_string(bytes) + " bytes");
            work_size_ = bytes;
        }
        return work_.get();
    }
    struct FreeDeleter {
        void operator()(uint8_t* p) const { std::free(p); }
    };

    CpuDevice& dev_;
    ThreadPool pool_;
    const packed::Tuning tuning_;  // read from the environment once, here
    std::array<Cached, kCachedGraphs> cache_;
    Cached uncached_;  // the plan of the last graph_compute with uid 0
    uint64_t use_clock_ = 0;
    const Cached* last_ = nullptr;  // the plan of the last graph_compute (kernel_name's answer)
    bool profiling_ = false;
    std::vector<OpTiming> timings_;           // while profiling: the ops run since take_profile
    std::vector<uint64_t> node_ns_, step_end_;  // compute_timed's clocks
    std::unique_ptr<uint8_t, FreeDeleter> work_;
    size_t work_size_ = 0;
};

}  // namespace

std::unique_ptr<Buffer> HostBufferType::alloc_buffer(size_t size) {
    if (size > max_size())
        throw Error(ErrorCode::InvalidArgument, "CPU buffer of " + std::to_string(size) + " bytes exceeds the maximum");
    return std::make_unique<HostBuffer>(*this, size);
}

HostBufferType& HostBufferType::instance() {
    static HostBufferType t;
    return t;
}

std::string CpuDevice::description() const {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
        }
    return "CPU";
}

void CpuDevice::memory(size_t& free, size_t& total) const {
    const long page = ::sysconf(_SC_PAGESIZE);
    total = static_cast<size_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(page);
    free = static_cast<size_t>(::sysconf(_SC_AVPHYS_PAGES)) * static_cast<size_t>(page);
}

std::unique_ptr<Backend> CpuDevice::init_backend(const BackendParams& params) {
    const int n = params.n_threads > 0 ? params.n_threads : default_thread_count();
    return std::make_unique<CpuBackend>(*this, n);
}

std::vector<BufferType*> CpuDevice::extra_weight_buffer_types() {
    if (!packed::packed_enabled()) return {};
    for (const packed::Kernel* k : packed::all_kernels())
        if (k->rhs_layout == packed::RhsLayout::Packed && packed::usable(*k, usable_cpu_features()))
            return {&packed::PackedBufferType::instance()};
    return {};
}

bool CpuDevice::supports_op(const Tensor& t) const { return ref::supports(t); }

KernelKind CpuDevice::declared_kernel(const Tensor& t) const {
    if (packed::reads_packed(t)) return packed::supports_node(t) ? KernelKind::Fast : KernelKind::None;
    if (packed::packs_at_run_time(t) || select_kernel(t, usable_cpu_features())) return KernelKind::Fast;
    if (packed::serves(t))  // a matrix product: the reference kernel ends every chain
        return packed::main_kernel(t).tier != CpuTier::Scalar ? KernelKind::Fast : KernelKind::Reference;
    return ref::supports(t) ? KernelKind::Reference : KernelKind::None;
}

std::unique_ptr<Event> CpuDevice::new_event() { return std::make_unique<CpuEvent>(); }

CpuDevice& cpu_device() {
    static CpuDevice d;
    return d;
}

}  // namespace tessel::cpu
