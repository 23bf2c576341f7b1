#include "npu/host/session.hpp"

#include <algorithm>
#include <cstring>

#include "core/log.hpp"
#include "npu/device/device.h"
#include "npu/device/faults.h"
#include "npu/host/trace.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

Session::Session(const std::string& name, const Config& cfg, SharedDevice* shared) : name_(name), cfg_(cfg), shared_(shared) {
    link_ = shared ? shared->attach(link_options(cfg_, name_)) : open_link(link_options(cfg_, name_));
    hwinfo_ = link_->hwinfo();
    if (hwinfo_.proto_version != TSL_NPU_PROTO_VERSION)
        throw Error(ErrorCode::Device, name_ + ": the device speaks protocol version " + std::to_string(hwinfo_.proto_version) +
                                           ", this host " + std::to_string(TSL_NPU_PROTO_VERSION));
    const uint64_t queue_bytes = OpBatch::max_block_size(limits()) * cfg_.opqueue;
    if (queue_bytes > cfg_.max_mapped / 2)
        throw Error(ErrorCode::InvalidArgument, name_ + ": the op queue would take " + std::to_string(queue_bytes) +
                                                    " bytes of device address space (TESSEL_NPU_OPQUEUE=" + std::to_string(cfg_.opqueue) +
                                                    " x TESSEL_NPU_OPBATCH=" + std::to_string(cfg_.opbatch) +
                                                    "), more than half of TESSEL_NPU_VMEM=" + std::to_string(cfg_.max_mapped));
    const uint64_t trace_bytes = cfg_.trace.empty() ? 0 : tsl_npu_trace_bytes(cfg_.opbatch, hwinfo_.n_threads);
    queue_ = std::make_unique<OpQueue>(*link_, name_, cfg_.opqueue, OpBatch::max_block_size(limits()) + trace_bytes, cfg_.verbose,
                                       cfg_.profile > 0);
    if (!cfg_.trace.empty()) trace_ = &Trace::open(cfg_.trace);
    queue_->set_batch_flags((cfg_.profile >= 2 ? TSL_NPU_BATCH_COUNTERS : 0u) | (trace_ ? TSL_NPU_BATCH_TRACE : 0u), hwinfo_.n_threads,
                            trace_);
    fences_ = std::make_unique<ShmBuffer>(name_ + "-fences", n_fence_slots_ * TSL_NPU_FENCE_SLOT_BYTES);
    fence_view_.set_shape(DType::I32, {static_cast<int64_t>(fences_->size() / sizeof(int32_t))});
    if (const int32_t st = link_->map(*fences_, TSL_NPU_BUF_FENCE); st != TSL_NPU_OK)
        throw Error(ErrorCode::Device, name_ + ": the device did not map the fence buffer (" + tsl_npu_status_name(st) + ")");
    if (cfg_.verbose)
        tessel::logf(LogLevel::Debug, "npu: %s session open: %s, %s link, protocol %u, %u threads, vtcm %llu bytes%s%s", name_.c_str(),
                     hwinfo_.name, link_kind_name(link_->kind()), hwinfo_.proto_version,
                     hwinfo_.n_threads, static_cast<unsigned long long>(hwinfo_.vtcm_bytes), shared ? ", device runtime shared with " : "",
                     shared ? shared->name().c_str() : "");
}

namespace {

// Guards every session's fence_peers_ / fence_readers_ (the pairs are updated together).
std::mutex g_fence_peers_mu;

}  // namespace

Session::~Session() {
    {
        // The devices that read this session's fences forget them (a later buffer with the same fd
        // must not meet a stale mapping there); the peers whose fences this one read forget it.
        std::lock_guard peers(g_fence_peers_mu);
        for (Session* reader : fence_readers_) {
            if (fences_) reader->unmap(*fences_);
            std::erase(reader->fence_peers_, this);
        }
        for (Session* peer : fence_peers_) std::erase(peer->fence_readers_, this);
    }
    // Reverse order of construction; a failed device is not waited for again.
    std::lock_guard lock(mu_);
    if (status_ == TSL_NPU_OK && queue_) {
        while (queue_->in_flight() > 0)
            if (queue_->pop() != TSL_NPU_OK) break;
    }
    if (fences_ && status_ == TSL_NPU_OK) link_->unmap(*fences_);
    fences_.reset();
    if (queue_ && status_ == TSL_NPU_OK) link_->unmap(queue_->memory());
    queue_.reset();
    link_.reset();
    if (trace_) trace_->write();
}

BatchLimits Session::limits() const {
    BatchLimits l;
    l.max_ops = cfg_.opbatch;
    l.max_mapped = cfg_.max_mapped;
    return l;
}

void Session::fail(int32_t status, const std::string& detail) {
    if (status_ != TSL_NPU_OK) return;
    status_ = status;
    error_ = name_ + ": " + detail + ": " + tsl_npu_status_name(static_cast<uint32_t>(status));
    if (status == TSL_NPU_ERR_TIMEOUT) error_ += " (no progress within TESSEL_NPU_TIMEOUT_MS=" + std::to_string(cfg_.timeout_ms) + ")";
    if (cfg_.verbose) tessel::logf(LogLevel::Debug, "npu: %s failed: %s", name_.c_str(), error_.c_str());
}

void Session::throw_error() const { throw Error(ErrorCode::Device, error_); }

void Session::check() const {
    std::lock_guard lock(mu_);
    if (status_ != TSL_NPU_OK) throw_error();
}

void Session::map(const ShmBuffer& buf, uint32_t flags) {
    std::lock_guard lock(mu_);
    if (status_ != TSL_NPU_OK) throw_error();
    if (const int32_t st = link_->map(buf, flags); st != TSL_NPU_OK) {
        throw Error(ErrorCode::Device, name_ + ": the device did not map a buffer of " + std::to_string(buf.size()) +
                                           " bytes: " + tsl_npu_status_name(static_cast<uint32_t>(st)));
    }
}

void Session::unmap(const ShmBuffer& buf) {
    std::lock_guard lock(mu_);
    if (status_ != TSL_NPU_OK) return;
    while (queue_->in_flight() > 0) {
        if (const int32_t st = queue_->pop(); st != TSL_NPU_OK) {
            fail(st, queue_->detail());
            return;
        }
    }
    link_->unmap(buf);
}

uint64_t Session::submit(const OpBatch& batch) {
    std::lock_guard lock(mu_);
    if (status_ != TSL_NPU_OK) throw_error();
    const OpBatch* to_send = &batch;
    OpBatch corrupted(limits());
    if (cfg_.fault == TSL_NPU_FAULT_BAD_DESC) {
        // Test hook: the first tensor points one byte past its buffer's end.
        corrupted = batch;
        corrupted.corrupt_first_tensor_for_test();
        to_send = &corrupted;
    }
    if (const int32_t st = queue_->push(*to_send); st != TSL_NPU_OK) {
        fail(st, queue_->detail());
        throw_error();
    }
    return queue_->last_seq();
}

void Session::drain_to(uint64_t seq) {
    while (queue_->done_seq() < seq && queue_->in_flight() > 0) {
        if (const int32_t st = queue_->pop(); st != TSL_NPU_OK) {
            fail(st, queue_->detail());
            throw_error();
        }
    }
}

void Session::wait(uint64_t seq) {
    std::lock_guard lock(mu_);
    if (status_ != TSL_NPU_OK) throw_error();
    drain_to(seq);
}

void Session::synchronize() {
    std::lock_guard lock(mu_);
    if (status_ != TSL_NPU_OK) throw_error();
    drain_to(queue_->last_seq());
}

uint64_t Session::last_seq() const {
    std::lock_guard lock(mu_);
    return queue_->last_seq();
}

uint64_t Session::done_seq() const {
    std::lock_guard lock(mu_);
    return queue_->done_seq();
}

void Session::collect_profile(bool on) {
    std::lock_guard lock(mu_);
    queue_->collect_profile(on);
}

std::vector<OpProfile> Session::take_profile() {
    std::lock_guard lock(mu_);
    return queue_->take_profile();
}

std::vector<OpProfile> Session::last_profile() const {
    std::lock_guard lock(mu_);
    return queue_->last_profile();
}

std::pair<uint32_t, uint64_t> Session::next_fence() {
    std::lock_guard lock(mu_);
    const uint32_t s = next_fence_;
    next_fence_ = (next_fence_ + 1) % n_fence_slots_;
    return {s, ++fence_value_};
}

Operand Session::fence_operand() const {
    Operand o;
    o.tensor = &fence_view_;
    o.buffer = fences_.get();
    o.buffer_flags = TSL_NPU_BUF_FENCE;
    o.offset = 0;
    o.size = fences_->size();
    return o;
}

void Session::map_peer_fences(Session& peer) {
    {
        std::lock_guard lock(g_fence_peers_mu);
        if (std::find(fence_peers_.begin(), fence_peers_.end(), &peer) != fence_peers_.end()) return;
    }
    map(peer.fences(), TSL_NPU_BUF_FENCE);
    std::lock_guard lock(g_fence_peers_mu);
    if (std::find(fence_peers_.begin(), fence_peers_.end(), &peer) != fence_peers_.end()) return;
    fence_peers_.push_back(&peer);
    peer.fence_readers_.push_back(this);
}

uint64_t Session::fence_value(uint32_t slot) const {
    const auto* p = reinterpret_cast<const volatile uint64_t*>(fences_->data() + static_cast<size_t>(slot) * TSL_NPU_FENCE_SLOT_BYTES);
    return __atomic_load_n(const_cast<const uint64_t*>(p), __ATOMIC_ACQUIRE);
}

}  // namespace tessel::npu
