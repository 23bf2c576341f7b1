// test-ops runner: instances of cases, seeded data, placement with guard bytes, the reference
// run, reading outputs back, comparison, and test mode.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "backend/registry.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/ref/ref.hpp"
#include "cpu/threadpool.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"
#include "test_ops.hpp"
#include "runtime/devices.hpp"

namespace tessel::cli::test_ops {

// ---- instances and their description ----------------------------------------------------------

Instance instantiate(const Case& c) {
    Instance inst;
    inst.g = std::make_unique<Graph>();
    Maker m(*inst.g);
    inst.out = c.build(m);
    inst.out->flags |= kFlagOutput;
    if (inst.out->name.empty()) inst.out->name = "out";
    inst.g->expand(inst.out);
    inst.leaves = m.leaves();
    return inst;
}

bool has_weight(const Instance& inst) {
    return std::any_of(inst.leaves.begin(), inst.leaves.end(), [](const LeafSpec& s) { return s.weight; });
}

std::vector<DType> case_types(const Instance& inst) {
    std::vector<DType> types;
    for (const LeafSpec& s : inst.leaves)
        if (s.fill == Fill::Uniform && std::find(types.begin(), types.end(), s.t->type) == types.end())
            types.push_back(s.t->type);
    return types;
}

std::string types_text(const Tensor& out) {
    std::string s;
    for (const Tensor* src : out.src) {
        if (!src) continue;
        if (!s.empty()) s += ',';
        s += dtype_name(src->type);
    }
    return s + "->" + dtype_name(out.type);
}

std::string shape_text(const Tensor& out) {
    std::string s;
    for (const Tensor* src : out.src) {
        if (!src) continue;
        if (!s.empty()) s += ' ';
        int last = kMaxDims - 1;
        while (last > 0 && src->ne[static_cast<size_t>(last)] == 1) --last;
        s += '[';
        for (int d = 0; d <= last; ++d) {
            if (d) s += ',';
            s += std::to_string(src->ne[static_cast<size_t>(d)]);
        }
        s += ']';
        if (src->op == Op::TRANSPOSE) s += 'T';
        else if (src->op == Op::PERMUTE) s += 'P';
        else if (!src->is_contiguous()) s += '*';
    }
    return s;
}

std::string op_text(const Case& c) {
    std::string s = op_name(c.op);
    if (!c.variant.empty()) s += "(" + c.variant + ")";
    return s;
}

// ---- data -------------------------------------------------------------------------------------

namespace {

void put_id(std::vector<uint8_t>& bytes, DType t, int64_t i, int64_t v) {
    if (t == DType::I64) {
        std::memcpy(bytes.data() + i * 8, &v, 8);
    } else {
        const auto v32 = static_cast<int32_t>(v);
        std::memcpy(bytes.data() + i * 4, &v32, 4);
    }
}

/// Converts floats in ne order into t's plain layout, row by row.
std::vector<uint8_t> encode(const Tensor& t, const std::vector<float>& f) {
    std::vector<uint8_t> bytes(t.n_bytes());
    quant::quantize_rows(t.type, f.data(), bytes.data(), t.n_rows(), t.ne[0]);
    return bytes;
}

}  // namespace

std::vector<std::vector<uint8_t>> make_data(const Instance& inst, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::vector<uint8_t>> data;
    for (const LeafSpec& s : inst.leaves) {
        const Tensor& t = *s.t;
        const int64_t n = t.n_elements();
        switch (s.fill) {
            case Fill::Uniform: {
                std::uniform_real_distribution<float> u(s.lo, s.hi);
                std::vector<float> f(static_cast<size_t>(n));
                for (float& v : f) v = u(rng);
                data.push_back(encode(t, f));
                break;
            }
            case Fill::Ids:
            case Fill::Positions: {
                std::vector<uint8_t> bytes(t.n_bytes());
                std::vector<int64_t> pool(static_cast<size_t>(std::max<int64_t>(s.n, 1)));
                std::uniform_int_distribution<int64_t> u(0, std::max<int64_t>(s.n - 1, 0));
                for (int64_t row = 0; row < t.n_rows(); ++row) {
                    if (s.distinct) {
                        for (size_t k = 0; k < pool.size(); ++k) pool[k] = static_cast<int64_t>(k);
                        std::shuffle(pool.begin(), pool.end(), rng);
                    }
                    for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) {
                        const int64_t i = row * t.ne[0] + i0;
                        int64_t v = s.distinct ? pool[static_cast<size_t>(i0 % static_cast<int64_t>(pool.size()))] : u(rng);
                        if (s.invalid_every > 0 && i % s.invalid_every == s.invalid_every - 1) v = -1;
                        put_id(bytes, t.type, i, v);
                    }
                }
                data.push_back(std::move(bytes));
                break;
            }
            case Fill::Q8Grid: {
                std::uniform_int_distribution<int> q(-127, 127);
                std::uniform_int_distribution<int> at(0, 31);
                std::vector<float> f(static_cast<size_t>(n));
                for (float& v : f) v = static_cast<float>(q(rng));
                for (int64_t run = 0; run + 32 <= n; run += 32)
                    f[static_cast<size_t>(run + at(rng))] = q(rng) < 0 ? -127.0f : 127.0f;
                data.push_back(encode(t, f));
                break;
            }
            case Fill::Mask: {
                std::uniform_real_distribution<float> u(-1.0f, 1.0f);
                std::uniform_real_distribution<float> p(0.0f, 1.0f);
                std::vector<float> f(static_cast<size_t>(n));
                for (int64_t i = 0; i < n; ++i) {
                    const int64_t i1 = i / t.ne[0] % t.ne[1];
                    const bool row_inf = std::find(s.inf_rows.begin(), s.inf_rows.end(), i1) != s.inf_rows.end();
                    const float v = u(rng);
                    f[static_cast<size_t>(i)] = row_inf || p(rng) < s.p_inf ? -std::numeric_limits<float>::infinity() : v;
                }
                data.push_back(encode(t, f));
                break;
            }
            case Fill::Causal: {
                std::vector<float> f(static_cast<size_t>(n));
                for (int64_t i = 0; i < n; ++i) {
                    const int64_t j = i % t.ne[0], i1 = i / t.ne[0] % t.ne[1];
                    const bool row_inf = std::find(s.inf_rows.begin(), s.inf_rows.end(), i1) != s.inf_rows.end();
                    f[static_cast<size_t>(i)] = row_inf || j > s.past + i1 ? -std::numeric_limits<float>::infinity() : 0.0f;
                }
                data.push_back(encode(t, f));
                break;
            }
        }
    }
    return data;
}

// ---- placement with guards ------------------------------------------------------------------

namespace {

constexpr size_t kGuard = 256;

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

/// One buffer holding one tensor at offset `body_off`, guard bytes around it, and an I8 "frame"
/// tensor spanning the whole buffer through which the guards are written and read (so the
/// check works on buffers the host cannot address).
struct Placement::Alloc {
    std::unique_ptr<Buffer> buf;
    Tensor frame;
    Tensor* t = nullptr;
    int leaf = -1;  // index into Instance::leaves, or -1 for a computed tensor
    size_t body_off = 0, body_end = 0;
    std::vector<uint8_t> pattern;  // the whole buffer's guard pattern
};

Placement::Placement(Instance& inst, Device& dev, BufferType& weight_buft, uint32_t guard_seed) {
    std::unordered_map<const Tensor*, int> leaf_index;
    for (size_t i = 0; i < inst.leaves.size(); ++i) leaf_index[inst.leaves[i].t] = static_cast<int>(i);
    std::mt19937 rng(guard_seed);
    std::vector<Tensor*> all(inst.g->leaves());
    all.insert(all.end(), inst.g->nodes().begin(), inst.g->nodes().end());
    for (Tensor* t : all) {
        if (t->view_src) continue;
        auto a = std::make_unique<Alloc>();
        a->t = t;
        const auto it = leaf_index.find(t);
        a->leaf = it == leaf_index.end() ? -1 : it->second;
        const bool weight = a->leaf >= 0 && inst.leaves[static_cast<size_t>(a->leaf)].weight;
        BufferType& bt = weight ? weight_buft : dev.buffer_type();
        const size_t align = bt.alignment();
        const size_t guard = round_up(kGuard, align);
        const size_t body = bt.alloc_size(*t);
        const size_t size = guard + round_up(body, align) + guard;
        a->buf = bt.alloc_buffer(size);
        a->buf->set_usage(weight ? BufferUsage::Weights : BufferUsage::Compute);
        a->frame.name = t->name + ".frame";
        a->frame.set_shape(DType::I8, {static_cast<int64_t>(size)});
        a->buf->init_tensor(a->frame, 0);
        a->buf->init_tensor(*t, guard);
        a->body_off = guard;
        a->body_end = guard + body;
        a->pattern.resize(size);
        for (uint8_t& b : a->pattern) b = static_cast<uint8_t>(rng() >> 24);
        allocs_.push_back(std::move(a));
    }
    for (Tensor* t : inst.g->nodes())
        if (t->view_src) t->view_src->buffer->init_tensor(*t, 0);
}

Placement::~Placement() = default;

void Placement::upload(const std::vector<std::vector<uint8_t>>& data) {
    for (auto& a : allocs_) {
        Buffer& b = *a->buf;
        b.set_tensor(a->frame, a->pattern.data(), 0, a->body_off);
        b.set_tensor(a->frame, a->pattern.data() + a->body_end, a->body_end, a->pattern.size() - a->body_end);
        if (a->leaf >= 0) {
            const auto& bytes = data[static_cast<size_t>(a->leaf)];
            b.set_tensor(*a->t, bytes.data(), 0, bytes.size());
        } else {
            const std::vector<uint8_t> nan(a->t->n_bytes(), 0xFF);  // unwritten F32/F16 outputs read as NaN
            b.set_tensor(*a->t, nan.data(), 0, nan.size());
        }
    }
}

std::string Placement::check_guards() const {
    for (const auto& a : allocs_) {
        std::vector<uint8_t> got(a->pattern.size());
        a->buf->get_tensor(a->frame, got.data(), 0, a->body_off);
        a->buf->get_tensor(a->frame, got.data() + a->body_end, a->body_end, got.size() - a->body_end);
        size_t before = 0, after = 0;
        for (size_t i = 0; i < a->body_off; ++i) before += got[i] != a->pattern[i];
        for (size_t i = a->body_end; i < got.size(); ++i) after += got[i] != a->pattern[i];
        if (before || after)
            return "out-of-bounds write: " + std::to_string(before) + " guard bytes changed before and " +
                   std::to_string(after) + " after " + describe(*a->t);
    }
    return {};
}

// ---- running and reading --------------------------------------------------------------------

void run_reference(Instance& inst) {
    cpu::ThreadPool pool(1);
    for (Tensor* node : inst.g->nodes()) {
        if (!cpu::ref::supports(*node))
            throw Error(ErrorCode::Unsupported, std::string("the reference has no kernel for ") + describe(*node));
        pool.run_parts(pool.size(), [node](cpu::ThreadContext& part) { cpu::ref::compute(*node, part); });
    }
}

Output read_output(const Tensor& out) {
    const Tensor& root = out.view_src ? *out.view_src : out;
    Output o;
    o.type = root.type;
    o.bytes.resize(root.n_bytes());
    root.buffer->get_tensor(root, o.bytes.data(), 0, o.bytes.size());
    o.values.resize(static_cast<size_t>(root.n_elements()));
    const uint64_t rb = root.row_bytes();
    for (int64_t r = 0; r < root.n_rows(); ++r) {
        const uint8_t* src = o.bytes.data() + static_cast<uint64_t>(r) * rb;
        float* dst = o.values.data() + r * root.ne[0];
        if (root.type == DType::I32) {
            for (int64_t i = 0; i < root.ne[0]; ++i) {
                int32_t v;
                std::memcpy(&v, src + i * 4, 4);
                dst[i] = static_cast<float>(v);
            }
        } else {
            quant::dequantize_row(root.type, src, dst, root.ne[0]);
        }
    }
    return o;
}

// ---- subjects and selection -----------------------------------------------------------------

std::vector<Subject> make_subjects(const Options& opt, const std::vector<int>& cpu_threads) {
    std::vector<Subject> out;
    for (Device* dev : runtime::device_registry().devices()) {
        if (!opt.backends.empty() && std::find(opt.backends.begin(), opt.backends.end(), dev->name()) == opt.backends.end())
            continue;
        if (dev->kind() == DeviceKind::Cpu) {
            for (int t : cpu_threads) {
                Subject s;
                s.dev = dev;
                s.threads = t;
                s.backend = dev->init_backend({t});
                s.label = dev->name() + "/" + std::to_string(t) + "t";
                out.push_back(std::move(s));
            }
        } else {
            Subject s;
            s.dev = dev;
            s.backend = dev->init_backend({});
            s.label = dev->name();
            out.push_back(std::move(s));
        }
    }
    return out;
}

std::vector<BufferType*> weight_buffer_types(Device& dev) {
    std::vector<BufferType*> out{&dev.buffer_type()};
    for (BufferType* bt : dev.extra_weight_buffer_types())
        if (bt && std::find(out.begin(), out.end(), bt) == out.end()) out.push_back(bt);
    return out;
}

uint32_t case_seed(uint32_t seed, size_t index) {
    uint64_t z = (static_cast<uint64_t>(seed) << 32) ^ (index + 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return static_cast<uint32_t>(z ^ (z >> 31));
}

std::vector<const Case*> select_cases(const std::vector<Case>& all, const Options& opt) {
    std::vector<const Case*> out;
    for (size_t i = 0; i < all.size(); ++i) {
        const Case& c = all[i];
        if (!opt.ops.empty() && std::find(opt.ops.begin(), opt.ops.end(), c.op) == opt.ops.end()) continue;
        // --ci: the core cases plus a seeded quarter of the others
        if (opt.ci && !c.core && case_seed(opt.seed ^ 0xc1c1c1c1u, i) % 4 != 0) continue;
        if (!opt.types.empty()) {
            bool match = true;  // a case that cannot be built stays in (and reports its error)
            try {
                const Instance inst = instantiate(c);
                const std::vector<DType> types = case_types(inst);
                match = std::any_of(types.begin(), types.end(), [&](DType t) {
                    return std::find(opt.types.begin(), opt.types.end(), t) != opt.types.end();
                });
            } catch (const Error&) {
            }
            if (!match) continue;
        }
        out.push_back(&c);
    }
    // A filter that selects nothing is a mistake (a typo would otherwise pass without testing).
    if (out.empty())
        throw Error(ErrorCode::InvalidArgument, "test-ops: no case matches the given -o/-t filters");
    return out;
}

// ---- test mode --------------------------------------------------------------------------------

namespace {

struct Line {
    std::string backend, op, types, shape, buft, kernel;
    double nmse = -1.0;
    std::string status, why;
    void print() const {
        char nm[32] = "-";
        if (nmse >= 0.0) std::snprintf(nm, sizeof nm, "%.2e", nmse);
        std::printf("  %-8s %-26s %-22s %-38s %-10s %-14s nmse=%-9s %s%s%s\n", backend.c_str(), op.c_str(),
                    types.c_str(), shape.c_str(), buft.c_str(), kernel.c_str(), nm, status.c_str(),
                    why.empty() ? "" : ": ", why.c_str());
        std::fflush(stdout);
    }
};

/// Compares the leaves of a subject instance with the data written (inputs must be read-only),
/// except the tensor a CPY / SET_ROWS writes into.
std::string check_inputs(const Instance& inst, const std::vector<std::vector<uint8_t>>& data) {
    const Tensor* written = inst.out->view_src;
    for (size_t i = 0; i < inst.leaves.size(); ++i) {
        const Tensor& t = *inst.leaves[i].t;
        if (&t == written) continue;
        std::vector<uint8_t> got(data[i].size());
        t.buffer->get_tensor(t, got.data(), 0, got.size());
        if (got != data[i]) return "input " + describe(t) + " was modified";
    }
    return {};
}

}  // namespace

namespace {

/// A reference kernel's name: "ref" (the op-level reference) or a matrix-product chain's last
/// entry, `<weight>_f32_{gemm,gemv}_ref`.
bool ran_reference(const std::string& kernel) {
    return kernel == "ref" || (kernel.size() > 4 && kernel.compare(kernel.size() - 4, 4, "_ref") == 0);
}

const char* kind_text(KernelKind k) {
    switch (k) {
        case KernelKind::Fast: return "a fast kernel";
        case KernelKind::Reference: return "the reference kernel";
        case KernelKind::None: break;
    }
    return "nothing";
}

/// One subject's tally: what its runs claimed, and the cases it declared but did not claim.
struct Tally {
    int fast = 0, reference = 0, skipped = 0, failed = 0;
    std::vector<std::string> unclaimed;
};

/// The leaf data of SET_ROWS's destination (its bytes before the run), else empty.
std::vector<uint8_t> initial_destination(const Instance& inst, const std::vector<std::vector<uint8_t>>& data) {
    for (size_t i = 0; i < inst.leaves.size(); ++i)
        if (inst.out->op == Op::SET_ROWS && inst.leaves[i].t == inst.out->view_src) return data[i];
    return {};
}

}  // namespace

int run_tests(const Options& opt) {
    const std::vector<Case> all = test_cases();
    const std::vector<const Case*> cases = select_cases(all, opt);
    const std::vector<int> threads = opt.threads.empty() ? std::vector<int>{1, 2, 4} : opt.threads;
    std::vector<Subject> subjects = make_subjects(opt, threads);
    std::printf("test-ops: %zu cases, %zu backends, seed %u%s\n", cases.size(), subjects.size(), opt.seed,
                opt.ci ? " (ci subset)" : "");
    int passed = 0, failed = 0, skipped = 0;
    std::vector<Tally> tally(subjects.size());
    for (const Case* c : cases) {
        const uint32_t seed = case_seed(opt.seed, static_cast<size_t>(c - all.data()));
        Line base;
        base.op = op_text(*c);
        auto fail_all = [&](const std::string& why) {
            Line l = base;
            l.backend = "ref";
            l.status = "FAIL";
            l.why = why;
            l.print();
            ++failed;
        };
        Instance ref;
        Output expected;
        std::vector<float> stored;
        std::vector<std::vector<uint8_t>> data;
        std::unique_ptr<Placement> ref_place;
        try {
            ref = instantiate(*c);
            base.types = types_text(*ref.out);
            base.shape = shape_text(*ref.out);
            data = make_data(ref, seed);
            ref_place = std::make_unique<Placement>(ref, cpu::cpu_device(), cpu::HostBufferType::instance(), seed);
            ref_place->upload(data);
            run_reference(ref);
            const std::string guards = ref_place->check_guards();
            if (!guards.empty()) throw Error(ErrorCode::InvalidArgument, "reference: " + guards);
            expected = read_output(*ref.out);
            if (c->compare == Compare::Quantized) stored = stored_values(*ref.out, initial_destination(ref, data));
        } catch (const std::exception& e) {
            fail_all(e.what());
            continue;
        }
        const bool weights = has_weight(ref);
        for (size_t si = 0; si < subjects.size(); ++si) {
            Subject& s = subjects[si];
            Tally& t = tally[si];
            const std::vector<BufferType*> bufts = weights ? weight_buffer_types(*s.dev) : std::vector<BufferType*>{&s.dev->buffer_type()};
            for (BufferType* bt : bufts) {
                Line l = base;
                l.backend = s.label;
                l.buft = bt->name();
                // a case the device declares but does not take fails; one it does not declare is a SKIP
                auto skip = [&](const std::string& why, KernelKind declared) {
                    if (declared == KernelKind::None) {
                        l.status = "SKIP";
                        l.why = why;
                        ++skipped;
                        ++t.skipped;
                    } else {
                        l.status = "FAIL";
                        l.why = std::string("declared ") + kind_text(declared) + " but not claimed (" + why + ")";
                        t.unclaimed.push_back(l.op + " " + l.types + " " + l.shape + " " + l.buft);
                        ++failed;
                        ++t.failed;
                    }
                    l.print();
                };
                try {
                    Instance sub = instantiate(*c);
                    std::unique_ptr<Placement> place;
                    try {
                        place = std::make_unique<Placement>(sub, *s.dev, *bt, seed ^ 0x5bd1e995u);
                    } catch (const Error& e) {
                        if (e.code() != ErrorCode::Unsupported) throw;
                        skip(e.what(), KernelKind::None);
                        continue;
                    }
                    if (bt != &s.dev->buffer_type() && !bt->supports_use(*sub.out)) {
                        // the placement rule (model/weights.hpp) never stores this weight there
                        skip(bt->name() + " does not serve this use (the weight stays in " + s.dev->buffer_type().name() + ")",
                             KernelKind::None);
                        continue;
                    }
                    const KernelKind declared = s.dev->declared_kernel(*sub.out);
                    if (!s.dev->supports_op(*sub.out)) {
                        skip("not supported", declared);
                        continue;
                    }
                    place->upload(data);
                    std::vector<Tensor*> nodes = sub.g->nodes();
                    s.backend->graph_optimize(nodes);
                    s.backend->graph_compute(nodes);
                    s.backend->synchronize();
                    l.kernel = s.backend->kernel_name(*sub.out);
                    const Output got = read_output(*sub.out);
                    Verdict v = compare(*c, expected, got, c->compare == Compare::Quantized ? &stored : nullptr);
                    l.nmse = v.nmse;
                    std::string extra = place->check_guards();
                    if (extra.empty()) extra = check_inputs(sub, data);
                    const KernelKind ran = l.kernel.empty() ? KernelKind::None : ran_reference(l.kernel) ? KernelKind::Reference : KernelKind::Fast;
                    if (ran != declared) {
                        extra += extra.empty() ? "" : "; ";
                        extra += std::string("declared ") + kind_text(declared) + ", ran " + kind_text(ran);
                        if (declared == KernelKind::Fast) t.unclaimed.push_back(l.op + " " + l.types + " " + l.shape + " " + l.buft);
                    }
                    if (!extra.empty()) {
                        v.ok = false;
                        v.why = v.why.empty() ? extra : v.why + "; " + extra;
                    }
                    l.status = v.ok ? "OK" : "FAIL";
                    l.why = v.why;
                    if (v.ok) (ran == KernelKind::Fast ? t.fast : t.reference) += 1;
                } catch (const std::exception& e) {
                    l.status = "FAIL";
                    l.why = e.what();
                }
                l.print();
                if (l.status == "OK") {
                    ++passed;
                } else {
                    ++failed;
                    ++t.failed;
                }
            }
        }
    }
    // Per subject: what it claimed; one that claimed less than it declared fails, and so does one
    // named with -b that ran no case at all (0 passed, 0 failed)
    int bad_subjects = 0;
    for (size_t si = 0; si < subjects.size(); ++si) {
        const Tally& t = tally[si];
        std::printf("%s: %d on a fast kernel, %d on the reference kernel, %d skipped, %d failed\n", subjects[si].label.c_str(),
                    t.fast, t.reference, t.skipped, t.failed);
        if (t.fast + t.reference + t.failed == 0) {
            if (opt.backends.empty()) {
                std::printf("%s: no case ran\n", subjects[si].label.c_str());
            } else {
                std::printf("%s: FAIL: no case ran (0 passed, 0 failed)\n", subjects[si].label.c_str());
                ++bad_subjects;
            }
        }
        if (!t.unclaimed.empty()) {
            std::printf("%s: FAIL: %zu case(s) declared but not claimed:\n", subjects[si].label.c_str(), t.unclaimed.size());
            for (const std::string& u : t.unclaimed) std::printf("    %s\n", u.c_str());
        }
    }
    if (skipped) std::printf("%d skipped\n", skipped);
    std::printf("%d passed, %d failed\n", passed, failed);
    std::fflush(stdout);
    return failed + bad_subjects;
}

}  // namespace tessel::cli::test_ops
