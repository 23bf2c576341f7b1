// Profiling through the backends (Backend::set_profiling / take_profile) and the NPU trace
// (TESSEL_NPU_TRACE, npu/host/trace.hpp): a small graph under the scheduler, NPU and CPU. The
// trace file is checked as Perfetto reads it: its schema, per-thread order and nesting, and that
// every device op of the step appears exactly once. Only one test of a process may open the trace
// (it is the process's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "backend/scheduler.hpp"
#include "cpu/cpu_backend.hpp"
#include "graph/builder.hpp"
#include "npu/host/device.hpp"
#include "npu/host/profile.hpp"
#include "support/test_paths.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

constexpr int64_t K = 64, N = 48, M = 5;

// out = rms_norm(x) * g, then w . out (MUL_MAT), then + b: ops of several kinds.
struct ProfiledGraph {
    Graph g;
    Tensor *x, *gain, *w, *b, *out;
    ProfiledGraph() {
        x = g.new_tensor(DType::F32, {K, M}, "x");
        gain = g.new_tensor(DType::F32, {K}, "g");
        w = g.new_tensor(DType::F32, {K, N}, "w");
        b = g.new_tensor(DType::F32, {N}, "b");
        for (Tensor* t : {x, gain, w, b}) t->flags |= kFlagInput;
        Tensor* normed = build::mul(g, build::rms_norm(g, x, 1e-6f), gain);
        out = build::add(g, build::mul_mat(g, w, normed), b);
        out->flags |= kFlagOutput;
        g.expand(out);
    }
    static float xv(int64_t i, int64_t m) { return 0.01f * static_cast<float>((i * 7 + m * 13) % 50) - 0.2f; }
    static float wv(int64_t i, int64_t n) { return 0.02f * static_cast<float>((i * 3 + n * 5) % 17) - 0.15f; }
    void set_inputs() {
        std::vector<float> xs(K * M), gs(K), ws(K * N), bs(N);
        for (int64_t m = 0; m < M; ++m)
            for (int64_t i = 0; i < K; ++i) xs[m * K + i] = xv(i, m);
        for (int64_t i = 0; i < K; ++i) gs[i] = 1.0f + 0.01f * static_cast<float>(i);
        for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < K; ++i) ws[n * K + i] = wv(i, n);
        for (int64_t n = 0; n < N; ++n) bs[n] = 0.1f * static_cast<float>(n);
        x->buffer->set_tensor(*x, xs.data(), 0, xs.size() * 4);
        gain->buffer->set_tensor(*gain, gs.data(), 0, gs.size() * 4);
        w->buffer->set_tensor(*w, ws.data(), 0, ws.size() * 4);
        b->buffer->set_tensor(*b, bs.data(), 0, bs.size() * 4);
    }
    void check_result() const {
        std::vector<float> r(N * M);
        out->buffer->get_tensor(*out, r.data(), 0, r.size() * 4);
        for (int64_t m = 0; m < M; ++m) {
            double ss = 0;
            for (int64_t i = 0; i < K; ++i) ss += static_cast<double>(xv(i, m)) * xv(i, m);
            const double scale = 1.0 / std::sqrt(ss / K + 1e-6);
            for (int64_t n = 0; n < N; ++n) {
                double dot = 0;
                for (int64_t i = 0; i < K; ++i) dot += wv(i, n) * xv(i, m) * scale * (1.0 + 0.01 * static_cast<double>(i));
                EXPECT_NEAR(r[m * N + n], dot + 0.1 * static_cast<double>(n), 1e-3) << m << " " << n;
            }
        }
    }
};

/// config_from_env() with `name` set to `value` for the call (the variable is unset afterwards).
Config config_with(const char* name, const char* value) {
    setenv(name, value, 1);
    struct Unset {
        const char* name;
        ~Unset() { unsetenv(name); }
    } unset{name};
    return config_from_env();
}

void expect_refused(const char* name, const char* value) {
    try {
        config_with(name, value);
        ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Environment) << e.what();
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
}

TEST(NpuProfile, ConfigReadsTheProfilingVariables) {
    EXPECT_EQ(config_with("TESSEL_NPU_PROFILE", "2").profile, 2);
    EXPECT_EQ(config_with("TESSEL_NPU_PROFILE", "1").profile, 1);
    expect_refused("TESSEL_NPU_PROFILE", "3");
    EXPECT_EQ(config_with("TESSEL_NPU_PMU", "branch-misses,cycles").pmu, "branch-misses,cycles");
    EXPECT_EQ(config_with("TESSEL_NPU_PMU", "off").pmu, "off");
    expect_refused("TESSEL_NPU_PMU", "cycles,bogus");
    expect_refused("TESSEL_NPU_PMU", "cycles,instructions,cache-misses,branch-misses");  // 3 slots
    EXPECT_EQ(config_with("TESSEL_NPU_TRACE", "/tmp/t.json").trace, "/tmp/t.json");
    expect_refused("TESSEL_NPU_TRACE", "");
}

TEST(NpuProfile, NodesOfADeviceOp) {
    EXPECT_EQ(nodes_of_op("MUL_MAT"), 1u);
    EXPECT_EQ(nodes_of_op("RMS_NORM+MUL"), 2u);
    EXPECT_EQ(nodes_of_op("MUL_MAT x3"), 3u);
    EXPECT_EQ(nodes_of_op("MUL_MAT+ADD x3"), 6u);
    EXPECT_EQ(nodes_of_op("FENCE"), 0u);
    EXPECT_EQ(nodes_of_op("SET_TENSOR"), 0u);
}

// The records pair with the nodes in order; a fence takes none; a record whose name is not its
// node's op ends the pairing.
TEST(NpuProfile, PairsRecordsWithNodes) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {4}, "a");
    Tensor* sum = build::add(g, a, a);
    Tensor* prod = build::mul(g, sum, a);
    auto rec = [](const char* op, uint64_t t0, uint64_t t1) {
        OpProfile p{op, {}};
        p.record.start_ns = t0, p.record.stop_ns = t1;
        return p;
    };
    const auto t = pair_profile({rec("ADD+MUL", 10, 25), rec("FENCE", 30, 31), rec("MUL", 40, 45)}, {sum, prod});
    ASSERT_EQ(t.size(), 3u);
    EXPECT_EQ(t[0].ns, 15u);
    EXPECT_EQ(t[0].nodes, (std::vector<const Tensor*>{sum, prod}));
    EXPECT_TRUE(t[1].nodes.empty());
    EXPECT_TRUE(t[2].nodes.empty());  // no node left for it
    const auto wrong = pair_profile({rec("MUL", 0, 1)}, {sum});
    EXPECT_TRUE(wrong[0].nodes.empty());
}

// The CPU backend times each node of a graph (and the barriers of solo steps); the times add up
// to at most the wall time.
TEST(CpuProfile, TimesEveryNode) {
    auto cpu = cpu::cpu_device().init_backend({2});
    ProfiledGraph pg;
    Scheduler s({cpu.get()});
    s.allocate(pg.g);
    pg.set_inputs();
    cpu->set_profiling(true);
    const auto t0 = std::chrono::steady_clock::now();
    s.compute();
    const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    pg.check_result();
    const std::vector<OpTiming> t = cpu->take_profile();
    std::vector<std::string> ops;
    uint64_t total = 0;
    for (const OpTiming& o : t) {
        total += o.ns;
        if (o.op == "(sync)") {  // a solo step's barrier
            EXPECT_TRUE(o.nodes.empty());
            continue;
        }
        ops.push_back(o.op);
        ASSERT_EQ(o.nodes.size(), 1u);
        EXPECT_EQ(o.op, op_name(o.nodes[0]->op));
    }
    EXPECT_EQ(ops, (std::vector<std::string>{"RMS_NORM", "MUL", "MUL_MAT", "ADD"}));
    EXPECT_GT(total, 0u);
    EXPECT_LE(total, static_cast<uint64_t>(wall));
    EXPECT_TRUE(cpu->take_profile().empty());  // taken
    cpu->set_profiling(false);
    s.compute();
    EXPECT_TRUE(cpu->take_profile().empty());
}

// The NPU's profile and trace of one step: every device op once in the trace, as in the records.
TEST(NpuTrace, HoldsEveryOpOfAStepOnce) {
    const std::filesystem::path path = test::temp_dir() / "npu-trace.json";
    std::vector<OpTiming> profile;
    {
        Config cfg;
        cfg.trace = path.string();
        cfg.n_threads = 2;
        NpuDevice dev("NPU0", cfg);
        auto npu = dev.init_backend({});
        auto cpu = cpu::cpu_device().init_backend({1});
        ProfiledGraph pg;
        Scheduler s({npu.get(), cpu.get()});
        s.allocate(pg.g);
        pg.set_inputs();
        s.compute();  // a step before profiling: in the trace, not in the profile
        npu->set_profiling(true);
        s.compute();
        pg.check_result();
        profile = npu->take_profile();
    }  // the session closes: the trace is written
    ASSERT_FALSE(profile.empty());
    std::vector<std::string> names;
    for (const OpTiming& t : profile) names.push_back(t.op);
    EXPECT_NE(std::find(names.begin(), names.end(), "MUL_MAT"), names.end());
    for (const OpTiming& t : profile)
        if (t.op == "MUL_MAT") {
            EXPECT_EQ(t.nodes.size(), 1u);
        }

    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    const nlohmann::json j = nlohmann::json::parse(in);
    ASSERT_TRUE(j["traceEvents"].is_array());
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> threads;  // (pid, tid) -> (ts, end)
    std::map<std::pair<int, int>, int> balance;                                      // B/E per thread
    std::set<std::pair<int, int>> named;
    std::map<std::pair<uint64_t, uint64_t>, std::string> ops;  // (batch, op) -> name
    std::set<std::string> host_spans;
    for (const nlohmann::json& e : j["traceEvents"]) {
        ASSERT_TRUE(e["name"].is_string()) << e;
        ASSERT_TRUE(e["ph"].is_string()) << e;
        ASSERT_TRUE(e["pid"].is_number_integer()) << e;
        ASSERT_TRUE(e["tid"].is_number_integer()) << e;
        const std::string ph = e["ph"];
        const std::pair<int, int> thread{e["pid"], e["tid"]};
        if (ph == "M") {
            ASSERT_TRUE(e["args"]["name"].is_string()) << e;
            if (e["name"] == "thread_name") named.insert(thread);
            continue;
        }
        ASSERT_TRUE(e["ts"].is_number()) << e;
        ASSERT_TRUE(ph == "X" || ph == "B" || ph == "E") << e;
        if (ph == "B") ++balance[thread];
        if (ph == "E") --balance[thread];
        if (ph != "X") continue;
        ASSERT_TRUE(e["dur"].is_number()) << e;
        ASSERT_GE(e["dur"].get<double>(), 0.0) << e;
        ASSERT_TRUE(e["args"].is_object()) << e;
        threads[thread].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
        if (e["cat"] == "host") host_spans.insert(e["name"].get<std::string>());
        if (e["cat"] == "op") {
            const auto key = std::make_pair(e["args"]["batch"].get<uint64_t>(), e["args"]["op"].get<uint64_t>());
            EXPECT_TRUE(ops.emplace(key, e["name"].get<std::string>()).second) << "op twice: " << e;
        }
    }
    for (const auto& [thread, b] : balance) EXPECT_EQ(b, 0) << thread.first << "/" << thread.second;
    // Per thread: starts never go back, and a span that starts inside another ends inside it.
    for (const auto& [thread, spans] : threads) {
        EXPECT_TRUE(named.count(thread)) << "unnamed thread " << thread.first << "/" << thread.second;
        std::vector<double> open_ends;
        for (size_t i = 0; i < spans.size(); ++i) {
            if (i > 0) {
                ASSERT_GE(spans[i].first, spans[i - 1].first) << thread.first << "/" << thread.second;
            }
            while (!open_ends.empty() && open_ends.back() <= spans[i].first + 1e-3) open_ends.pop_back();  // µs with ns decimals
            if (!open_ends.empty()) {
                ASSERT_LE(spans[i].second, open_ends.back() + 1e-3) << "overlap on " << thread.first << "/" << thread.second;
            }
            open_ends.push_back(spans[i].second);
        }
    }
    for (const char* h : {"translate", "push", "wait"}) EXPECT_TRUE(host_spans.count(h)) << h;
    // The profiled step is the second half of the trace's ops: its ops, in order, exactly once.
    ASSERT_EQ(ops.size() % 2, 0u);
    ASSERT_EQ(ops.size() / 2, names.size());
    size_t i = 0;
    for (const auto& [key, name] : ops) {
        if (i >= names.size()) {
            EXPECT_EQ(name, names[i - names.size()]) << "op " << i;
        }
        ++i;
    }
}

}  // namespace
}  // namespace tessel::npu
