// Devices, backends (streams) and events (DESIGN.md, "Core contracts").
//
// A Device describes one piece of hardware and what it supports; init_backend() opens a
// Backend, a stream of work on it. graph_compute may return before the work is done
// (asynchronous devices); synchronize() waits. Events order work across backends: record on
// one, wait on another.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/buffer.hpp"
#include "graph/graph.hpp"
#include "tessel/device.hpp"

namespace tessel {

class Backend;

/// How a device runs a node: not at all, with its reference kernel, or with a fast kernel of its
/// kernel tables (test-ops counts each, docs/test-ops.md).
enum class KernelKind { None, Reference, Fast };

/// One op of a profiled stream (Backend::set_profiling) and its time.
struct OpTiming {
    std::string op;                    ///< a node's op name ("MUL_MAT"), or a device op's ("RMS_NORM+MUL", "FENCE")
    uint64_t ns = 0;                   ///< time of the op (an accelerator's own clock)
    std::vector<const Tensor*> nodes;  ///< the graph nodes it computed; empty when none (a fence) or not known
};

/// A point in a backend's stream. Devices subclass it; the CPU's is signalled when recorded.
class Event {
public:
    virtual ~Event() = default;
    /// Blocks the calling host thread until the recorded work has finished.
    virtual void synchronize() = 0;
    /// Whether the recorded work has finished (an event recorded nowhere has), without blocking.
    /// Throws what synchronize() throws when that work failed.
    virtual bool query() = 0;
};

struct BackendParams {
    int n_threads = 0;  ///< CPU threads; 0 = the device's default
    /// A device made of several (an NPU group), or an NPU in a process that mpirun started as one
    /// of several ranks (built with TESSEL_MPI): true, each member / rank computes its rows of the
    /// weights' matmuls; false, the first member / every rank runs everything. Others ignore it.
    bool split_rows = true;
};

class Device {
public:
    virtual ~Device() = default;
    virtual std::string name() const = 0;         ///< e.g. "CPU", "NPU0"
    virtual std::string description() const = 0;  ///< e.g. the CPU model
    virtual DeviceKind kind() const = 0;
    /// Free and total memory, bytes (host RAM for the CPU).
    virtual void memory(size_t& free, size_t& total) const = 0;

    /// Opens a stream on this device. Throws tessel::Error on failure.
    virtual std::unique_ptr<Backend> init_backend(const BackendParams& params) = 0;
    /// Default buffer type for this device's tensors.
    virtual BufferType& buffer_type() = 0;
    /// Extra buffer types for weights (e.g. CPU_PACKED), best first; used when they support a tensor.
    virtual std::vector<BufferType*> extra_weight_buffer_types() { return {}; }
    /// True when this device can compute node t (types, shapes, params of t and its sources).
    virtual bool supports_op(const Tensor& t) const = 0;
    /// What this device's kernel tables commit it to for node t (its sources placed, so a weight's
    /// buffer type counts) under the usable CPU features: test-ops fails a run in which the device
    /// claims less (supports_op false, or the reference kernel run where Fast is declared).
    /// Default, for a device without kernel tables: Fast where supports_op says so.
    virtual KernelKind declared_kernel(const Tensor& t) const { return supports_op(t) ? KernelKind::Fast : KernelKind::None; }
    /// True when this device's kernels can read tensors stored in buffers of type bt.
    virtual bool supports_buft(const BufferType& bt) const = 0;
    /// Optional entry points by name (e.g. "host_buffer_type", "cpu_compute_buffer_type" (see
    /// Scheduler), "split_buffer_type", "allreduce_comm"); nullptr if absent.
    virtual void* proc(const std::string& name) { (void)name; return nullptr; }
    /// A new event for this device's streams.
    virtual std::unique_ptr<Event> new_event() = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual Device& device() = 0;
    std::string name() const { return const_cast<Backend*>(this)->device().name(); }

    /// Computes `nodes` in order (all their data already placed in buffers this device reads).
    /// May return before the work finishes; call synchronize() before reading results.
    /// `graph_uid` != 0 promises that every call with this uid passes the same nodes, placed at
    /// the same addresses with the same parameters (the scheduler gives each split of an
    /// allocation its own uid), so a backend may reuse its translation; 0 = no such promise.
    virtual void graph_compute(const std::vector<Tensor*>& nodes, uint64_t graph_uid = 0) = 0;
    /// Waits for all work queued on this stream.
    virtual void synchronize() = 0;
    /// Copies `size` bytes from `src` into t's data at byte `offset`, ordered after the work queued
    /// on this stream so far; `src` may be reused once this returns. Throws like Buffer::set_tensor.
    /// Default: waits for the stream, then copies.
    virtual void set_tensor_async(Tensor& t, const void* src, size_t offset, size_t size) {
        synchronize();
        t.buffer->set_tensor(t, src, offset, size);
    }
    /// Copies `size` bytes of t's data at byte `offset` into `dst` once the work queued before it
    /// is done; `dst` holds them after the next synchronize(). Default: waits, then copies.
    virtual void get_tensor_async(const Tensor& t, void* dst, size_t offset, size_t size) {
        synchronize();
        t.buffer->get_tensor(t, dst, offset, size);
    }
    /// Copies all bytes of `src` (produced on stream `src_stream`) into `dst` (as many bytes, read by
    /// this stream), after the work queued on src_stream so far and before the work queued here
    /// later, without the host waiting or staging the bytes. Returns false, having done nothing,
    /// when this pair of streams or tensors cannot (the caller copies through host memory then).
    /// Default: false.
    virtual bool cpy_tensor_async(Backend& src_stream, const Tensor& src, Tensor& dst) {
        (void)src_stream;
        (void)src;
        (void)dst;
        return false;
    }
    /// Reorders `nodes` for speed without changing any result (default: keeps the order). The
    /// scheduler calls it on each split's nodes (views included) once per allocation, before it
    /// plans compute memory: only leaves (weights, caches) have buffers then.
    virtual void graph_optimize(std::vector<Tensor*>& nodes) { (void)nodes; }
    /// Name of the kernel that ran node t in this stream's last graph_compute, e.g. "ref" (the
    /// reference kernel) or "q4_0_q8_0_gemv_1x8_avx2"; "" when t did not run in it. Shown by test-ops.
    virtual std::string kernel_name(const Tensor& t) const { (void)t; return "?"; }
    /// Marks the current point of this stream in `e`.
    virtual void event_record(Event& e) = 0;
    /// Makes later work on this stream wait for `e` (recorded on any backend).
    virtual void event_wait(Event& e) = 0;
    /// Tells the stream whether it has nothing to do for a while (true while another device
    /// computes; false before its next work). A CPU backend parks its idle workers instead of
    /// letting them spin. Default: ignored.
    virtual void set_idle(bool idle) { (void)idle; }
    /// Starts (true) or stops timing every op this stream runs; off costs nothing. Default: no
    /// timing (take_profile stays empty).
    virtual void set_profiling(bool on) { (void)on; }
    /// The ops run since the last call while profiling, in order, once synchronize() has returned.
    virtual std::vector<OpTiming> take_profile() { return {}; }
};

}  // namespace tessel
