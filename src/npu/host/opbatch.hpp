// An op batch (DESIGN.md, "The npu offload path"): nodes collected into one descriptor table for
// the device. Buffers are deduplicated by fd, tensors by pointer and by (data, type, shape,
// strides); limits on ops, buffers, tensors and mapped bytes are checked by fit() before add().
// write() orders the buffers by size (largest first), remaps the tensors' buffer indices and lays
// the block out as proto.h describes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "graph/tensor.hpp"
#include "npu/proto/proto.h"

namespace tessel::npu {

class ShmBuffer;

struct BatchLimits {
    uint32_t max_ops = 1024;
    uint32_t max_bufs = TSL_NPU_MAX_BUFS;
    uint32_t max_tensors = TSL_NPU_MAX_TENSORS;
    uint64_t max_mapped = 3ull << 30;  ///< sum of the sizes of the batch's buffers, bytes
};

/// An operand of an op: a tensor and the shared buffer holding its data at `offset` bytes
/// (tensor == nullptr: an empty slot, e.g. an optional input that is absent).
struct Operand {
    const Tensor* tensor = nullptr;
    const ShmBuffer* buffer = nullptr;
    uint32_t buffer_flags = 0;  ///< TSL_NPU_BUF_*
    uint64_t offset = 0;
    uint64_t size = 0;  ///< bytes the device may touch: [offset, offset + size)
    bool repacked = false;  ///< stored as 32x32 tiles (tiled.hpp): the descriptor gets TSL_NPU_TENSOR_REPACKED
};

class OpBatch {
public:
    explicit OpBatch(const BatchLimits& limits);

    /// Largest block write() can produce under these limits, bytes (the op-queue slot size).
    static uint64_t max_block_size(const BatchLimits& limits);
    /// The tensor-table size the limits allow: min(max_tensors, max_ops × (MAX_SRC + MAX_DST)).
    static uint32_t tensor_capacity(const BatchLimits& limits);

    bool empty() const { return ops_.empty(); }
    uint32_t n_ops() const { return static_cast<uint32_t>(ops_.size()); }
    uint32_t n_bufs() const { return static_cast<uint32_t>(bufs_.size()); }
    uint32_t n_tensors() const { return static_cast<uint32_t>(tensors_.size()); }
    uint64_t mapped_bytes() const { return mapped_; }

    /// True when an op over `operands` fits next to what the batch holds.
    bool fit(const std::vector<Operand>& operands) const;
    /// Appends op `opcode` (name for logs and profiles, e.g. "MUL_MAT" or a fused "RMS_NORM+MUL")
    /// with inputs `srcs` and outputs `dsts` (at most TSL_NPU_MAX_SRC / TSL_NPU_MAX_DST; an Operand
    /// without tensor is an empty slot, TSL_NPU_NONE), node parameters `params` and the graph nodes
    /// the op computes (`nodes`: one, several for a fused op, none for MEMCPY and FENCE). Returns
    /// the op's index. Throws tessel::Error(InvalidArgument) when it does not fit (call fit() first).
    uint32_t add(uint32_t opcode, const std::string& name, const std::vector<Operand>& srcs, const std::vector<Operand>& dsts,
                 const int32_t* params, std::vector<const Tensor*> nodes = {});
    /// Direct access to the last op's descriptor (e.g. to fill kernel params).
    tsl_npu_op_desc& last_op() { return ops_.back(); }
    /// Direct access to op idx's descriptor (< n_ops()).
    tsl_npu_op_desc& op(uint32_t idx) { return ops_.at(idx); }
    /// Turns op idx into op `opcode` named `name` over `srcs` / `dsts` with node parameters
    /// `params` (null: zeros), keeping its kparams and nodes (e.g. a fusion decided after both ops
    /// were added). Every operand must be a tensor of a buffer the batch holds already, so the
    /// limits still hold. Throws tessel::Error(InvalidArgument) naming the op otherwise.
    void rewrite(uint32_t idx, uint32_t opcode, const std::string& name, const std::vector<Operand>& srcs,
                 const std::vector<Operand>& dsts, const int32_t* params);
    /// Attaches a description (types, shapes) to the last op, for profile lines.
    void describe_last(std::string text) { details_.back() = std::move(text); }

    /// Writes the block (buffers ordered by size, largest first) to `block`, which must hold
    /// block_size() bytes, and fills req's counts and block_size (seq and offset are the queue's).
    void write(uint8_t* block, tsl_npu_batch_req& req) const;
    uint64_t block_size() const { return tsl_npu_block_size(n_bufs(), n_tensors(), n_ops()); }
    /// Names of the ops in order (logs, profiles).
    const std::vector<std::string>& op_names() const { return names_; }
    /// Descriptions given by describe_last ("" where none).
    const std::vector<std::string>& op_details() const { return details_; }
    /// Per op, the graph nodes it computes, in graph order (add's `nodes`).
    const std::vector<std::vector<const Tensor*>>& op_nodes() const { return nodes_; }
    /// Descriptor tables as they stand (buffer order before write()'s sort), for tests and logs.
    const std::vector<tsl_npu_buf_desc>& buffers() const { return bufs_; }
    const std::vector<tsl_npu_tensor_desc>& tensors() const { return tensors_; }
    const std::vector<tsl_npu_op_desc>& ops() const { return ops_; }

    void reset();
    /// Test hook (TESSEL_NPU_FAULT=bad-desc): moves the first tensor to end one byte past its buffer.
    void corrupt_first_tensor_for_test();

private:
    using ShapeKey = std::tuple<int32_t, uint64_t, uint32_t, int64_t, int64_t, int64_t, int64_t, uint64_t, uint64_t, uint64_t, uint64_t>;
    ShapeKey shape_key(const Operand& o) const;
    /// The descriptor of an op (tensors added to the table as needed).
    tsl_npu_op_desc describe_op(uint32_t opcode, const std::vector<Operand>& srcs, const std::vector<Operand>& dsts, const int32_t* params);
    bool known_tensor(const Operand& o) const;
    uint16_t tensor_index(const Operand& o);
    uint32_t buffer_index(const Operand& o);

    BatchLimits limits_;
    std::vector<tsl_npu_buf_desc> bufs_;
    std::vector<tsl_npu_tensor_desc> tensors_;
    std::vector<tsl_npu_op_desc> ops_;
    std::vector<std::string> names_;
    std::vector<std::string> details_;
    std::vector<std::vector<const Tensor*>> nodes_;
    std::unordered_map<int32_t, uint32_t> buf_by_fd_;
    std::unordered_map<const Tensor*, uint16_t> tensor_by_ptr_;
    std::map<ShapeKey, uint16_t> tensor_by_shape_;
    uint64_t mapped_ = 0;
};

}  // namespace tessel::npu
