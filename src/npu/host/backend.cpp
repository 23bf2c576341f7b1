#include "npu/host/backend.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "core/log.hpp"
#include "npu/host/device.hpp"
#include "npu/host/fusion.hpp"
#include "npu/host/session.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/reorder.hpp"
#include "npu/host/trace.hpp"
#include "npu/host/translate.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

void NpuEvent::synchronize() {
    if (!session_) return;
    if (session_->fence_value(slot_) >= value_) return;
    session_->wait(seq_);
    if (session_->fence_value(slot_) < value_)
        throw Error(ErrorCode::Device, session_->name() + ": batch #" + std::to_string(seq_) + " ended without storing fence slot " +
                                           std::to_string(slot_));
}

bool NpuEvent::query() {
    if (!session_ || session_->fence_value(slot_) >= value_) return true;
    session_->check();
    return false;
}

NpuBackend::NpuBackend(NpuDevice& device, Session& session) : device_(device), session_(session), batch_(session.limits()) {}

Device& NpuBackend::device() { return device_; }

std::string NpuBackend::kernel_name(const Tensor& t) const {
    const auto it = last_kernels_.find(&t);
    return it != last_kernels_.end() ? "npu_" + it->second : std::string();
}

void NpuBackend::flush() {
    if (pending_allreduce_) {
        const auto pending = std::move(pending_allreduce_);
        return pending->release();  // decides the fusion and sends every rank's batch, this one's too
    }
    for (auto& peer : peers_) peer->flush();  // a part this stream waits for is sent before the wait
    if (batch_.empty()) return;
    if (recording_) recording_->push_back({record_rank_, false, batch_});
    try {
        session_.submit(batch_);
    } catch (...) {
        batch_.reset();
        throw;
    }
    batch_.reset();
}

namespace {

// "Q4_0 [896, 4096] x F32 [896, 7] -> F32 [4096, 7]": the types and shapes a profile line shows.
std::string profile_text(const Tensor& node) {
    auto shape = [](const Tensor& t) {
        std::string s = std::string(dtype_name(t.type)) + " [" + std::to_string(t.ne[0]);
        int last = kMaxDims - 1;
        while (last > 0 && t.ne[last] == 1) --last;
        for (int i = 1; i <= last; ++i) s += ", " + std::to_string(t.ne[i]);
        return s + "]";
    };
    std::string text;
    for (const Tensor* s : node.src)
        if (s) text += (text.empty() ? "" : " x ") + shape(*s);
    return text + " -> " + shape(node);
}

}  // namespace

void NpuBackend::throw_unfit(const Tensor& node, const std::vector<Operand>& operands) const {
    uint64_t bytes = 0;
    std::vector<int> seen;
    for (const Operand& o : operands)
        if (std::find(seen.begin(), seen.end(), o.buffer->fd()) == seen.end()) {
            seen.push_back(o.buffer->fd());
            bytes += o.buffer->size();
        }
    throw Error(ErrorCode::Unsupported, session_.name() + ": " + op_name(node.op) + " " + describe(node) + " reads and writes " +
                                            std::to_string(bytes) + " bytes of buffers, more than one batch may map (TESSEL_NPU_VMEM=" +
                                            std::to_string(session_.config().max_mapped) + ")");
}

void NpuBackend::graph_compute(const std::vector<Tensor*>& nodes, uint64_t graph_uid) {
    session_.check();
    // A graph split across processes has host steps, one behind an all-reduce may change when it
    // is fused: never resent.
    if (remote_ || pending_allreduce_) graph_uid = 0;
    if (!pending_allreduce_) flush();  // nothing of an earlier call may join a cached graph's batches
    last_kernels_.clear();
    if (profiling_) note_profiled(nodes);
    if (graph_uid != 0) {
        for (auto it = cache_.begin(); it != cache_.end(); ++it) {
            if (it->uid != graph_uid) continue;
            if (!peers_.empty()) renew_fences(it->batches);
            for (const RecordedBatch& b : it->batches) {
                NpuBackend& s = rank_stream(b.rank);
                if (b.open) s.batch_ = b.batch;  // left open, like a translated call's
                else s.session_.submit(b.batch);
            }
            ++cache_hits_;
            last_kernels_ = it->kernels;
            if (session_.config().verbose)
                tessel::logf(LogLevel::Debug, "npu: %s graph %llu from the translation cache (%zu batches)", session_.name().c_str(),
                             static_cast<unsigned long long>(graph_uid), it->batches.size());
            return;
        }
    }
    TraceSpan span(session_.trace(), "translate");
    CachedGraph entry{graph_uid, {}, {}};
    const auto record = [&](std::vector<RecordedBatch>* into) {
        for (uint32_t r = 0; r <= peers_.size(); ++r) {
            rank_stream(r).recording_ = into;
            rank_stream(r).record_rank_ = r;
        }
    };
    record(graph_uid != 0 ? &entry.batches : nullptr);
    try {
        const int verbose = session_.config().verbose;
        const bool profile = session_.config().profile;
        const FusionGraph graph(nodes);
        const FusionContext ctx{graph, device_.budget(), device_.config().opfusion};
        auto operands = [](const DeviceOp& op) {
            std::vector<Operand> all = op.srcs;
            all.insert(all.end(), op.dsts.begin(), op.dsts.end());
            return all;
        };
        // a fused op must fit one batch on its own: never split, else its nodes go one by one
        auto fits_alone = [&](const DeviceOp& op) { return OpBatch(session_.limits()).fit(operands(op)); };
        for (size_t i = graph.next_op(0), next = 0; i < nodes.size(); i = graph.next_op(next)) {
            const FusedOp f = next_device_op(ctx, i, fits_alone, &next);
            const std::vector<Operand> all = operands(f.op);
            const bool split = (!peers_.empty() || remote_) && f.op.opcode == TSL_NPU_OP_MUL_MAT &&
                               (f.nodes.front()->src[0]->flags & kFlagWeight);
            // The graph's first op, an ADD of the sum of an all-reduce waiting in this batch: offered to it.
            const size_t ar_rank = pending_allreduce_ && i == graph.next_op(0) && f.op.opcode == TSL_NPU_OP_ADD && batch_.fit(all)
                                       ? pending_allreduce_->rank_of(*this)
                                       : SIZE_MAX;
            const bool offer = ar_rank != SIZE_MAX && pending_allreduce_->accepts(ar_rank, *f.nodes.front(), graph);
            const uint32_t idx = !split ? add_fitted(f, all) : remote_ ? add_remote_part(f, all) : add_split(f, all);
            if (offer && pending_allreduce_) pending_allreduce_->offer(ar_rank, *f.nodes.front(), idx);
            std::string text;
            for (const Tensor* n : f.nodes) {
                if (profile) text.append(text.empty() ? "" : "; ").append(profile_text(*n));
                last_kernels_[n] = f.name;
            }
            if (profile) batch_.describe_last(std::move(text));
            if (verbose)
                for (const Tensor* n : f.nodes) {
                    tessel::logf(LogLevel::Debug, "npu: %s op %u %s %s%s", session_.name().c_str(), idx, f.name.c_str(), describe(*n).c_str(),
                                 !split          ? ""
                                 : remote_       ? (" (rank " + std::to_string(remote_->rank()) + "'s part of " + std::to_string(remote_->n_ranks()) + ")").c_str()
                                                 : (" (rows split over " + std::to_string(peers_.size() + 1) + " ranks)").c_str());
                    if (verbose > 1)
                        if (const std::string plan = plan_text(*n, device_.budget()); !plan.empty())
                            tessel::logf(LogLevel::Debug, "npu: %s op %u plan %s", session_.name().c_str(), idx, plan.c_str());
                }
        }
        if (recording_)  // recorded now, sent by the next flush (the peers' first)
            for (uint32_t r = 1; r <= peers_.size() + 1; ++r) {
                NpuBackend& s = rank_stream(r % static_cast<uint32_t>(peers_.size() + 1));
                if (!s.batch_.empty()) recording_->push_back({s.record_rank_, true, s.batch_});
            }
    } catch (...) {
        record(nullptr);
        last_kernels_.clear();
        batch_.reset();
        throw;
    }
    record(nullptr);
    if (graph_uid == 0) return;
    entry.kernels = last_kernels_;
    cache_.push_front(std::move(entry));
    if (cache_.size() > kCachedGraphs) cache_.pop_back();
}

void NpuBackend::renew_fences(std::vector<RecordedBatch>& batches) {
    std::unordered_map<int, uint32_t> rank_of_fences;  // fence buffer fd -> rank
    for (uint32_t r = 0; r <= peers_.size(); ++r) rank_of_fences[rank_stream(r).session_.fence_operand().buffer->fd()] = r;
    const auto fence_of = [](const tsl_npu_op_desc& op) {
        return std::pair{static_cast<uint32_t>(op.params[2]),
                         static_cast<uint64_t>(static_cast<uint32_t>(op.params[0])) | (static_cast<uint64_t>(static_cast<uint32_t>(op.params[1])) << 32)};
    };
    std::map<std::tuple<uint32_t, uint32_t, uint64_t>, std::pair<uint32_t, uint64_t>> renewed;  // (rank, slot, old value) -> new
    for (RecordedBatch& b : batches)
        for (uint32_t i = 0; i < b.batch.n_ops(); ++i) {
            tsl_npu_op_desc& op = b.batch.op(i);
            if (op.opcode != TSL_NPU_OP_FENCE) continue;
            const auto [slot, value] = fence_of(op);
            const auto fresh = rank_stream(b.rank).session_.next_fence();
            renewed[{b.rank, slot, value}] = fresh;
            fence_params(op.params, fresh.first, fresh.second);
        }
    for (RecordedBatch& b : batches)
        for (uint32_t i = 0; i < b.batch.n_ops(); ++i) {
            tsl_npu_op_desc& op = b.batch.op(i);
            if (op.opcode != TSL_NPU_OP_FENCE_WAIT) continue;
            const int fd = b.batch.buffers()[b.batch.tensors()[op.src[0]].buf].fd;
            const auto [slot, value] = fence_of(op);
            const auto it = rank_of_fences.find(fd);
            if (it == rank_of_fences.end()) continue;  // another device's fence, stored before this graph
            const auto fresh = renewed.find({it->second, slot, value});
            if (fresh != renewed.end()) fence_params(op.params, fresh->second.first, fresh->second.second);
        }
}

uint32_t NpuBackend::add_fitted(const FusedOp& f, const std::vector<Operand>& operands, const uint8_t* kparams) {
    if (!batch_.fit(operands)) {
        flush();
        if (!batch_.fit(operands)) throw_unfit(*f.nodes.front(), operands);
    }
    const uint32_t idx = batch_.add(f.op.opcode, f.name, f.op.srcs, f.op.dsts, f.params, f.nodes);
    std::memcpy(batch_.last_op().kparams, kparams ? kparams : f.op.kparams.data(), f.op.kparams.size());
    return idx;
}

namespace {

// f's matmul kparams with part `part` of `n_parts`.
std::array<uint8_t, TSL_NPU_KPARAMS_BYTES> part_kparams(const FusedOp& f, uint16_t part, uint16_t n_parts) {
    std::array<uint8_t, TSL_NPU_KPARAMS_BYTES> kp = f.op.kparams;
    tsl_npu_matmul_kparams m;
    std::memcpy(&m, kp.data() + TSL_NPU_KPARAMS_BODY, sizeof m);
    m.part = part;
    m.n_parts = n_parts;
    std::memcpy(kp.data() + TSL_NPU_KPARAMS_BODY, &m, sizeof m);
    return kp;
}

}  // namespace

uint32_t NpuBackend::add_remote_part(const FusedOp& f, const std::vector<Operand>& operands) {
    const auto kp = part_kparams(f, static_cast<uint16_t>(remote_->rank()), static_cast<uint16_t>(remote_->n_ranks()));
    const uint32_t idx = add_fitted(f, operands, kp.data());
    flush();
    session_.synchronize();
    for (const Operand& d : f.op.dsts)
        if (d.tensor) remote_->gather_parts(*d.tensor);
    return idx;
}

uint32_t NpuBackend::add_split(const FusedOp& f, const std::vector<Operand>& operands) {
    const auto n_parts = static_cast<uint16_t>(peers_.size() + 1);
    int32_t params[TSL_NPU_OP_PARAMS];
    // This stream's FENCE: its earlier ops (the activations) are done; each peer waits for it.
    const auto [slot, value] = session_.next_fence();
    fence_params(params, slot, value);
    enqueue(TSL_NPU_OP_FENCE, "FENCE", {}, {session_.fence_operand()}, params);
    for (size_t r = 0; r < peers_.size(); ++r) {
        NpuBackend& peer = *peers_[r];
        peer.enqueue(TSL_NPU_OP_FENCE_WAIT, "FENCE_WAIT", {session_.fence_operand()}, {}, params);
        const auto kp = part_kparams(f, static_cast<uint16_t>(r + 1), n_parts);
        peer.enqueue(f.op.opcode, f.name, f.op.srcs, f.op.dsts, f.params);
        std::memcpy(peer.batch_.last_op().kparams, kp.data(), kp.size());
    }
    const auto kp0 = part_kparams(f, 0, n_parts);
    const uint32_t idx = add_fitted(f, operands, kp0.data());
    // Each peer's FENCE after its part; this stream goes on once every part is done.
    for (auto& peer : peers_) {
        int32_t peer_params[TSL_NPU_OP_PARAMS];
        const auto [peer_slot, peer_value] = peer->session_.next_fence();
        fence_params(peer_params, peer_slot, peer_value);
        peer->enqueue(TSL_NPU_OP_FENCE, "FENCE", {}, {peer->session_.fence_operand()}, peer_params);
        enqueue(TSL_NPU_OP_FENCE_WAIT, "FENCE_WAIT", {peer->session_.fence_operand()}, {}, peer_params);
    }
    return idx;
}

void NpuBackend::graph_optimize(std::vector<Tensor*>& nodes) {
    if (!device_.config().reorder) return;
    const size_t moved = reorder_nodes(nodes);
    if (device_.config().verbose)
        tessel::logf(LogLevel::Debug, "npu: %s reorder: moved %zu of %zu nodes", session_.name().c_str(), moved, nodes.size());
}

NpuBackend::~NpuBackend() {
    if (pending_allreduce_) {
        try {
            flush();  // the peers' all-reduce ops wait for this rank's
        } catch (...) {
        }
    }
    if (staging_) session_.unmap(*staging_);
}

void NpuBackend::synchronize() {
    flush();
    try {
        session_.synchronize();
    } catch (const Error&) {
        for (auto& peer : peers_) peer->session_.check();  // a failed peer is why this stream's wait for it ended
        throw;
    }
    for (auto& peer : peers_) peer->synchronize();
    for (const PendingRead& r : reads_) std::memcpy(r.dst, staging_->data() + r.staged, r.size);
    reads_.clear();
    staging_used_ = 0;
}

uint64_t NpuBackend::stage(size_t size) {
    const uint64_t aligned = (size + 127) / 128 * 128;
    if (staging_ && staging_used_ + aligned <= staging_->size()) {
        staging_used_ += aligned;
        return staging_used_ - aligned;
    }
    synchronize();  // every earlier staged copy is complete: the staging buffer is free
    if (!staging_ || aligned > staging_->size()) {
        const size_t want = std::max<size_t>(aligned, staging_ ? 2 * staging_->size() : size_t{1} << 20);
        if (staging_) session_.unmap(*staging_);
        staging_.reset();
        auto fresh = std::make_unique<ShmBuffer>(session_.name() + "-staging", want);
        session_.map(*fresh, TSL_NPU_BUF_HOST);
        staging_ = std::move(fresh);
    }
    staging_used_ = aligned;
    return 0;
}

void NpuBackend::queue_memcpy(const Tensor& t, size_t offset, size_t size, uint64_t staged, bool to_tensor) {
    // Both spans as 1-D I8 tensors of `size` bytes.
    Tensor span_t, span_s;
    span_t.set_shape(DType::I8, {static_cast<int64_t>(size)});
    span_s.set_shape(DType::I8, {static_cast<int64_t>(size)});
    Operand ot = operand(t);
    ot.tensor = &span_t;
    ot.offset += offset;
    ot.size = size;
    Operand os;
    os.tensor = &span_s;
    os.buffer = staging_.get();
    os.buffer_flags = TSL_NPU_BUF_HOST;
    os.offset = staged;
    os.size = size;
    const Operand& from = to_tensor ? os : ot;
    const Operand& to = to_tensor ? ot : os;
    flush();
    batch_.add(TSL_NPU_OP_MEMCPY, to_tensor ? "SET_TENSOR" : "GET_TENSOR", {from}, {to}, nullptr);
    flush();
}

static void check_span(const Tensor& t, size_t offset, size_t size, const char* what) {
    if (offset > t.n_bytes() || size > t.n_bytes() - offset)
        throw Error(ErrorCode::InvalidArgument, std::string(what) + ": bytes [" + std::to_string(offset) + ", " +
                                                    std::to_string(offset + size) + ") outside " + describe(t) + " (" +
                                                    std::to_string(t.n_bytes()) + " bytes)");
}

void NpuBackend::set_tensor_async(Tensor& t, const void* src, size_t offset, size_t size) {
    // A tiled weight is repacked / unpacked on the host by its buffer, after the queued work.
    if (!npu_buffer_of(t) || tiled_of(t)) return Backend::set_tensor_async(t, src, offset, size);
    check_span(t, offset, size, "set_tensor_async");
    if (size == 0) return;
    session_.check();
    const uint64_t staged = stage(size);
    std::memcpy(staging_->data() + staged, src, size);
    queue_memcpy(t, offset, size, staged, true);
}

void NpuBackend::get_tensor_async(const Tensor& t, void* dst, size_t offset, size_t size) {
    // A tiled weight is repacked / unpacked on the host by its buffer, after the queued work.
    if (!npu_buffer_of(t) || tiled_of(t)) return Backend::get_tensor_async(t, dst, offset, size);
    check_span(t, offset, size, "get_tensor_async");
    if (size == 0) return;
    session_.check();
    const uint64_t staged = stage(size);
    queue_memcpy(t, offset, size, staged, false);
    reads_.push_back({staged, dst, size});
}

void NpuBackend::event_record(Event& e) {
    auto* ev = dynamic_cast<NpuEvent*>(&e);
    if (!ev) {
        // Another device's event: make it complete once this stream's work is done.
        synchronize();
        return;
    }
    // A FENCE op storing the next value in a slot, behind everything queued on this stream.
    const auto [slot, value] = session_.next_fence();
    int32_t params[TSL_NPU_OP_PARAMS];
    fence_params(params, slot, value);
    enqueue(TSL_NPU_OP_FENCE, "FENCE", {}, {session_.fence_operand()}, params);
    flush();
    ev->session_ = &session_;
    ev->seq_ = session_.last_seq();
    ev->slot_ = slot;
    ev->value_ = value;
}

uint32_t NpuBackend::enqueue(uint32_t opcode, const std::string& name, const std::vector<Operand>& srcs, const std::vector<Operand>& dsts,
                             const int32_t* params, const uint8_t* kparams) {
    session_.check();
    std::vector<Operand> all = srcs;
    all.insert(all.end(), dsts.begin(), dsts.end());
    if (!batch_.fit(all)) flush();
    const uint32_t idx = batch_.add(opcode, name, srcs, dsts, params);
    if (kparams) std::memcpy(batch_.last_op().kparams, kparams, TSL_NPU_KPARAMS_BYTES);
    return idx;
}

bool NpuBackend::cpy_tensor_async(Backend& src_stream, const Tensor& src, Tensor& dst) {
    auto* from = dynamic_cast<NpuBackend*>(&src_stream);
    const NpuBuffer* src_buf = npu_buffer_of(src);
    const NpuBuffer* dst_buf = npu_buffer_of(dst);
    if (!from || !src_buf || !dst_buf || tiled_of(src) || tiled_of(dst) || !src.is_contiguous() || !dst.is_contiguous() ||
        src.n_bytes() != dst.n_bytes())
        return false;
    src_buf->map_on(from->session_);
    dst_buf->map_on(from->session_);
    from->enqueue(TSL_NPU_OP_MEMCPY, "CPY_TENSOR", {operand(src)}, {operand(dst)}, nullptr);
    if (from->session_.shares_device_with(session_)) {
        from->flush();  // one device runtime runs its batches in submission order
        return true;
    }
    NpuEvent copied;
    from->event_record(copied);
    event_wait(copied);
    return true;
}

void NpuBackend::event_wait(Event& e) {
    auto* ev = dynamic_cast<NpuEvent*>(&e);
    if (!ev) return e.synchronize();
    // Recorded on this device runtime: its FENCE was submitted already, so the runtime runs it first.
    if (!ev->session_ || ev->session_->shares_device_with(session_) || ev->query()) return;
    session_.map_peer_fences(*ev->session_);
    int32_t params[TSL_NPU_OP_PARAMS];
    fence_params(params, ev->slot_, ev->value_);
    enqueue(TSL_NPU_OP_FENCE_WAIT, "FENCE_WAIT", {ev->session_->fence_operand()}, {}, params);
}

}  // namespace tessel::npu
