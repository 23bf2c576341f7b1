#include "npu/host/opqueue.hpp"

#include <cstdio>
#include <cstring>
#include <utility>

#include "core/log.hpp"
#include "npu/host/opbatch.hpp"
#include "npu/host/trace.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

OpQueue::OpQueue(Link& link, const std::string& name, uint32_t depth, uint64_t slot_bytes, int verbose, bool profile)
    : link_(link), name_(name), depth_(depth), slot_bytes_((slot_bytes + 63) / 64 * 64), verbose_(verbose), print_profile_(profile), slots_(depth) {
    mem_ = std::make_unique<ShmBuffer>(name + "-opqueue", static_cast<size_t>(slot_bytes_ * depth));
    if (const int32_t st = link_.map(*mem_, 0); st != TSL_NPU_OK)
        throw Error(ErrorCode::Io, name_ + ": the device did not map the op queue (" + tsl_npu_status_name(st) + ")");
    if (verbose_)
        tessel::logf(LogLevel::Debug, "npu: %s opqueue depth %u slot %llu bytes shm %zu bytes", name_.c_str(), depth_,
                     static_cast<unsigned long long>(slot_bytes_), mem_->size());
}

void OpQueue::set_batch_flags(uint32_t batch_flags, uint32_t n_threads, Trace* trace) {
    batch_flags_ = batch_flags;
    device_threads_ = n_threads ? n_threads : 1;
    trace_ = trace;
}

void OpQueue::collect_profile(bool on) {
    collect_ = on;
    if (!on) collected_.clear();
}

std::vector<OpProfile> OpQueue::take_profile() { return std::exchange(collected_, {}); }

int32_t OpQueue::fail(int32_t status, const std::string& why) {
    detail_ = why;
    return status;
}

int32_t OpQueue::push(const OpBatch& batch) {
    if (batch.empty()) return TSL_NPU_OK;
    const uint64_t trace_bytes = (batch_flags_ & TSL_NPU_BATCH_TRACE) ? tsl_npu_trace_bytes(static_cast<uint32_t>(batch.n_ops()), device_threads_) : 0;
    if (batch.block_size() + trace_bytes > slot_bytes_)
        return fail(TSL_NPU_ERR_BAD_BATCH, "batch of " + std::to_string(batch.block_size() + trace_bytes) + " bytes exceeds the queue slot");
    if (in_flight() >= depth_)
        if (const int32_t st = pop(); st != TSL_NPU_OK) return st;
    const uint64_t seq = sent_ + 1;
    Slot& slot = slots_[(seq - 1) % depth_];
    slot.req = tsl_npu_batch_req{};
    slot.req.seq = seq;
    slot.req.block_offset = ((seq - 1) % depth_) * slot_bytes_;
    TraceSpan span(trace_, "push");
    batch.write(mem_->data() + slot.req.block_offset, slot.req);
    slot.req.flags = batch_flags_;
    slot.req.block_size += trace_bytes;
    slot.ops = batch.op_names();
    if (print_profile_) slot.details = batch.op_details();
    slot.pushed = std::chrono::steady_clock::now();
    if (verbose_)
        tessel::logf(LogLevel::Debug, "npu: %s batch #%llu push: bufs %u tensors %u ops %u bytes %llu mapped %llu", name_.c_str(),
                     static_cast<unsigned long long>(seq), slot.req.n_bufs, slot.req.n_tensors, slot.req.n_ops,
                     static_cast<unsigned long long>(slot.req.block_size), static_cast<unsigned long long>(batch.mapped_bytes()));
    if (verbose_ > 1) {
        const auto* b = reinterpret_cast<const tsl_npu_buf_desc*>(mem_->data() + slot.req.block_offset);
        for (uint32_t i = 0; i < slot.req.n_bufs; ++i)
            tessel::logf(LogLevel::Debug, "npu: %s batch #%llu buf %u: fd %d size %llu flags %u", name_.c_str(),
                         static_cast<unsigned long long>(seq), i, b[i].fd, static_cast<unsigned long long>(b[i].size), b[i].flags);
        const auto* t = reinterpret_cast<const tsl_npu_tensor_desc*>(mem_->data() + slot.req.block_offset +
                                                                     tsl_npu_block_tensors_offset(slot.req.n_bufs));
        for (uint32_t i = 0; i < slot.req.n_tensors; ++i)
            tessel::logf(LogLevel::Debug, "npu: %s batch #%llu tensor %u: buf %u offset %llu size %llu type %u ne [%lld, %lld, %lld, %lld]",
                         name_.c_str(), static_cast<unsigned long long>(seq), i, t[i].buf,
                         static_cast<unsigned long long>(t[i].offset), static_cast<unsigned long long>(t[i].size), t[i].type,
                         static_cast<long long>(t[i].ne[0]), static_cast<long long>(t[i].ne[1]), static_cast<long long>(t[i].ne[2]),
                         static_cast<long long>(t[i].ne[3]));
    }
    const int32_t st = link_.submit(*mem_, slot.req);
    if (st != TSL_NPU_OK) return fail(st, std::string("submitting batch #") + std::to_string(seq) + " failed");
    sent_ = seq;
    return TSL_NPU_OK;
}

namespace {

/// "  task-clock 12.3 us  page-faults 0  context-switches 0  pmu 1 2 3": counters 2..7 (proto.h).
std::string counter_text(const tsl_npu_profile& r) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  task-clock %.1f us  page-faults %llu  context-switches %llu",
                  static_cast<double>(r.counters[TSL_NPU_COUNTER_TASK_CLOCK]) / 1e3,
                  static_cast<unsigned long long>(r.counters[TSL_NPU_COUNTER_PAGE_FAULTS]),
                  static_cast<unsigned long long>(r.counters[TSL_NPU_COUNTER_CONTEXT_SWITCHES]));
    std::string s = buf;
    if (r.counters[5] || r.counters[6] || r.counters[7])
        s += "  pmu " + std::to_string(r.counters[5]) + " " + std::to_string(r.counters[6]) + " " + std::to_string(r.counters[7]);
    return s;
}

}  // namespace

void OpQueue::print_profile(uint64_t seq, const Slot& slot, const tsl_npu_batch_rsp& rsp) const {
    const double host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - slot.pushed).count();
    for (size_t i = 0; i < profile_.size(); ++i) {
        const tsl_npu_profile& r = profile_[i].record;
        const double us = r.stop_ns >= r.start_ns ? static_cast<double>(r.stop_ns - r.start_ns) / 1e3 : 0.0;
        const std::string& detail = i < slot.details.size() ? slot.details[i] : std::string();
        // counter 1: ns the workers spent reshaping weights for a unit (summed over workers)
        std::string extra = r.counters[1] ? "  reshape " + std::to_string(r.counters[1] / 1000) + " us (all workers)" : "";
        if (batch_flags_ & TSL_NPU_BATCH_COUNTERS) extra += counter_text(r);
        tessel::logf(LogLevel::Info, "npu-profile: %s #%llu op %zu %-10s %10.1f us %12llu cycles  %s%s", name_.c_str(),
                     static_cast<unsigned long long>(seq), i, profile_[i].op.c_str(), us, static_cast<unsigned long long>(r.cycles),
                     detail.c_str(), extra.c_str());
    }
    tessel::logf(LogLevel::Info, "npu-profile: %s #%llu batch: %u/%u ops, %.1f us on the device, %.1f us from push to answer, %s",
                 name_.c_str(), static_cast<unsigned long long>(seq), rsp.n_done, rsp.n_ops,
                 static_cast<double>(last_batch_ns_) / 1e3, host_us, tsl_npu_status_name(rsp.status));
}

int32_t OpQueue::pop() {
    if (in_flight() == 0) return TSL_NPU_OK;
    tsl_npu_batch_rsp rsp{};
    const uint64_t want = done_ + 1;
    int32_t received;
    {
        TraceSpan span(trace_, "wait");
        received = link_.receive(&rsp);
    }
    if (received != TSL_NPU_OK) return fail(received, std::string("waiting for batch #") + std::to_string(want));
    const Slot& slot = slots_[(want - 1) % depth_];
    if (rsp.seq != want)
        return fail(TSL_NPU_ERR_PROTOCOL, "response carries sequence " + std::to_string(rsp.seq) + ", expected " + std::to_string(want));
    if (rsp.n_bufs != slot.req.n_bufs || rsp.n_tensors != slot.req.n_tensors || rsp.n_ops != slot.req.n_ops || rsp.n_done > rsp.n_ops)
        return fail(TSL_NPU_ERR_PROTOCOL, "response to batch #" + std::to_string(want) + " has counts other than the request's");
    done_ = want;
    last_batch_ns_ = rsp.stop_ns >= rsp.start_ns ? rsp.stop_ns - rsp.start_ns : 0;
    profile_.clear();
    const auto* rec = reinterpret_cast<const tsl_npu_profile*>(
        mem_->data() + slot.req.block_offset + tsl_npu_block_profile_offset(slot.req.n_bufs, slot.req.n_tensors, slot.req.n_ops));
    for (uint32_t i = 0; i < rsp.n_done; ++i) profile_.push_back({slot.ops[i], rec[i]});
    if (collect_) collected_.insert(collected_.end(), profile_.begin(), profile_.end());
    if (trace_) {
        const auto* spans = (slot.req.flags & TSL_NPU_BATCH_TRACE)
                                ? reinterpret_cast<const tsl_npu_span*>(mem_->data() + slot.req.block_offset +
                                                                         tsl_npu_block_size(slot.req.n_bufs, slot.req.n_tensors, slot.req.n_ops))
                                : nullptr;
        trace_->device_batch(name_, want, slot.ops, rec, rsp.n_done, spans, device_threads_);
    }
    if (print_profile_) print_profile(want, slot, rsp);
    if (verbose_)
        tessel::logf(LogLevel::Debug, "npu: %s batch #%llu done: status %s ops %u/%u %.1f us", name_.c_str(),
                     static_cast<unsigned long long>(want), tsl_npu_status_name(rsp.status), rsp.n_done, rsp.n_ops,
                     static_cast<double>(last_batch_ns_) / 1e3);
    if (rsp.status != TSL_NPU_OK) {
        std::string why = "batch #" + std::to_string(want);
        if (rsp.err_op < slot.ops.size()) why += ", op " + std::to_string(rsp.err_op) + " (" + slot.ops[rsp.err_op] + ")";
        return fail(static_cast<int32_t>(rsp.status), why);
    }
    return TSL_NPU_OK;
}

}  // namespace tessel::npu
