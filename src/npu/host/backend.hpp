// The NPU stream (see device.hpp): graph_compute, synchronize, events.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"
#include "npu/host/allreduce.hpp"
#include "npu/host/opbatch.hpp"
#include "npu/link/shm.hpp"

namespace tessel::npu {

class NpuDevice;
class Session;
struct FusedOp;

/// A fence slot and value, set when recorded on an NPU stream; synchronize() waits for the device
/// to store the value (an event recorded nowhere is already complete).
class NpuEvent final : public Event {
public:
    void synchronize() override;
    /// Whether the device has stored the fence; throws the session's error when it failed first.
    bool query() override;

private:
    friend class NpuBackend;
    Session* session_ = nullptr;
    uint64_t seq_ = 0;
    uint32_t slot_ = 0;
    uint64_t value_ = 0;
};

class NpuBackend final : public Backend {
public:
    NpuBackend(NpuDevice& device, Session& session);
    Device& device() override;
    /// Translates and queues `nodes` (views and leaves skipped); returns without waiting. With a
    /// graph_uid seen among the last kCachedGraphs calls, sends that call's batches again instead
    /// of translating (a group's: every rank's, with fresh fence values). The last batch stays open (unsent) until the next event_record, synchronize
    /// or graph_compute, so the FENCE of the event recorded after a split travels in the split's
    /// last batch instead of a batch of its own. Throws tessel::Error(Device) when the session has failed,
    /// Error(Unsupported) for a node the device does not implement, Error(InvalidArgument) for an
    /// operand outside NPU memory.
    void graph_compute(const std::vector<Tensor*>& nodes, uint64_t graph_uid = 0) override;
    /// Unless TESSEL_NPU_REORDER=0: keeps fusable chains together and stacks matmuls sharing an
    /// input (reorder.hpp); TESSEL_NPU_VERBOSE prints "reorder: moved N of M nodes".
    void graph_optimize(std::vector<Tensor*>& nodes) override;
    ~NpuBackend() override;
    /// Waits for every queued batch, then completes pending get_tensor_async copies; throws the
    /// device's error as tessel::Error(Device).
    void synchronize() override;
    /// For a tensor in NPU memory: copies `src` into a staging buffer now and queues a MEMCPY op
    /// into t (stream order). Throws tessel::Error(InvalidArgument) when the range exceeds t.
    void set_tensor_async(Tensor& t, const void* src, size_t offset, size_t size) override;
    /// For a tensor in NPU memory: queues a MEMCPY op from t into a staging buffer; the bytes reach
    /// `dst` in synchronize(). Throws like set_tensor_async.
    /// A tiled weight (buffer.hpp) goes through its buffer synchronously instead, both ways.
    void get_tensor_async(const Tensor& t, void* dst, size_t offset, size_t size) override;
    /// "npu_<OP>" for a node the last graph_compute sent to the device (a fused op's name, e.g.
    /// "npu_RMS_NORM+MUL", for each of its nodes), else "".
    std::string kernel_name(const Tensor& t) const override;
    /// From another NPU stream, both tensors plain (not tiled), contiguous and in NPU memory: a
    /// MEMCPY op on the producer's stream, behind its work (this stream's buffer mapped there);
    /// when the producer runs on another device runtime, a fence it records and this device waits
    /// for (FENCE_WAIT). Otherwise false.
    bool cpy_tensor_async(Backend& src_stream, const Tensor& src, Tensor& dst) override;
    /// Queues a FENCE op storing e's value in one of this session's fence slots and sends the batch.
    /// Another device's event is completed on the host: this stream is synchronized.
    void event_record(Event& e) override;
    /// An event of this session or of a virtual session of the same device runtime: nothing to do
    /// (the runtime runs batches in submission order, and recording sent the event's). Another NPU
    /// session's event: a FENCE_WAIT op on that session's fence slot joins the open batch, so this
    /// device waits for the peer's without the host blocking. Any other event: waited for on the host.
    void event_wait(Event& e) override;

    /// Profiling (npu/host/profile.cpp): the session keeps every answered batch's records, and
    /// take_profile pairs them with the nodes of the graph_compute calls since the last take.
    void set_profiling(bool on) override;
    std::vector<OpTiming> take_profile() override;

    /// Adds one op outside any graph (the all-reduce's fences and shares) behind the work queued on
    /// this stream, sending the open batch first when the op does not fit. Operand tensors must
    /// stay alive until the batch is sent (send(), event_record, synchronize, graph_compute).
    /// `kparams` (TSL_NPU_KPARAMS_BYTES; null: zeros) become the op's. Returns its index in the open batch.
    uint32_t enqueue(uint32_t opcode, const std::string& name, const std::vector<Operand>& srcs, const std::vector<Operand>& dsts,
                     const int32_t* params, const uint8_t* kparams = nullptr);
    /// Sends the open batch now (a group's peers' first; an all-reduce waiting in it: every rank's).
    void send() { flush(); }
    /// An all-reduce whose ops wait in this stream's open batch (Communicator::allreduce with
    /// AllReduceUse::NextAdd): the next graph_compute may offer it its first ADD, and sending
    /// the batch sends every rank's (PendingAllReduce::release).
    void hold_allreduce(std::shared_ptr<PendingAllReduce> pending) { pending_allreduce_ = std::move(pending); }
    /// Sends the batch when an all-reduce waits in it.
    void release_allreduce() {
        if (pending_allreduce_) flush();
    }
    Session& session() { return session_; }
    /// A group's stream of rank size(): from now on graph_compute gives the ranks a part each of
    /// every matmul of a weight (docs/npu.md, "Groups"). The peer's session must read this one's
    /// fences and this one the peer's (Session::map_peer_fences).
    void add_peer(std::unique_ptr<NpuBackend> peer) { peers_.push_back(std::move(peer)); }
    /// Ranks in other processes (an MPI job, allreduce.hpp RowParts): from now on graph_compute
    /// computes this rank's part of every matmul of a weight, waits for it and exchanges the parts
    /// with the other ranks before the ops that read them.
    void set_remote_ranks(std::unique_ptr<RowParts> ranks) { remote_ = std::move(ranks); }

    /// Calls of graph_compute served from the translation cache.
    uint64_t cache_hits() const { return cache_hits_; }
    static constexpr size_t kCachedGraphs = 8;

private:
    friend class PendingAllReduce;  // fuses its ops in the ranks' open batches
    void flush();
    /// Profiling: appends the nodes of `nodes` that become device ops.
    void note_profiled(const std::vector<Tensor*>& nodes);
    /// A group: queues op `f` split by rows over this stream (part 0) and the peers (parts 1..),
    /// fenced so that each peer starts after this stream's earlier ops and this stream goes on
    /// after every peer's part. Returns the op's index in this stream's batch.
    uint32_t add_split(const FusedOp& f, const std::vector<Operand>& operands);
    /// Ranks in other processes: queues this rank's part of op f, runs it and gathers the other
    /// ranks' parts of its outputs (RowParts::gather_parts). Returns the op's index in its batch.
    uint32_t add_remote_part(const FusedOp& f, const std::vector<Operand>& operands);
    /// Adds op f over `operands` with `kparams` (f's own when null) to the open batch, sending it
    /// first when f does not fit; returns the op's index.
    uint32_t add_fitted(const FusedOp& f, const std::vector<Operand>& operands, const uint8_t* kparams = nullptr);
    /// Throws tessel::Error(Unsupported): node's operands exceed an empty batch's limits.
    [[noreturn]] void throw_unfit(const Tensor& node, const std::vector<Operand>& operands) const;
    /// Reserves `size` bytes of the staging buffer (growing it after a synchronize when full);
    /// returns their offset.
    uint64_t stage(size_t size);
    /// Queues a MEMCPY of `size` bytes between a span of t and staging offset `staged`.
    void queue_memcpy(const Tensor& t, size_t offset, size_t size, uint64_t staged, bool to_tensor);

    /// A batch of a cached graph: whose (0 this stream, r a group's peer r - 1), and whether the
    /// call left it open (sent by the next flush) rather than sent.
    struct RecordedBatch {
        uint32_t rank;
        bool open;
        OpBatch batch;
    };
    struct CachedGraph {
        uint64_t uid;
        std::vector<RecordedBatch> batches;  // in the order they were sent
        std::unordered_map<const Tensor*, std::string> kernels;  // node -> its op's name
    };
    /// A group's cached batches carry the fences of the last call: gives every FENCE the next
    /// value of its session, in order, and points every FENCE_WAIT on one of them at its new value.
    void renew_fences(std::vector<RecordedBatch>& batches);
    /// Stream of rank r of a group (0: this one).
    NpuBackend& rank_stream(uint32_t r) { return r == 0 ? *this : *peers_[r - 1]; }

    NpuDevice& device_;
    Session& session_;
    OpBatch batch_;
    std::unordered_map<const Tensor*, std::string> last_kernels_;  // the last graph_compute's nodes -> op names (kernel_name)
    std::deque<CachedGraph> cache_;  // most recent first
    std::vector<RecordedBatch>* recording_ = nullptr;  // a group's peers record into rank 0's list
    uint32_t record_rank_ = 0;
    uint64_t cache_hits_ = 0;
    bool profiling_ = false;
    std::vector<const Tensor*> profiled_nodes_;  // while profiling: the nodes sent since take_profile
    std::vector<std::unique_ptr<NpuBackend>> peers_;  // a group's ranks 1..n-1
    std::unique_ptr<RowParts> remote_;                // ranks in other processes
    std::shared_ptr<PendingAllReduce> pending_allreduce_;  // an all-reduce waiting in batch_ (hold_allreduce)
    std::unique_ptr<ShmBuffer> staging_;
    uint64_t staging_used_ = 0;
    struct PendingRead {
        uint64_t staged;
        void* dst;
        size_t size;
    };
    std::vector<PendingRead> reads_;
};

}  // namespace tessel::npu
