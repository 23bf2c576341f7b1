#include "npu/host/trace.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

namespace tessel::npu {
namespace {

constexpr uint32_t kHostPid = 1;
constexpr uint32_t kOpsTid = 1;
constexpr uint32_t kWorkerTid0 = 10;

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char ch : s) {
        if (ch == '"' || ch == '\\') out += '\\', out += ch;
        else if (static_cast<unsigned char>(ch) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", ch);
            out += buf;
        } else out += ch;
    }
    return out + "\"";
}

/// ns as µs with three decimals (the trace format's unit, ns precision).
std::string micros(uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000), static_cast<unsigned long long>(ns % 1000));
    return buf;
}

std::string metadata(const char* kind, uint32_t pid, uint32_t tid, const std::string& name) {
    return std::string("{\"name\":\"") + kind + "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
           ",\"args\":{\"name\":" + json_string(name) + "}}";
}

Trace* g_trace = nullptr;

}  // namespace

Trace& Trace::open(const std::string& path) {
    static std::once_flag once;
    std::call_once(once, [&] {
        g_trace = new Trace(path);  // never freed: sessions may close during static destruction
        std::atexit([] { g_trace->write(); });
    });
    return *g_trace;
}

uint64_t Trace::now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint32_t Trace::host_tid() {
    const uint64_t id = std::hash<std::thread::id>{}(std::this_thread::get_id());
    auto it = std::find(host_threads_.begin(), host_threads_.end(), id);
    if (it == host_threads_.end()) it = host_threads_.insert(host_threads_.end(), id);
    return 1 + static_cast<uint32_t>(it - host_threads_.begin());
}

uint32_t Trace::device_pid(const std::string& device) {
    auto it = std::find(devices_.begin(), devices_.end(), device);
    if (it == devices_.end()) it = devices_.insert(devices_.end(), device);
    return 2 + static_cast<uint32_t>(it - devices_.begin());
}

void Trace::host_span(const char* name, uint64_t start_ns, uint64_t stop_ns) {
    std::lock_guard lock(mu_);
    events_.push_back({name, "host", kHostPid, host_tid(), start_ns, stop_ns > start_ns ? stop_ns - start_ns : 0, ""});
}

void Trace::device_batch(const std::string& device, uint64_t seq, const std::vector<std::string>& names,
                         const tsl_npu_profile* records, uint32_t n_done, const tsl_npu_span* spans, uint32_t n_threads) {
    std::lock_guard lock(mu_);
    const uint32_t pid = device_pid(device);
    auto name_thread = [&](uint32_t tid) {
        if (std::find(device_threads_.begin(), device_threads_.end(), std::pair{pid, tid}) == device_threads_.end())
            device_threads_.push_back({pid, tid});
    };
    name_thread(kOpsTid);
    for (uint32_t i = 0; i < n_done && i < names.size(); ++i) {
        const tsl_npu_profile& r = records[i];
        const uint64_t stop = std::max(r.stop_ns, r.start_ns);
        const std::string where = "\"batch\":" + std::to_string(seq) + ",\"op\":" + std::to_string(i);
        events_.push_back({names[i], "op", pid, kOpsTid, r.start_ns, stop - r.start_ns, where});
        if (!spans) continue;
        // This op's parts, per thread in time order: the phases, then the waits between and after them.
        const tsl_npu_span* op = spans + static_cast<uint64_t>(i) * TSL_NPU_TRACE_PHASES * n_threads;
        const bool two_phases = std::any_of(op + n_threads, op + 2 * n_threads, [](const tsl_npu_span& s) { return s.stop_ns != 0; });
        std::vector<std::pair<uint32_t, const tsl_npu_span*>> parts;  // (phase, span)
        for (uint32_t ph = 0; ph < TSL_NPU_TRACE_PHASES; ++ph)
            for (uint32_t p = 0; p < n_threads; ++p)
                if (op[ph * n_threads + p].stop_ns != 0) parts.push_back({ph, &op[ph * n_threads + p]});
        std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second->start_ns < b.second->start_ns; });
        std::vector<uint64_t> last_stop(n_threads, 0);
        for (const auto& [ph, s] : parts) {
            const uint32_t tid = kWorkerTid0 + std::min(s->thread, n_threads - 1);
            name_thread(tid);
            uint64_t& prev = last_stop[tid - kWorkerTid0];
            if (prev != 0 && s->start_ns > prev) events_.push_back({"wait", "wait", pid, tid, prev, s->start_ns - prev, ""});
            const char* what = two_phases && ph == 0 ? "quantize activations" : "compute";
            const uint64_t dur = s->stop_ns > s->start_ns ? s->stop_ns - s->start_ns : 0;
            events_.push_back({names[i] + " " + what, "part", pid, tid, s->start_ns, dur, where});
            if (s->dma_ns) events_.push_back({"weight DMA", "dma", pid, tid, s->start_ns, std::min(s->dma_ns, dur), ""});
            prev = s->start_ns + dur;
        }
        for (uint32_t t = 0; t < n_threads; ++t)
            if (last_stop[t] != 0 && stop > last_stop[t])
                events_.push_back({"wait", "wait", pid, kWorkerTid0 + t, last_stop[t], stop - last_stop[t], ""});
    }
}

void Trace::write() {
    std::lock_guard lock(mu_);
    if (written_ == events_.size()) return;  // nothing new since the last write
    std::vector<const Event*> order;
    order.reserve(events_.size());
    for (const Event& e : events_) order.push_back(&e);
    // Per thread by start, an enclosing span before the spans it holds.
    std::stable_sort(order.begin(), order.end(), [](const Event* a, const Event* b) {
        if (a->pid != b->pid) return a->pid < b->pid;
        if (a->tid != b->tid) return a->tid < b->tid;
        if (a->ts_ns != b->ts_ns) return a->ts_ns < b->ts_ns;
        return a->dur_ns > b->dur_ns;
    });
    const std::string tmp = path_ + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    bool ok = f != nullptr;
    if (ok) {
        std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
        out += metadata("process_name", kHostPid, 0, "tessel host");
        for (size_t t = 0; t < host_threads_.size(); ++t)
            out += ",\n" + metadata("thread_name", kHostPid, 1 + static_cast<uint32_t>(t), t == 0 ? "host" : "host thread " + std::to_string(t));
        for (size_t d = 0; d < devices_.size(); ++d)
            out += ",\n" + metadata("process_name", 2 + static_cast<uint32_t>(d), 0, devices_[d] + " device");
        for (const auto& [pid, tid] : device_threads_)
            out += ",\n" + metadata("thread_name", pid, tid, tid == kOpsTid ? std::string("ops") : "worker " + std::to_string(tid - kWorkerTid0));
        ok = std::fputs(out.c_str(), f) >= 0;
        for (const Event* e : order) {
            if (!ok) break;
            std::string line = ",\n{\"name\":" + json_string(e->name) + ",\"cat\":\"" + e->cat + "\",\"ph\":\"X\",\"ts\":" + micros(e->ts_ns) +
                               ",\"dur\":" + micros(e->dur_ns) + ",\"pid\":" + std::to_string(e->pid) + ",\"tid\":" + std::to_string(e->tid) +
                               ",\"args\":{" + e->args + "}}";
            ok = std::fputs(line.c_str(), f) >= 0;
        }
        ok = ok && std::fputs("\n]}\n", f) >= 0;
        ok = std::fclose(f) == 0 && ok;
        ok = ok && std::rename(tmp.c_str(), path_.c_str()) == 0;
    }
    if (ok) written_ = events_.size();
    if (!ok && !warned_) {
        warned_ = true;
        std::fprintf(stderr, "tessel: warning: cannot write the NPU trace to %s (TESSEL_NPU_TRACE)\n", path_.c_str());
    }
}

}  // namespace tessel::npu
