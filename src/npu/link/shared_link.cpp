#include "npu/link/shared_link.hpp"

#include <deque>
#include <map>
#include <vector>

#include "npu/link/shm.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

// The device's one link, which session sent each outstanding batch (oldest first: the device
// answers in that order), the answers taken for sessions that have not asked yet, and how many
// sessions mapped each buffer fd.
struct SharedDevice::Hub {
    std::unique_ptr<Link> link;
    std::mutex mu;
    std::deque<uint32_t> senders;
    std::vector<std::deque<tsl_npu_batch_rsp>> answers;  // per session slot
    std::vector<bool> slot_used;
    std::map<int, uint32_t> mapped;  // fd -> sessions that mapped it
};

namespace {

constexpr uint32_t kNobody = ~0u;  // the sender of a batch whose session has closed

class SessionLink final : public Link {
public:
    SessionLink(std::shared_ptr<SharedDevice::Hub> hub, uint32_t slot) : hub_(std::move(hub)), slot_(slot) {}

    ~SessionLink() override {
        // Batches still outstanding (a failed session does not wait for them) are answered to nobody,
        // not to the next session that takes this slot.
        std::lock_guard lock(hub_->mu);
        for (uint32_t& s : hub_->senders)
            if (s == slot_) s = kNobody;
        hub_->answers[slot_].clear();
        hub_->slot_used[slot_] = false;
    }

    LinkKind kind() const override { return hub_->link->kind(); }

    tsl_npu_hwinfo hwinfo() override {
        std::lock_guard lock(hub_->mu);
        return hub_->link->hwinfo();
    }

    int32_t map(const ShmBuffer& buf, uint32_t flags) override {
        std::lock_guard lock(hub_->mu);
        uint32_t& count = hub_->mapped[buf.fd()];
        if (count == 0)
            if (const int32_t st = hub_->link->map(buf, flags); st != TSL_NPU_OK) {
                hub_->mapped.erase(buf.fd());
                return st;
            }
        ++count;
        return TSL_NPU_OK;
    }

    int32_t unmap(const ShmBuffer& buf) override {
        std::lock_guard lock(hub_->mu);
        const auto it = hub_->mapped.find(buf.fd());
        if (it == hub_->mapped.end()) return hub_->link->unmap(buf);  // the device answers what it knows
        if (--it->second > 0) return TSL_NPU_OK;
        hub_->mapped.erase(it);
        return hub_->link->unmap(buf);
    }

    int32_t submit(const ShmBuffer& queue, const tsl_npu_batch_req& req) override {
        std::lock_guard lock(hub_->mu);
        const int32_t st = hub_->link->submit(queue, req);
        if (st == TSL_NPU_OK) {
            hub_->senders.push_back(slot_);
            ++outstanding_;
        }
        return st;
    }

    int32_t receive(tsl_npu_batch_rsp* rsp) override {
        if (outstanding_ == 0) return TSL_NPU_ERR_PROTOCOL;  // no answer could come
        std::lock_guard lock(hub_->mu);
        std::deque<tsl_npu_batch_rsp>& mine = hub_->answers[slot_];
        while (mine.empty()) {
            tsl_npu_batch_rsp r{};
            if (const int32_t st = hub_->link->receive(&r); st != TSL_NPU_OK) return st;
            if (hub_->senders.empty()) return TSL_NPU_ERR_PROTOCOL;  // an answer nobody asked for
            const uint32_t sender = hub_->senders.front();
            hub_->senders.pop_front();
            if (sender != kNobody) hub_->answers[sender].push_back(r);
        }
        *rsp = mine.front();
        mine.pop_front();
        --outstanding_;
        return TSL_NPU_OK;
    }

    uint32_t outstanding() const override { return outstanding_; }

private:
    std::shared_ptr<SharedDevice::Hub> hub_;
    uint32_t slot_;
    uint32_t outstanding_ = 0;
};

}  // namespace

SharedDevice::SharedDevice(std::string name, uint32_t n_sessions) : name_(std::move(name)), n_sessions_(n_sessions) {
    if (n_sessions_ == 0 || n_sessions_ > 16)
        throw Error(ErrorCode::InvalidArgument, name_ + ": " + std::to_string(n_sessions_) + " sessions, expected 1..16");
}

SharedDevice::~SharedDevice() = default;

std::unique_ptr<Link> SharedDevice::attach(const LinkOptions& options) {
    std::lock_guard lock(mu_);
    std::shared_ptr<Hub> hub = hub_.lock();
    if (!hub) {
        LinkOptions o = options;
        o.name = name_;
        o.ring_depth = options.ring_depth * n_sessions_;
        hub = std::make_shared<Hub>();
        hub->link = open_link(o);
        hub->answers.resize(n_sessions_);
        hub->slot_used.assign(n_sessions_, false);
        hub_ = hub;
    }
    std::lock_guard hub_lock(hub->mu);
    for (uint32_t slot = 0; slot < n_sessions_; ++slot) {
        if (hub->slot_used[slot]) continue;
        hub->slot_used[slot] = true;
        return std::make_unique<SessionLink>(hub, slot);
    }
    throw Error(ErrorCode::InvalidArgument, name_ + ": all " + std::to_string(n_sessions_) + " sessions of the device are open");
}

uint32_t SharedDevice::attached() const {
    std::lock_guard lock(mu_);
    const std::shared_ptr<Hub> hub = hub_.lock();
    if (!hub) return 0;
    std::lock_guard hub_lock(hub->mu);
    uint32_t n = 0;
    for (bool used : hub->slot_used) n += used;
    return n;
}

}  // namespace tessel::npu
