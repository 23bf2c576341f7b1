#include "npu/host/opbatch.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <set>

#include "npu/link/shm.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

OpBatch::OpBatch(const BatchLimits& limits) : limits_(limits) {
    limits_.max_bufs = std::min(limits_.max_bufs, TSL_NPU_MAX_BUFS);
    limits_.max_tensors = tensor_capacity(limits);
}

uint32_t OpBatch::tensor_capacity(const BatchLimits& limits) {
    const uint64_t per_ops = static_cast<uint64_t>(limits.max_ops) * (TSL_NPU_MAX_SRC + TSL_NPU_MAX_DST);
    return static_cast<uint32_t>(std::min<uint64_t>({per_ops, limits.max_tensors, TSL_NPU_MAX_TENSORS}));
}

uint64_t OpBatch::max_block_size(const BatchLimits& limits) {
    return tsl_npu_block_size(std::min(limits.max_bufs, TSL_NPU_MAX_BUFS), tensor_capacity(limits), limits.max_ops);
}

OpBatch::ShapeKey OpBatch::shape_key(const Operand& o) const {
    const Tensor& t = *o.tensor;
    return {o.buffer->fd(), o.offset, static_cast<uint32_t>(t.type), t.ne[0], t.ne[1], t.ne[2], t.ne[3], t.nb[0], t.nb[1], t.nb[2], t.nb[3]};
}

bool OpBatch::known_tensor(const Operand& o) const {
    return tensor_by_ptr_.count(o.tensor) || tensor_by_shape_.count(shape_key(o));
}

bool OpBatch::fit(const std::vector<Operand>& operands) const {
    if (ops_.size() + 1 > limits_.max_ops) return false;
    std::set<int32_t> new_fds;
    uint64_t new_bytes = 0;
    uint32_t new_tensors = 0;
    std::set<const Tensor*> seen;
    for (const Operand& o : operands) {
        if (!o.tensor) continue;  // an empty slot
        if (!buf_by_fd_.count(o.buffer->fd()) && new_fds.insert(o.buffer->fd()).second) new_bytes += o.buffer->size();
        if (!known_tensor(o) && seen.insert(o.tensor).second) ++new_tensors;
    }
    return bufs_.size() + new_fds.size() <= limits_.max_bufs && tensors_.size() + new_tensors <= limits_.max_tensors &&
           mapped_ + new_bytes <= limits_.max_mapped;
}

uint32_t OpBatch::buffer_index(const Operand& o) {
    const int32_t fd = o.buffer->fd();
    if (auto it = buf_by_fd_.find(fd); it != buf_by_fd_.end()) return it->second;
    tsl_npu_buf_desc b{};
    b.fd = fd;
    b.flags = o.buffer_flags;
    b.size = o.buffer->size();
    bufs_.push_back(b);
    mapped_ += b.size;
    return buf_by_fd_[fd] = static_cast<uint32_t>(bufs_.size() - 1);
}

uint16_t OpBatch::tensor_index(const Operand& o) {
    if (auto it = tensor_by_ptr_.find(o.tensor); it != tensor_by_ptr_.end()) return it->second;
    const ShapeKey key = shape_key(o);
    if (auto it = tensor_by_shape_.find(key); it != tensor_by_shape_.end()) {
        tensor_by_ptr_[o.tensor] = it->second;
        return it->second;
    }
    const Tensor& t = *o.tensor;
    tsl_npu_tensor_desc d{};
    d.buf = buffer_index(o);
    d.type = static_cast<uint32_t>(t.type);
    d.offset = o.offset;
    d.size = o.size;
    for (int i = 0; i < 4; ++i) {
        d.ne[i] = t.ne[i];
        d.nb[i] = t.nb[i];
    }
    d.flags = (t.flags & kFlagWeight) ? TSL_NPU_TENSOR_WEIGHT : 0;
    if (o.buffer_flags & TSL_NPU_BUF_FENCE) d.flags |= TSL_NPU_TENSOR_FENCE;
    if (o.repacked) d.flags |= TSL_NPU_TENSOR_REPACKED;
    tensors_.push_back(d);
    const auto idx = static_cast<uint16_t>(tensors_.size() - 1);
    tensor_by_ptr_[o.tensor] = idx;
    tensor_by_shape_[key] = idx;
    return idx;
}

uint32_t OpBatch::add(uint32_t opcode, const std::string& name, const std::vector<Operand>& srcs, const std::vector<Operand>& dsts,
                      const int32_t* params, std::vector<const Tensor*> nodes) {
    if (srcs.size() > TSL_NPU_MAX_SRC || dsts.size() > TSL_NPU_MAX_DST)
        throw Error(ErrorCode::InvalidArgument, "NPU op " + name + ": " + std::to_string(srcs.size()) + " inputs and " +
                                                    std::to_string(dsts.size()) + " outputs exceed the descriptor's " +
                                                    std::to_string(TSL_NPU_MAX_SRC) + "/" + std::to_string(TSL_NPU_MAX_DST));
    std::vector<Operand> all = srcs;
    all.insert(all.end(), dsts.begin(), dsts.end());
    if (!fit(all)) throw Error(ErrorCode::InvalidArgument, "NPU op " + name + " does not fit in the batch (call fit first)");
    ops_.push_back(describe_op(opcode, srcs, dsts, params));
    names_.push_back(name);
    details_.emplace_back();
    nodes_.push_back(std::move(nodes));
    return static_cast<uint32_t>(ops_.size() - 1);
}

tsl_npu_op_desc OpBatch::describe_op(uint32_t opcode, const std::vector<Operand>& srcs, const std::vector<Operand>& dsts,
                                     const int32_t* params) {
    tsl_npu_op_desc op{};
    op.opcode = opcode;
    if (params) std::memcpy(op.params, params, sizeof op.params);
    std::fill(std::begin(op.src), std::end(op.src), static_cast<uint16_t>(TSL_NPU_NONE));
    std::fill(std::begin(op.dst), std::end(op.dst), static_cast<uint16_t>(TSL_NPU_NONE));
    auto index = [&](const Operand& o) { return o.tensor ? tensor_index(o) : static_cast<uint16_t>(TSL_NPU_NONE); };
    for (size_t i = 0; i < srcs.size(); ++i) op.src[i] = index(srcs[i]);
    for (size_t i = 0; i < dsts.size(); ++i) op.dst[i] = index(dsts[i]);
    return op;
}

void OpBatch::rewrite(uint32_t idx, uint32_t opcode, const std::string& name, const std::vector<Operand>& srcs,
                      const std::vector<Operand>& dsts, const int32_t* params) {
    const auto refuse = [&](const std::string& why) {
        throw Error(ErrorCode::InvalidArgument, "NPU op #" + std::to_string(idx) + " as " + name + ": " + why);
    };
    if (idx >= ops_.size()) refuse("no such op in the batch");
    if (srcs.size() > TSL_NPU_MAX_SRC || dsts.size() > TSL_NPU_MAX_DST) refuse("too many operands");
    for (const std::vector<Operand>* list : {&srcs, &dsts})
        for (const Operand& o : *list)
            if (o.tensor && (!known_tensor(o) || !buf_by_fd_.count(o.buffer->fd()))) refuse("an operand the batch does not hold");
    const std::array<uint8_t, TSL_NPU_KPARAMS_BYTES> kparams = [&] {
        std::array<uint8_t, TSL_NPU_KPARAMS_BYTES> k{};
        std::memcpy(k.data(), ops_[idx].kparams, k.size());
        return k;
    }();
    ops_[idx] = describe_op(opcode, srcs, dsts, params);
    std::memcpy(ops_[idx].kparams, kparams.data(), kparams.size());
    names_[idx] = name;
}

void OpBatch::write(uint8_t* block, tsl_npu_batch_req& req) const {
    // Largest buffers first (ties by fd, so the order is deterministic); tensors follow their buffer.
    std::vector<uint32_t> order(bufs_.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return bufs_[a].size != bufs_[b].size ? bufs_[a].size > bufs_[b].size : bufs_[a].fd < bufs_[b].fd;
    });
    std::vector<uint32_t> new_index(bufs_.size());
    auto* b = reinterpret_cast<tsl_npu_buf_desc*>(block);
    for (uint32_t i = 0; i < order.size(); ++i) {
        b[i] = bufs_[order[i]];
        new_index[order[i]] = i;
    }
    auto* t = reinterpret_cast<tsl_npu_tensor_desc*>(block + tsl_npu_block_tensors_offset(n_bufs()));
    for (size_t i = 0; i < tensors_.size(); ++i) {
        t[i] = tensors_[i];
        t[i].buf = new_index[tensors_[i].buf];
    }
    std::memcpy(block + tsl_npu_block_ops_offset(n_bufs(), n_tensors()), ops_.data(), ops_.size() * sizeof(tsl_npu_op_desc));
    std::memset(block + tsl_npu_block_profile_offset(n_bufs(), n_tensors(), n_ops()), 0, ops_.size() * sizeof(tsl_npu_profile));
    req.n_bufs = n_bufs();
    req.n_tensors = n_tensors();
    req.n_ops = n_ops();
    req.block_size = block_size();
}

void OpBatch::corrupt_first_tensor_for_test() {
    if (tensors_.empty()) return;
    tsl_npu_tensor_desc& t = tensors_[0];
    t.offset = bufs_[t.buf].size - t.size + 1;
}

void OpBatch::reset() {
    bufs_.clear();
    tensors_.clear();
    ops_.clear();
    names_.clear();
    details_.clear();
    nodes_.clear();
    buf_by_fd_.clear();
    tensor_by_ptr_.clear();
    tensor_by_shape_.clear();
    mapped_ = 0;
}

}  // namespace tessel::npu
