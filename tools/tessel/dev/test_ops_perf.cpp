// test-ops perf and support modes.
//
// perf: for each perf case, the 1-thread reference and every subject are timed (µs per run,
// repeated until ~0.2 s or -r runs, after one warm-up run); the rate is GFLOP/s for MUL_MAT,
// MUL_MAT_ID and FLASH_ATTN_EXT and GB/s (bytes of sources and output) for the others.
// support: Device::supports_op over the test cases, one row per op × type.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "cpu/cpu_backend.hpp"
#include "cpu/ref/ref.hpp"
#include "cpu/topology.hpp"
#include "graph/op_cost.hpp"
#include "backend/registry.hpp"
#include "tessel/errors.hpp"
#include "test_ops.hpp"
#include "runtime/devices.hpp"

namespace tessel::cli::test_ops {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kPerfSeconds = 0.2;
constexpr int kMaxRuns = 100000;

/// Microseconds per call of fn: `reps` calls, or as many as fit in ~0.2 s (at least one).
template <class F>
double time_us(F&& fn, int reps) {
    fn();  // warm-up
    int runs = 0;
    const auto t0 = Clock::now();
    double elapsed = 0.0;
    do {
        fn();
        ++runs;
        elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (reps > 0 ? runs < reps : (elapsed < kPerfSeconds && runs < kMaxRuns));
    return elapsed * 1e6 / runs;
}

std::string rate_text(const Tensor& out, double us) {
    char buf[48];
    const double f = op_flops(out);
    if (f > 0.0)
        std::snprintf(buf, sizeof buf, "%.2f GFLOP/s", f / (us * 1e3));
    else
        std::snprintf(buf, sizeof buf, "%.2f GB/s", op_bytes(out) / (us * 1e3));
    return buf;
}

}  // namespace

int run_perf(const Options& opt) {
    int errors = 0;
    const std::vector<Case> all = perf_cases();
    Options sel = opt;
    sel.ci = false;  // perf cases are few; --ci does not thin them
    const std::vector<const Case*> cases = select_cases(all, sel);
    const std::vector<int> threads = opt.threads.empty() ? std::vector<int>{cpu::default_thread_count()} : opt.threads;
    std::vector<Subject> subjects = make_subjects(opt, threads);
    std::printf("%-8s %-20s %-16s %-26s %-10s %-14s %12s %18s %9s\n", "backend", "op", "types", "shape", "buft", "kernel",
                "us/run", "rate", "speedup");
    for (const Case* c : cases) {
        const uint32_t seed = case_seed(opt.seed, static_cast<size_t>(c - all.data()));
        Instance ref = instantiate(*c);
        const std::vector<std::vector<uint8_t>> data = make_data(ref, seed);
        Placement ref_place(ref, cpu::cpu_device(), cpu::HostBufferType::instance(), seed);
        ref_place.upload(data);
        const double ref_us = time_us([&] { run_reference(ref); }, opt.reps);
        const std::string op = op_text(*c), types = types_text(*ref.out), shape = shape_text(*ref.out);
        std::printf("%-8s %-20s %-16s %-26s %-10s %-14s %12.1f %18s %9s\n", "ref/1t", op.c_str(), types.c_str(),
                    shape.c_str(), "CPU", "ref", ref_us, rate_text(*ref.out, ref_us).c_str(), "1.00x");
        std::fflush(stdout);
        for (Subject& s : subjects) {
            const std::vector<BufferType*> bufts =
                has_weight(ref) ? weight_buffer_types(*s.dev) : std::vector<BufferType*>{&s.dev->buffer_type()};
            for (BufferType* bt : bufts) {
                Instance sub = instantiate(*c);
                std::string status;
                double us = 0.0;
                std::string kernel = "-";
                try {
                    Placement place(sub, *s.dev, *bt, seed);
                    if (!s.dev->supports_op(*sub.out)) {
                        status = "not supported";
                    } else {
                        place.upload(data);
                        std::vector<Tensor*> nodes = sub.g->nodes();
                        s.backend->graph_optimize(nodes);
                        us = time_us([&] {
                            s.backend->graph_compute(nodes);
                            s.backend->synchronize();
                        }, opt.reps);
                        kernel = s.backend->kernel_name(*sub.out);
                    }
                } catch (const Error& e) {
                    status = e.what();
                    ++errors;
                }
                if (!status.empty()) {
                    std::printf("%-8s %-20s %-16s %-26s %-10s %s\n", s.label.c_str(), op.c_str(), types.c_str(),
                                shape.c_str(), bt->name().c_str(), status.c_str());
                } else {
                    char speed[32];
                    std::snprintf(speed, sizeof speed, "%.2fx", ref_us / us);
                    std::printf("%-8s %-20s %-16s %-26s %-10s %-14s %12.1f %18s %9s\n", s.label.c_str(), op.c_str(),
                                types.c_str(), shape.c_str(), bt->name().c_str(), kernel.c_str(), us,
                                rate_text(*sub.out, us).c_str(), speed);
                }
                std::fflush(stdout);
            }
        }
    }
    return errors;
}

void run_support(const Options& opt) {
    const std::vector<Case> all = test_cases();
    Options sel = opt;
    sel.ci = false;
    const std::vector<const Case*> cases = select_cases(all, sel);
    std::vector<Device*> devices;
    for (Device* d : runtime::device_registry().devices())
        if (opt.backends.empty() || std::find(opt.backends.begin(), opt.backends.end(), d->name()) != opt.backends.end())
            devices.push_back(d);

    // (op, type) -> per device: cases supported, cases seen
    struct Count {
        int yes = 0, total = 0;
    };
    std::map<std::pair<int, std::string>, std::vector<Count>> table;
    for (const Case* c : cases) {
        Instance inst;
        try {
            inst = instantiate(*c);
        } catch (const Error&) {
            continue;  // reported by test mode
        }
        const Tensor& out = *inst.out;
        // The type that matters: the written type for copies, else the first source's.
        const bool copy = out.op == Op::CPY || out.op == Op::SET_ROWS;
        const std::string type = copy ? std::string(dtype_name(out.type)) + " (dst)"
                                      : std::string(out.src[0] ? dtype_name(out.src[0]->type) : dtype_name(out.type));
        auto& counts = table[{static_cast<int>(out.op), type}];
        counts.resize(devices.size());
        for (size_t d = 0; d < devices.size(); ++d) {
            counts[d].total += 1;
            counts[d].yes += devices[d]->supports_op(out) ? 1 : 0;
        }
    }
    std::printf("%-16s %-12s", "op", "type");
    for (Device* d : devices) std::printf(" %-14s", d->name().c_str());
    std::printf("\n");
    for (const auto& [key, counts] : table) {
        std::printf("%-16s %-12s", op_name(static_cast<Op>(key.first)), key.second.c_str());
        for (const Count& n : counts) {
            std::string cell = n.yes == n.total ? "yes" : n.yes == 0 ? "no" : "partial " + std::to_string(n.yes) + "/" + std::to_string(n.total);
            std::printf(" %-14s", cell.c_str());
        }
        std::printf("\n");
    }
}

}  // namespace tessel::cli::test_ops
