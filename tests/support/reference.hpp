// A model against llama.cpp's reference data (tests/data/<model>/reference.gguf, written by
// scripts/reference/make_reference.py, whose docstring documents the layout): reading the file,
// a teacher-forced forward pass, and the three comparisons the golden suites share (tokenization,
// teacher-forced logits, greedy generation), each reporting mismatches as gtest failures.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/reader.hpp"
#include "support/nmse.hpp"
#include "support/test_paths.hpp"
#include "tessel/engine.hpp"

namespace tessel::test {

/// The data of tensor `name` of a reference file as T values. Throws std::runtime_error when the
/// tensor is missing.
template <typename T>
std::vector<T> reference_tensor(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* info = f.find_tensor(name);
    if (!info) throw std::runtime_error("reference data lacks " + name);
    std::vector<T> out(info->size / sizeof(T));
    std::memcpy(out.data(), f.tensor_data(*info), info->size);
    return out;
}

/// One reference file, opened once; metadata keys are given without the tessel.reference. prefix.
class ReferenceData {
public:
    explicit ReferenceData(const std::filesystem::path& file);
    const gguf::File& file() const { return file_; }
    std::vector<std::string> prompts() const;
    std::string str(const std::string& key) const;
    uint64_t u(const std::string& key) const;
    bool flag(const std::string& key) const;
    template <typename T>
    std::vector<T> tensor(const std::string& name) const {
        return reference_tensor<T>(file_, name);
    }

private:
    const gguf::Value& meta(const std::string& key) const;
    gguf::File file_;
};

/// Where a compute node (not a view) of a graph ran: its backend's device and the kernel.
struct NodeRun {
    std::string node;    ///< op and name, e.g. "MUL_MAT ffn_up-3"
    std::string device;  ///< e.g. "CPU", "NPU0"
    std::string kernel;  ///< Backend::kernel_name ("ref": the CPU's reference kernel)
};
/// The compute nodes of ctx's last graph, in order.
std::vector<NodeRun> last_graph_runs(Context& ctx);

/// Teacher-forced logits (n_vocab floats per position) of every position of `tokens`, decoded as
/// sequence 0 in ubatches of `n_ubatch` tokens with one thread (results do not depend on the
/// thread count; ctest -j2 runs two suites at once) in a context of max(1024, tokens) cells.
/// `last_graph`, when given, gets the last ubatch's last_graph_runs().
std::vector<std::vector<float>> teacher_forced_logits(const std::shared_ptr<const Model>& model,
                                                      const std::vector<int32_t>& tokens, FlashAttn fa,
                                                      int64_t n_ubatch, std::vector<NodeRun>* last_graph = nullptr);

/// How close tessel must be to llama.cpp (the reasoning behind the default model's values is in
/// tests/smollm2/smollm2_test.cpp).
struct LogitBounds {
    double max_nmse;       ///< of each full logit vector
    float flip_margin;     ///< logits: where tessel's top-1 differs, llama.cpp's top-1 leads it by less
                           ///< (in tessel's logits when tessel's pick is outside llama.cpp's top K)
    double max_flip_rate;  ///< of the positions where tessel's top-1 differs
    float greedy_tie;      ///< logits: greedy comparison ends at a llama.cpp top-2 margin below this
};

/// Every prompt's ids from tessel's tokenizer (BOS/EOS as the model says, special tokens parsed
/// where the prompt says) equal llama.cpp's.
void expect_tokenization_matches(const Model& model, const ReferenceData& ref);

struct TeacherForcedStats {
    double worst_nmse = 0.0;
    int flips = 0;      ///< positions where tessel's top-1 is not llama.cpp's
    int positions = 0;  ///< positions compared
};
/// Teacher-forced logits of every prompt (but those `skip` returns true for) with attention `fa`
/// in ubatches of n_ubatch against reference mode `mode` ("fa_off", "fa_on"): each full vector
/// within bounds.max_nmse, each top-1 flip a near tie for llama.cpp (bounds.flip_margin), at most
/// bounds.max_flip_rate of the positions flipped. `on_graph`, when given, sees each prompt's last
/// graph with a description ("<prompt> <mode> ub <n>").
TeacherForcedStats expect_teacher_forced_matches(
    const std::shared_ptr<const Model>& model, const ReferenceData& ref, const std::string& mode, FlashAttn fa,
    int64_t n_ubatch, const LogitBounds& bounds, const std::function<bool(const std::string&)>& skip = {},
    const std::function<void(const std::vector<NodeRun>&, const std::string&)>& on_graph = {});

struct GreedyStats {
    size_t identical = 0;      ///< leading tokens equal to llama.cpp's greedy ones
    bool ended_at_tie = false;  ///< the comparison ended at a near tie of llama.cpp (bounds.greedy_tie)
};
/// n_tokens greedy tokens of prompt `name` with attention `fa` follow llama.cpp's greedy tokens
/// (the sequence in the data) up to the first position where llama.cpp's top-2 margin in `mode`
/// is below bounds.greedy_tie; there tessel must pick a token of llama.cpp's top K within that
/// margin of its top one, or one that tessel itself puts less than the margin above llama.cpp's
/// top token, and the comparison ends. `on_graph` as above ("<prompt> <mode> greedy").
GreedyStats expect_greedy_matches(const std::shared_ptr<const Model>& model, const ReferenceData& ref,
                                  const std::string& name, const std::string& mode, FlashAttn fa, int n_tokens,
                                  const LogitBounds& bounds,
                                  const std::function<void(const std::vector<NodeRun>&, const std::string&)>& on_graph = {});

/// The key=value lines of a perplexity reference (tests/data/<model>/perplexity.txt, written by
/// scripts/reference/make_perplexity.sh; '#' lines are comments).
std::map<std::string, std::string> read_perplexity_reference(const std::filesystem::path& path);

/// tessel's perplexity of `model_path` on tests/data/gpl-3.txt at the reference's n_ctx and
/// n_batch scores as many chunks as llama.cpp and lands within max_rel_diff of its estimate;
/// the reference must name `model_sha256`.
void expect_perplexity_matches(const std::filesystem::path& model_path, const std::string& model_sha256,
                               const std::filesystem::path& reference, double max_rel_diff);

}  // namespace tessel::test
