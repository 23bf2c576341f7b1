#include "cpu/cpu_backend.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "cpu/kernels/kernel.hpp"
#include "cpu/packed/buffer.hpp"
#include "cpu/packed/kernel.hpp"
#include "cpu/packed/mul_mat.hpp"
#include "cpu/ref/ref.hpp"
#include "cpu/threadpool.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu {
namespace {

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
};

class CpuBackend final : public Backend {
public:
    CpuBackend(CpuDevice& dev, int n_threads) : dev_(dev), pool_(n_threads) {}
    Device& device() override { return dev_; }
    void graph_compute(const std::vector<Tensor*>& nodes, uint64_t /*graph_uid: nothing cached*/ = 0) override {
        const CpuFeatures& features = usable_cpu_features();
        ran_.clear();
        for (Tensor* node : nodes) {
            if (op_is_view(node->op)) continue;
            const bool solo = node_bytes(*node) < kSoloBytes;
            if (packed::reads_packed(*node) || packed::packs_at_run_time(*node)) {
                if (packed::reads_packed(*node) && !packed::supports_node(*node))
                    throw Error(ErrorCode::Unsupported, std::string(op_name(node->op)) + " " + describe(*node) +
                                                            " reads a CPU_PACKED weight in a form the packed path does not serve");
                void* work = work_buffer(packed::work_size(*node, pool_.size()));
                ran_.push_back({node, nullptr, true});
                run(solo, [node, work](ThreadContext& ctx) { packed::run(*node, ctx, work); });
            } else if (const FastKernel* k = select_kernel(*node, features)) {
                void* work = work_buffer(k->work_size(*node, pool_.size()));
                ran_.push_back({node, k, false});
                run(solo, [node, k, work](ThreadContext& ctx) { k->run(*node, ctx, work); });
            } else {
                ran_.push_back({node, nullptr, false});
                run(solo, [node](ThreadContext& ctx) { ref::compute(*node, ctx); });
            }
        }
    }
    void synchronize() override {}
    std::string kernel_name(const Tensor& t) const override {
        for (const Ran& r : ran_) {
            if (r.node != &t) continue;
            if (r.packed) return packed::kernel_name(t, pool_.size());
            return r.kernel ? kernel_path_name(*r.kernel, t) : "ref";
        }
        return "";
    }
    void event_record(Event&) override {}
    void event_wait(Event& e) override { e.synchronize(); }
    void set_idle(bool idle) override {
        if (idle) pool_.pause();
        else pool_.resume();
    }

private:
    /// Nodes that touch fewer bytes than this run on the calling thread alone: handing a few
    /// microseconds of work to the workers costs more than it saves (decode-time norms,
    /// element-wise ops, RoPE and cache writes), and every hand-over is a chance to wait for a
    /// descheduled worker on a busy machine.
    static constexpr size_t kSoloBytes = 64 * 1024;

    /// Bytes of the node's output and inputs.
    static size_t node_bytes(const Tensor& node) {
        size_t bytes = node.n_bytes();
        for (const Tensor* s : node.src)
            if (s) bytes += s->n_bytes();
        return bytes;
    }

    template <class F>
    void run(bool solo, F&& fn) {
        if (solo)
            pool_.run_solo(fn);
        else
            pool_.run(fn);
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

    /// A node of the last graph_compute and the path that ran it (kernel_name's answer).
    struct Ran {
        const Tensor* node;
        const FastKernel* kernel;  ///< nullptr: the reference kernel, or the packed path
        bool packed;
    };

    CpuDevice& dev_;
    ThreadPool pool_;
    std::vector<Ran> ran_;
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
        if (packed::usable(*k, usable_cpu_features())) return {&packed::PackedBufferType::instance()};
    return {};
}

bool CpuDevice::supports_op(const Tensor& t) const { return ref::supports(t); }

KernelKind CpuDevice::declared_kernel(const Tensor& t) const {
    if (packed::reads_packed(t)) return packed::supports_node(t) ? KernelKind::Fast : KernelKind::None;
    if (packed::packs_at_run_time(t) || select_kernel(t, usable_cpu_features())) return KernelKind::Fast;
    return ref::supports(t) ? KernelKind::Reference : KernelKind::None;
}

std::unique_ptr<Event> CpuDevice::new_event() { return std::make_unique<CpuEvent>(); }

CpuDevice& cpu_device() {
    static CpuDevice d;
    return d;
}

}  // namespace tessel::cpu
