#include "npu/link/cpu_set.hpp"

#include <cstring>

#include "tessel/errors.hpp"

namespace tessel::npu {

std::string CpuSet::text() const {
    std::string out;
    for (uint32_t c = 0; c < kMaxCpus; ++c) {
        if (!has(c)) continue;
        uint32_t last = c;
        while (has(last + 1)) ++last;
        if (!out.empty()) out += ',';
        out += std::to_string(c);
        if (last > c) out += '-' + std::to_string(last);
        c = last;
    }
    return out;
}

CpuSet CpuSet::from_words(const std::array<uint64_t, 4>& words) {
    CpuSet s;
    s.words_ = words;
    return s;
}

CpuSet CpuSet::allowed() {
    cpu_set_t set;
    CPU_ZERO(&set);
    CpuSet out;
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return out;
    for (uint32_t c = 0; c < kMaxCpus; ++c)
        if (CPU_ISSET(c, &set)) out.add(c);
    return out;
}

ScopedAffinity::ScopedAffinity(const CpuSet& cpus, const std::string& who) {
    if (cpus.empty()) return;
    CPU_ZERO(&saved_);
    if (pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) != 0)
        throw Error(ErrorCode::Io, who + ": cannot read this thread's CPUs");
    cpu_set_t set;
    CPU_ZERO(&set);
    for (uint32_t c = 0; c < CpuSet::kMaxCpus; ++c)
        if (cpus.has(c)) CPU_SET(c, &set);
    if (const int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set); err != 0)
        throw Error(ErrorCode::Io, who + ": cannot run on CPUs " + cpus.text() + ": " + std::strerror(err));
    pinned_ = true;
}

ScopedAffinity::~ScopedAffinity() {
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
}

}  // namespace tessel::npu
