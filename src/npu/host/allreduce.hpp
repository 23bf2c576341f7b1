// The all-reduce communicator of NPU sessions (DESIGN.md, "The npu offload path"; docs/npu.md,
// "All-reduce"): 2 to 4 ranks, each an NPU stream; a call sums one F32 tensor per rank, in place,
// on the devices, without the host touching the data or waiting.
//
// Each rank's stream gets, behind its queued work: a FENCE (entry: its input is ready), a
// FENCE_WAIT on every peer's entry fence, its ALLREDUCE share (proto.h), a FENCE (exit) and a
// FENCE_WAIT on every peer's exit fence. So no rank reads a peer's tensor before the peer wrote it,
// and no rank goes on before every share of its tensor is summed. All ranks end with the same bits.
// A caller that reads the sums only through an ADD at the start of each rank's next graph may let
// the ranks fuse the two (ALLREDUCE+ADD, docs/npu.md "All-reduce").
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "graph/tensor.hpp"
#include "npu/host/opbatch.hpp"
#include "npu/host/plan.hpp"

namespace tessel::npu {

class FusionGraph;
class NpuBackend;

enum class AllReduceMode : uint32_t {
    Elements = 0,  ///< 1-D: contiguous tensors, elements split by rank in multiples of 128
    Rows = 1,      ///< 2-D: rows (ne[1..3]) split by rank; any row stride
};

/// What the caller does with the sums.
enum class AllReduceUse : uint32_t {
    Tensors = 0,  ///< reads them from the tensors: every rank's tensor holds the sum
    NextAdd = 1,  ///< reads them only through an ADD that starts each rank's next graph_compute: when
                  ///< every rank's does, each rank runs one ALLREDUCE_ADD op writing the ADD's output,
                  ///< and the tensors keep their inputs
};

/// Bit of AllReduceApi::allreduce_tensor's mode: AllReduceUse::NextAdd.
inline constexpr int kAllReduceNextAdd = 2;

/// The VTCM plan of one rank's ALLREDUCE or ALLREDUCE_ADD op (tsl_npu_allreduce_kparams).
struct AllReducePlan {
    uint32_t block = 0;    ///< elements (Elements, a multiple of 128) or rows (Rows) a worker sums per step
    uint64_t scratch = 0;  ///< VTCM bytes the op states (tsl_npu_allreduce_scratch)
};

/// Plans the op of rank `rank` of `n` over tensors shaped like t: its share (fused: the whole
/// tensor) split over budget.n_threads workers, a step of at most 65536 elements or 128 rows,
/// shrunk until two buffers per worker fit budget.vtcm_bytes. Throws tessel::Error(Unsupported)
/// naming t and the budget when not even 128 elements (one row) per worker fit.
AllReducePlan plan_allreduce(const Tensor& t, AllReduceMode mode, size_t n, size_t rank, bool fused, const DeviceBudget& budget);

/// What an all-reduce communicator does, wherever its ranks run: this process's NPU sessions
/// (Communicator) or one process each (MpiCommunicator, allreduce_mpi.hpp, with TESSEL_MPI).
class AllReduceComm {
public:
    virtual ~AllReduceComm() = default;
    /// Ranks in all.
    virtual size_t size() const = 0;
    /// Sums one F32 tensor per rank in place: `tensors` holds this process's ranks' tensors, in
    /// rank order. Every rank ends with the same bits (each element summed in rank order). With
    /// AllReduceUse::NextAdd the sums may instead land only in the ADD that follows (Communicator).
    virtual void allreduce(std::span<Tensor* const> tensors, AllReduceMode mode, AllReduceUse use = AllReduceUse::Tensors) = 0;
};

class Communicator final : public AllReduceComm {
public:
    /// Ranks 0..n-1 are `streams` in order: 2 to 4 NPU backends, each on a device runtime of its own
    /// (not two virtual sessions of one device: it runs one batch at a time, and ranks wait for each other).
    /// Throws tessel::Error(InvalidArgument) naming the problem otherwise.
    explicit Communicator(std::span<Backend* const> streams);
    size_t size() const override { return ranks_.size(); }

    /// Queues the all-reduce of `tensors` (tensor r on rank r's device memory; F32, equal shapes;
    /// contiguous for Elements) on every rank's stream; returns without waiting: synchronize a
    /// stream (or record an event on it) to use its result. The ops wait in the ranks' open
    /// batches until one rank's batch is sent (its graph_compute fills it, synchronize, an event,
    /// a copy), which sends every rank's. With AllReduceUse::NextAdd, when each rank's next
    /// graph_compute starts with an ADD of its tensor and an addend (same shape, or broadcast
    /// along ne[1..3] for Rows; the tensor read by no other node of that graph), the ranks run
    /// ALLREDUCE_ADD instead: each rank writes the whole sum plus its addend to its ADD's output
    /// (the same bits as the ADD after the sum), and the tensors keep their inputs. Fused only when
    /// every rank's batch got its ADD before the first was sent; otherwise each ADD runs after the
    /// all-reduce. Throws tessel::Error(InvalidArgument) naming the tensor for a wrong count, type,
    /// shape, layout or placement, Error(Unsupported) when the plan does not fit a rank's VTCM
    /// (plan_allreduce), and the session's error when a device failed.
    void allreduce(std::span<Tensor* const> tensors, AllReduceMode mode, AllReduceUse use = AllReduceUse::Tensors) override;

private:
    std::vector<NpuBackend*> ranks_;
};

/// An all-reduce whose ops wait in its ranks' open batches (Communicator::allreduce): the ADD
/// each rank's next graph offers, and the decision to fuse, taken when the first rank's batch is
/// sent (NpuBackend::flush calls release).
class PendingAllReduce {
public:
    struct Rank {
        NpuBackend* stream = nullptr;
        uint32_t op = 0;                   ///< the rank's ALLREDUCE op in its open batch
        Operand tensor;                    ///< the rank's tensor
        const Tensor* add = nullptr;       ///< the offered ADD node (null: none yet)
        uint32_t add_op = 0;               ///< its op, after the all-reduce's exit fences
        Operand addend, out;
        std::array<uint8_t, TSL_NPU_KPARAMS_BYTES> fused_kparams{};
    };
    PendingAllReduce(AllReduceMode mode, std::vector<Rank> ranks) : mode_(mode), ranks_(std::move(ranks)) {}

    /// The index of `stream` among the ranks (size() when not one).
    size_t rank_of(const NpuBackend& stream) const;
    size_t size() const { return ranks_.size(); }
    /// True when ADD node `add` (the first node of rank r's graph) may take rank r's sum: it adds
    /// rank r's tensor (read by no other node of `graph`) and an F32 addend into an F32 output of
    /// the tensor's shape that overlaps no rank's tensor, and the fused op's plan fits the rank's
    /// device. Keeps the addend, output and plan for release then.
    bool accepts(size_t r, const Tensor& add, const FusionGraph& graph);
    /// Rank r's batch holds the ADD as op `add_op`.
    void offer(size_t r, const Tensor& add, uint32_t add_op);
    /// Fuses every rank's ALLREDUCE and ADD when all offered one, then sends every rank's batch.
    /// Throws the first send's error (after trying every rank).
    void release();

private:
    AllReduceMode mode_;
    std::vector<Rank> ranks_;
};

/// Ranks in other processes of which each computes a part of every weight matmul's rows (a model
/// split across MPI ranks: MpiCommunicator, allreduce_mpi.hpp). Part p of n holds row tiles
/// [n_rt * p / n, n_rt * (p + 1) / n) of every output (tsl_npu_matmul_kparams.part).
class RowParts {
public:
    virtual ~RowParts() = default;
    virtual int rank() const = 0;
    virtual int n_ranks() const = 0;
    /// Every rank has computed its part of F32 tensor t's rows (ne[0]) in host-visible memory
    /// (t.data); on return every rank holds all of them. A collective call. Throws
    /// tessel::Error(Device) when the exchange fails.
    virtual void gather_parts(const Tensor& t) = 0;
};

/// The table NpuDevice::proc("allreduce_comm") returns (proc("allreduce_comm_mpi"): the same
/// over MPI processes, allreduce_mpi.hpp): the communicator as plain entry points.
struct AllReduceApi {
    /// A communicator over the `n` streams of this process's ranks; throws as its constructor.
    AllReduceComm* (*init)(Backend* const* streams, int n);
    void (*free)(AllReduceComm* comm);
    /// AllReduceComm::allreduce over `n` tensors; mode 0 = Elements, 1 = Rows, plus
    /// kAllReduceNextAdd for AllReduceUse::NextAdd. Throws tessel::Error(InvalidArgument) for another mode.
    void (*allreduce_tensor)(AllReduceComm* comm, Tensor* const* tensors, int n, int mode);
};

/// The in-process table (Communicator).
const AllReduceApi& allreduce_api();

/// The entry points every table shares: free deletes, allreduce_tensor checks n and mode and calls.
void allreduce_api_free(AllReduceComm* comm);
void allreduce_api_call(AllReduceComm* comm, Tensor* const* tensors, int n, int mode);

}  // namespace tessel::npu
