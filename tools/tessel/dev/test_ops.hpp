// `tessel test-ops`: backend conformance. Every case is a graph of one op (the fusion cases: a
// short chain ending in the node compared); the tool builds it once
// for the reference (the scalar kernels of cpu/ref on one thread, host memory) and once per
// subject (a device's backend, for the CPU at several thread counts, and per weight buffer type
// the device offers), feeds both the same seeded data, and compares the outputs by NMSE.
//
// Units (a file per concept):
//   test_ops_cases*.cpp  the case lists (what is tested, with which data and bounds)
//   test_ops_runner.cpp  placement with guard bytes, data, running, reading back, test mode
//   test_ops_compare.cpp comparison with the reference (and with the values a quantizing op stores)
//   test_ops_perf.cpp    perf and support modes
//   test_ops_cli.cpp     flags and the `tessel test-ops` subcommand
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "graph/graph.hpp"

namespace tessel::cli::test_ops {

// ---- cases ---------------------------------------------------------------------------------

/// How a leaf's data is made (all from the case's seeded std::mt19937).
enum class Fill : uint8_t {
    Uniform,    ///< floats uniform in [lo, hi), converted/quantized to the leaf's type
    Ids,        ///< integers uniform in [0, n) (distinct per row of ne[0] when `distinct`)
    Positions,  ///< ROPE positions: integers uniform in [0, n)
    Mask,       ///< floats uniform in [-1, 1), each -inf with probability p_inf; rows listed
                ///< in inf_rows are all -inf
    Causal,     ///< a causal attention mask: entry (j, i1) is 0 for key j <= past + i1, else
                ///< -inf (a prompt after `past` cached tokens); rows in inf_rows are all -inf
    Q8Grid,     ///< integers uniform in [-127, 127], each run of 32 along ne[0] holding a ±127:
                ///< quantizing them to Q8_0 is lossless (scale 1)
};

/// One leaf of a case and the rule for its data.
struct LeafSpec {
    Tensor* t = nullptr;
    Fill fill = Fill::Uniform;
    float lo = -1.0f, hi = 1.0f;  ///< Uniform range
    int64_t n = 0;                ///< Ids / Positions: values in [0, n)
    bool distinct = false;        ///< Ids: distinct within each run of ne[0]
    int64_t invalid_every = 0;    ///< Ids: every k-th id is -1 (out of range) when > 0
    float p_inf = 0.0f;           ///< Mask: probability of -inf
    int64_t past = 0;             ///< Causal: keys before the first query
    std::vector<int64_t> inf_rows;  ///< Mask, Causal: rows (i1 of the first 2-D slice) made all -inf
    bool weight = false;          ///< placed in each weight buffer type (src0 of MUL_MAT, ...)
};

/// Creates the leaves of a case (recording their fill rules) on a graph.
class Maker {
public:
    explicit Maker(Graph& g) : g_(g) {}
    Graph& g() { return g_; }
    const std::vector<LeafSpec>& leaves() const { return leaves_; }

    /// Input with uniform data in [lo, hi).
    Tensor* input(DType t, std::initializer_list<int64_t> ne, float lo = -1.0f, float hi = 1.0f);
    /// Input of shape ne seen through a transposed view (ne[0] strided: a non-contiguous source).
    Tensor* input_t(DType t, std::initializer_list<int64_t> ne, float lo = -1.0f, float hi = 1.0f);
    /// Input of shape ne seen through a permuted view (dims 1 and 2 swapped in memory: rows
    /// contiguous, rows of one batch not).
    Tensor* input_p(DType t, std::initializer_list<int64_t> ne, float lo = -1.0f, float hi = 1.0f);
    /// Input of integers on the Q8 grid (Fill::Q8Grid): a kernel that quantizes it to Q8_0
    /// loses nothing, so its error is only its own arithmetic's. ne[0] a multiple of 32.
    Tensor* q8_grid(DType t, std::initializer_list<int64_t> ne);
    /// A weight (uniform data quantized to t), placed in every weight buffer type of the device.
    Tensor* weight(DType t, std::initializer_list<int64_t> ne);
    /// Integer ids in [0, n).
    Tensor* ids(DType t, std::initializer_list<int64_t> ne, int64_t n, bool distinct = false, int64_t invalid_every = 0);
    /// ROPE positions I32 [n_tokens] in [0, 4096).
    Tensor* positions(int64_t n_tokens);
    /// Attention mask with -inf entries (probability p_inf) and all -inf rows.
    Tensor* mask(DType t, std::initializer_list<int64_t> ne, float p_inf, std::vector<int64_t> inf_rows = {});
    /// Causal attention mask [KV, T, ...] (Fill::Causal): query row i1 sees keys 0 .. past + i1.
    Tensor* causal_mask(DType t, std::initializer_list<int64_t> ne, int64_t past, std::vector<int64_t> inf_rows = {});

private:
    Tensor* leaf(DType t, std::initializer_list<int64_t> ne);
    Graph& g_;
    std::vector<LeafSpec> leaves_;
};

/// How outputs are compared.
enum class Compare : uint8_t {
    Nmse,       ///< NMSE <= max_nmse
    Exact,      ///< bit-identical output bytes (CPY with equal types, ARGMAX, ARGSORT)
    Quantized,  ///< output of a lower-precision type: compare_quantized() against the stored values
};

struct Case {
    Op op = Op::NONE;
    std::string variant;                    ///< e.g. "SILU", "NEOX", "" (shown next to the op)
    std::function<Tensor*(Maker&)> build;   ///< builds the graph; returns the node compared
    Compare compare = Compare::Nmse;
    double max_nmse = 1e-7;
    bool core = false;  ///< always part of the --ci subset
};

/// Every test case, in a fixed order.
std::vector<Case> test_cases();
/// Larger cases for perf mode.
std::vector<Case> perf_cases();

// Case lists per op group (test_ops_cases.cpp, test_ops_cases_mat.cpp).
void add_data_cases(std::vector<Case>& out);
void add_elementwise_cases(std::vector<Case>& out);
void add_reduce_cases(std::vector<Case>& out);
void add_matmul_cases(std::vector<Case>& out);
void add_attention_cases(std::vector<Case>& out);
/// Chains of several nodes a backend may fuse (test_ops_cases_fusion.cpp).
void add_fusion_cases(std::vector<Case>& out);

/// The weight dtypes MUL_MAT / MUL_MAT_ID / GET_ROWS are tested with.
const std::vector<DType>& weight_types();

// ---- options -------------------------------------------------------------------------------

enum class Mode { Test, Perf, Support };

struct Options {
    Mode mode = Mode::Test;
    std::vector<std::string> backends;  ///< device names to test (empty: all)
    std::vector<Op> ops;                ///< empty: all
    std::vector<DType> types;           ///< empty: all
    bool ci = false;
    uint32_t seed = 42;
    int reps = 0;              ///< perf: runs per measurement (0: until ~0.2 s)
    std::vector<int> threads;  ///< CPU thread counts (empty: the mode's default)
};

// ---- runner --------------------------------------------------------------------------------

/// A built case: the graph, its output node and its leaves.
struct Instance {
    std::unique_ptr<Graph> g;
    Tensor* out = nullptr;
    std::vector<LeafSpec> leaves;
};

/// Builds c on a new graph (throws tessel::Error when a builder rejects it).
Instance instantiate(const Case& c);

/// True when the case has a weight leaf (tested in each weight buffer type).
bool has_weight(const Instance& inst);
/// Input dtypes of a case (types of its uniform-filled leaves), for the -t filter.
std::vector<DType> case_types(const Instance& inst);
/// "types" column: source types -> output type, e.g. "Q4_0,F32->F32".
std::string types_text(const Tensor& out);
/// "shape" column: the sources' shapes, a trailing "T"/"P" marking a non-contiguous one.
std::string shape_text(const Tensor& out);
/// The op column: op name and variant.
std::string op_text(const Case& c);

/// Seeded data for every leaf of an instance (bytes in each leaf's plain layout).
std::vector<std::vector<uint8_t>> make_data(const Instance& inst, uint32_t seed);

/// Tensors of one instance placed in buffers with guard regions around each.
class Placement {
public:
    /// Places every tensor of inst on `dev`: weights in `weight_buft`, the rest in dev.buffer_type().
    Placement(Instance& inst, Device& dev, BufferType& weight_buft, uint32_t guard_seed);
    ~Placement();
    Placement(const Placement&) = delete;
    Placement& operator=(const Placement&) = delete;
    /// Writes the leaves' data; fills computed tensors with NaN bytes (0xFF).
    void upload(const std::vector<std::vector<uint8_t>>& data);
    /// Empty when every guard region is intact, else "out-of-bounds write ..." naming the tensor.
    std::string check_guards() const;

private:
    struct Alloc;
    std::vector<std::unique_ptr<Alloc>> allocs_;
};

/// The output (the storage the op writes: the node, or the tensor a CPY/SET_ROWS writes into).
struct Output {
    DType type = DType::F32;
    std::vector<uint8_t> bytes;  ///< plain layout
    std::vector<float> values;   ///< converted to float
};
Output read_output(const Tensor& out);

/// Runs the nodes of inst on the reference kernels with one thread.
void run_reference(Instance& inst);

/// Result of comparing a subject's output with the reference's.
struct Verdict {
    bool ok = false;
    double nmse = 0.0;
    double bound = 0.0;
    std::string why;  ///< reason of a failure
};
/// Compares by c.compare; a Compare::Quantized case needs `stored` (stored_values()).
Verdict compare(const Case& c, const Output& ref, const Output& got, const std::vector<float>* stored = nullptr);

/// The values a quantizing node (CPY / CONT / DUP from a float type, or SET_ROWS) is asked to
/// store, in its output's plain element order, read from its placed sources after a run;
/// `dst_initial`: SET_ROWS's destination bytes before the run (the rows it keeps). Throws
/// Error(Unsupported) for other nodes.
std::vector<float> stored_values(const Tensor& out, const std::vector<uint8_t>& dst_initial);

/// The check of an op that quantizes `stored` (the values it was asked to store) into type t:
/// the subject's dequantized output `got` must have NMSE(stored, got) <= 2 * NMSE(stored, ref),
/// `ref` the reference quantizer's round trip, and in every block of t no element further from
/// its value than twice the reference's worst one in that block (plus 1e-6 of the block's
/// largest magnitude). Verdict::nmse is NMSE(stored, got), Verdict::bound 2 * NMSE(stored, ref).
Verdict compare_quantized(DType t, const std::vector<float>& stored, const std::vector<float>& ref,
                          const std::vector<float>& got);

/// A backend under test: a device's stream, with the thread count for the CPU.
struct Subject {
    Device* dev = nullptr;
    std::unique_ptr<Backend> backend;
    int threads = 0;    ///< 0: the device's default (accelerators)
    std::string label;  ///< e.g. "CPU/4t", "NPU0"
};
std::vector<Subject> make_subjects(const Options& opt, const std::vector<int>& cpu_threads);

/// Weight buffer types a device offers: buffer_type() then extra_weight_buffer_types().
std::vector<BufferType*> weight_buffer_types(Device& dev);

/// Cases selected by the options (op and type filters, the --ci subset).
std::vector<const Case*> select_cases(const std::vector<Case>& all, const Options& opt);

/// Per-case seed (the --seed mixed with the case's index).
uint32_t case_seed(uint32_t seed, size_t index);

/// Runs test mode; returns the number of failed cases plus the subjects named with -b that ran none.
int run_tests(const Options& opt);
/// Runs perf mode (a table on stdout); returns the number of cases that ended in an error.
int run_perf(const Options& opt);
/// Runs support mode (a table on stdout).
void run_support(const Options& opt);

}  // namespace tessel::cli::test_ops
