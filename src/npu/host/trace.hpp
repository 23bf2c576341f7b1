// The NPU offload path's Chrome/Perfetto trace (TESSEL_NPU_TRACE=FILE; docs/npu.md, "Profiling
// and diagnostics"): JSON {"traceEvents": [...]} of "X" complete events (ts, dur in µs of
// CLOCK_MONOTONIC, which host and device share) and "M" metadata events naming processes and
// threads. Process 1 is the host: its threads' translate / push / wait spans. Each device is a
// process of its own: thread 1 carries one span per op (args: batch sequence, op index), thread
// 10 + t device worker thread t's parts of each op (activation quantization, compute, with the
// part's weight-DMA time as a nested span) and its waits for the op's other parts.
// Events are kept in memory and the whole file is rewritten by write(): at every session close
// and at process exit.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "npu/proto/proto.h"

namespace tessel::npu {

class Trace {
public:
    /// The process's trace writing to `path` (created on the first call, which also registers
    /// the write at exit; later calls return it whatever their path). Never returns nullptr.
    static Trace& open(const std::string& path);

    /// CLOCK_MONOTONIC, ns: the clock of every event.
    static uint64_t now_ns();

    /// A span [start_ns, stop_ns) of the calling host thread.
    void host_span(const char* name, uint64_t start_ns, uint64_t stop_ns);

    /// The device side of a batch device `device` answered: records[i] and op names[i] for its
    /// first n_done ops; spans (nullptr: none) its tsl_npu_span array for n_threads threads.
    void device_batch(const std::string& device, uint64_t seq, const std::vector<std::string>& names,
                      const tsl_npu_profile* records, uint32_t n_done, const tsl_npu_span* spans, uint32_t n_threads);

    /// Writes every event so far to the file (replacing it). A file that cannot be written is
    /// reported once on stderr (the trace is a diagnostic: never an error of the run).
    void write();

private:
    explicit Trace(std::string path) : path_(std::move(path)) {}
    struct Event {
        std::string name;
        const char* cat;
        uint32_t pid, tid;
        uint64_t ts_ns, dur_ns;
        std::string args;  // a JSON object's members, "" for none
    };
    uint32_t host_tid();  // under mu_
    uint32_t device_pid(const std::string& device);  // under mu_

    std::mutex mu_;
    std::string path_;
    std::vector<Event> events_;
    std::vector<std::string> devices_;    // pid 2 + index
    std::vector<uint64_t> host_threads_;  // tid 1 + index: hashed std::thread::id
    std::vector<std::pair<uint32_t, uint32_t>> device_threads_;  // (pid, tid) named so far
    size_t written_ = static_cast<size_t>(-1);  // events in the file
    bool warned_ = false;
};

/// A host span of the calling thread from construction to destruction (nothing when trace is null).
class TraceSpan {
public:
    TraceSpan(Trace* trace, const char* name) : trace_(trace), name_(name), start_(trace ? Trace::now_ns() : 0) {}
    ~TraceSpan() {
        if (trace_) trace_->host_span(name_, start_, Trace::now_ns());
    }
    TraceSpan(const TraceSpan&) = delete;
    TraceSpan& operator=(const TraceSpan&) = delete;

private:
    Trace* trace_;
    const char* name_;
    uint64_t start_;
};

}  // namespace tessel::npu
