#include "npu/link/ring.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <new>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tessel::npu {

namespace {

uint32_t* futex_word(std::atomic<uint32_t>& word) {
    // std::atomic<uint32_t> is lock-free and has the layout of a u32 (static_assert in ring.hpp).
    return reinterpret_cast<uint32_t*>(&word);
}

constexpr size_t kControlBytes = TSL_NPU_REGION_RINGS;

}  // namespace

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint32_t timeout_us) {
    timespec ts{static_cast<time_t>(timeout_us / 1000000u), static_cast<long>(timeout_us % 1000000u) * 1000};
    // EAGAIN (value changed), EINTR and ETIMEDOUT all mean "look again": the caller loops.
    syscall(SYS_futex, futex_word(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>& word) {
    syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

bool Ring::push(const void* entry) {
    const uint32_t head = header_->head.load(std::memory_order_relaxed);
    const uint32_t tail = header_->tail.load(std::memory_order_acquire);
    if (head - tail >= capacity_) return false;
    std::memcpy(entries_ + static_cast<size_t>(head & (capacity_ - 1)) * entry_bytes_, entry, entry_bytes_);
    // seq_cst store then seq_cst load of sleepers pairs with the consumer's increment-then-check in
    // wait(): either it sees the new head or we see it asleep and wake it.
    header_->head.store(head + 1, std::memory_order_seq_cst);
    if (header_->sleepers.load(std::memory_order_seq_cst) != 0) futex_wake(header_->head);
    return true;
}

bool Ring::pop(void* entry) {
    const uint32_t tail = header_->tail.load(std::memory_order_relaxed);
    const uint32_t head = header_->head.load(std::memory_order_acquire);
    if (head == tail) return false;
    std::memcpy(entry, entries_ + static_cast<size_t>(tail & (capacity_ - 1)) * entry_bytes_, entry_bytes_);
    header_->tail.store(tail + 1, std::memory_order_release);
    return true;
}

bool Ring::empty() const {
    return header_->head.load(std::memory_order_acquire) == header_->tail.load(std::memory_order_relaxed);
}

void Ring::wait(uint32_t slice_us, bool poll) const {
    if (poll) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(slice_us);
        for (uint32_t spins = 0; empty(); ++spins) {
            if (spins < 1024) {
                cpu_relax();
            } else {
                sched_yield();  // stay polite on a shared machine after the first microseconds
                if (std::chrono::steady_clock::now() >= end) return;
            }
        }
        return;
    }
    const uint32_t seen = header_->head.load(std::memory_order_seq_cst);
    header_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (seen == header_->tail.load(std::memory_order_relaxed) && header_->head.load(std::memory_order_seq_cst) == seen)
        futex_wait(header_->head, seen, slice_us);
    header_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void Ring::wake() const {
    futex_wake(header_->head);
}

size_t Region::bytes(uint32_t capacity) { return static_cast<size_t>(tsl_npu_region_bytes(capacity)); }

namespace {

Region view(uint8_t* base, uint32_t capacity) {
    Region r;
    r.control = reinterpret_cast<ControlPage*>(base);
    auto* headers = reinterpret_cast<RingHeader*>(base + kControlBytes);
    uint8_t* req_entries = base + kControlBytes + 2 * sizeof(RingHeader);
    uint8_t* rsp_entries = req_entries + static_cast<size_t>(capacity) * sizeof(RequestEntry);
    r.requests = Ring(&headers[0], req_entries, capacity, sizeof(RequestEntry));
    r.responses = Ring(&headers[1], rsp_entries, capacity, sizeof(tsl_npu_batch_rsp));
    return r;
}

}  // namespace

Region Region::create(uint8_t* base, uint32_t capacity) {
    auto* control = new (base) ControlPage{};
    control->magic = kRegionMagic;
    control->capacity = capacity;
    new (base + kControlBytes) RingHeader[2]{};
    return view(base, capacity);
}

bool Region::attach(uint8_t* base, size_t size, Region* out) {
    if (size < kControlBytes) return false;
    const auto* control = reinterpret_cast<const ControlPage*>(base);
    const uint32_t capacity = control->capacity;
    if (control->magic != kRegionMagic || capacity == 0 || (capacity & (capacity - 1)) != 0 || capacity > TSL_NPU_REGION_MAX_CAPACITY ||
        bytes(capacity) > size)
        return false;
    *out = view(base, capacity);
    return true;
}

}  // namespace tessel::npu
