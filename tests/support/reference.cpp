#include "support/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "common/generate.hpp"
#include "common/perplexity.hpp"
#include "core/fp16.hpp"
#include "runtime/context.hpp"
#include "runtime/engine_access.hpp"
#include "tessel/sampling.hpp"

namespace tessel::test {

namespace {

const std::string kPrefix = "tessel.reference.";

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

ReferenceData::ReferenceData(const std::filesystem::path& file) : file_(gguf::File::open(file.string())) {}

const gguf::Value& ReferenceData::meta(const std::string& key) const {
    const gguf::Value* v = file_.find(kPrefix + key);
    if (!v) throw std::runtime_error("reference data lacks " + kPrefix + key);
    return *v;
}

std::vector<std::string> ReferenceData::prompts() const {
    std::vector<std::string> out;
    const gguf::Value& names = meta("prompts");
    for (size_t i = 0; i < names.array_size(); ++i) out.emplace_back(names.string_at(i));
    return out;
}

std::string ReferenceData::str(const std::string& key) const { return meta(key).as_string(); }
uint64_t ReferenceData::u(const std::string& key) const { return meta(key).as_u64(); }
bool ReferenceData::flag(const std::string& key) const { return meta(key).as_bool(); }

std::vector<NodeRun> last_graph_runs(Context& ctx) {
    std::vector<NodeRun> out;
    for (const Scheduler::Split& sp : runtime::EngineAccess::context(ctx).scheduler().splits())
        for (const Tensor* n : sp.nodes)
            if (!op_is_view(n->op)) out.push_back({std::string(op_name(n->op)) + " " + n->name, sp.backend->name(), sp.backend->kernel_name(*n)});
    return out;
}

std::vector<std::vector<float>> teacher_forced_logits(const std::shared_ptr<const Model>& model,
                                                      const std::vector<int32_t>& tokens, FlashAttn fa,
                                                      int64_t n_ubatch, std::vector<NodeRun>* last_graph) {
    ContextParams p;
    p.n_ctx = std::max<int64_t>(1024, static_cast<int64_t>(tokens.size()));
    p.n_ubatch = n_ubatch;
    p.flash_attn = fa;
    p.n_threads = 1;
    Context ctx(model, p);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < tokens.size(); ++i) batch.push_back({tokens[i], static_cast<int32_t>(i), 0, true});
    ctx.decode(batch);
    if (last_graph) *last_graph = last_graph_runs(ctx);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < tokens.size(); ++i) out.emplace_back(ctx.logits(i).begin(), ctx.logits(i).end());
    return out;
}

void expect_tokenization_matches(const Model& model, const ReferenceData& ref) {
    for (const std::string& name : ref.prompts()) {
        const std::string key = "prompt." + name;
        const auto want = ref.tensor<int32_t>(name + ".tokens");
        const size_t n_prompt = ref.u(key + ".n_prompt_tokens");
        const auto got = model.tokenize(ref.str(key + ".text"), true, ref.flag(key + ".special"));
        EXPECT_EQ(got, std::vector<int32_t>(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(n_prompt))) << name;
    }
}

TeacherForcedStats expect_teacher_forced_matches(
    const std::shared_ptr<const Model>& model, const ReferenceData& ref, const std::string& mode, FlashAttn fa,
    int64_t n_ubatch, const LogitBounds& bounds, const std::function<bool(const std::string&)>& skip,
    const std::function<void(const std::vector<NodeRun>&, const std::string&)>& on_graph) {
    const int64_t V = model->info().n_vocab;
    const size_t K = ref.u("top_k");
    TeacherForcedStats s;
    for (const std::string& name : ref.prompts()) {
        if (skip && skip(name)) continue;
        const std::string m = name + "." + mode, what = name + " " + mode + " ub " + std::to_string(n_ubatch);
        const auto tokens = ref.tensor<int32_t>(name + ".tokens");
        const auto top_ids = ref.tensor<int32_t>(m + ".top_ids");
        const auto top_logits = ref.tensor<float>(m + ".top_logits");
        const auto full_pos = ref.tensor<int32_t>(m + ".full_pos");
        const auto full = ref.tensor<uint16_t>(m + ".full_logits");
        std::vector<NodeRun> runs;
        const auto got = teacher_forced_logits(model, tokens, fa, n_ubatch, &runs);
        if (on_graph) on_graph(runs, what);
        for (size_t t = 0; t < tokens.size(); ++t, ++s.positions) {
            const auto& l = got[t];
            const int32_t top1 = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
            if (top1 == top_ids[t * K]) continue;
            ++s.flips;
            // llama.cpp's top-1 logit minus its logit of tessel's pick; when the pick is not among
            // llama.cpp's top K (a flat distribution over a large vocabulary), the same gap seen from
            // tessel's side: its top-1 logit minus its logit of llama.cpp's pick.
            float gap = l[static_cast<size_t>(top1)] - l[static_cast<size_t>(top_ids[t * K])];
            const char* seen = "tessel's";
            for (size_t k = 1; k < K; ++k)
                if (top_ids[t * K + k] == top1) gap = top_logits[t * K] - top_logits[t * K + k], seen = "llama.cpp's";
            EXPECT_LT(gap, bounds.flip_margin) << what << " position " << t << ": top-1 " << top1 << ", llama.cpp "
                                               << top_ids[t * K] << " (gap " << gap << " in " << seen << " logits)";
        }
        for (size_t i = 0; i < full_pos.size(); ++i) {
            std::vector<float> want(static_cast<size_t>(V));
            for (int64_t v = 0; v < V; ++v) want[v] = fp16_to_fp32(full[i * V + v]);
            const double e = nmse(got[static_cast<size_t>(full_pos[i])], want.data());
            s.worst_nmse = std::max(s.worst_nmse, e);
            EXPECT_LE(e, bounds.max_nmse) << what << " position " << full_pos[i];
        }
    }
    EXPECT_LE(s.flips, bounds.max_flip_rate * s.positions) << mode << " ub " << n_ubatch;
    return s;
}

GreedyStats expect_greedy_matches(const std::shared_ptr<const Model>& model, const ReferenceData& ref,
                                  const std::string& name, const std::string& mode, FlashAttn fa, int n_tokens,
                                  const LogitBounds& bounds,
                                  const std::function<void(const std::vector<NodeRun>&, const std::string&)>& on_graph) {
    const size_t K = ref.u("top_k");
    const auto tokens = ref.tensor<int32_t>(name + ".tokens");
    const auto top_ids = ref.tensor<int32_t>(name + "." + mode + ".top_ids");
    const auto top_logits = ref.tensor<float>(name + "." + mode + ".top_logits");
    const size_t n_prompt = ref.u("prompt." + name + ".n_prompt_tokens");
    ContextParams p;
    p.n_ctx = std::max<int64_t>(1024, static_cast<int64_t>(tokens.size()));
    p.n_threads = 1;
    p.flash_attn = fa;
    Context ctx(model, p);
    SamplerParams sp;
    sp.temp = 0.0f;
    Sampler sampler(sp, static_cast<int32_t>(model->info().n_vocab));
    tools::GenerateParams gp;
    gp.n_predict = n_tokens;
    std::vector<int32_t> got;
    // tessel's own gap, per generated token, between its pick and llama.cpp's top token at that
    // step (on_token runs while the context still holds the logits the token was sampled from).
    std::vector<float> own_gap;
    int32_t n_past = 0;
    tools::generate(ctx, *model, sampler, std::span(tokens.data(), n_prompt), n_past, gp, [&](int32_t tok) {
        const size_t t = n_prompt - 1 + got.size();
        const auto logits = ctx.logits(0);
        own_gap.push_back(t * K < top_ids.size() ? logits[static_cast<size_t>(tok)] - logits[static_cast<size_t>(top_ids[t * K])] : 0.0f);
        got.push_back(tok);
    });
    GreedyStats s;
    for (; s.identical < got.size(); ++s.identical) {
        const size_t i = s.identical, t = n_prompt - 1 + i;  // logits at t predict generated token i
        const float margin = top_logits[t * K] - top_logits[t * K + 1];
        if (margin < bounds.greedy_tie) {
            // A near tie may hold more than two tokens, and over a flat distribution (gemma3's 262k
            // vocabulary) tessel's pick may lie outside llama.cpp's top K: then it is judged by
            // tessel's own gap to llama.cpp's top token, which must be a near tie as well.
            size_t rank = 0;
            while (rank < K && top_ids[t * K + rank] != got[i]) ++rank;
            const bool tied_in_llama = rank < K && top_logits[t * K] - top_logits[t * K + rank] < bounds.greedy_tie;
            EXPECT_TRUE(tied_in_llama || own_gap[i] < bounds.greedy_tie)
                << name << " " << mode << " token " << i << ": " << got[i] << " is not among llama.cpp's tied top tokens"
                << " (llama.cpp rank " << rank << " of " << K << ") and tessel puts it " << own_gap[i]
                << " above llama.cpp's top token";
            s.ended_at_tie = true;
            break;
        }
        if (got[i] != tokens[t + 1]) {
            ADD_FAILURE() << name << " " << mode << " token " << i << ": " << got[i] << ", llama.cpp " << tokens[t + 1]
                          << " (margin " << margin << ")";
            break;
        }
    }
    if (on_graph) on_graph(last_graph_runs(ctx), name + " " + mode + " greedy");
    return s;
}

std::map<std::string, std::string> read_perplexity_reference(const std::filesystem::path& path) {
    std::map<std::string, std::string> kv;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) {
        const size_t eq = line.find('=');
        if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
        kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return kv;
}

void expect_perplexity_matches(const std::filesystem::path& model_path, const std::string& model_sha256,
                               const std::filesystem::path& reference, double max_rel_diff) {
    auto ref = read_perplexity_reference(reference);
    ASSERT_EQ(ref["model_sha256"], model_sha256) << "reference made with another model";
    const int64_t n_ctx = std::stoll(ref.at("n_ctx"));
    const int64_t n_batch = std::stoll(ref.at("n_batch"));
    const double want = std::stod(ref.at("ppl"));

    const auto model = Model::load(model_path.string());
    const std::string contents = read_file(data_dir() / "gpl-3.txt");
    const std::vector<int32_t> tokens = model->tokenize(tools::perplexity_text(contents), true, false);
    ContextParams params;
    params.n_ctx = n_ctx;
    Context ctx(model, params);
    ASSERT_EQ(ctx.n_ctx(), n_ctx);
    const auto got = tools::perplexity(ctx, tokens, model->adds_bos() ? model->bos() : -1, n_batch);

    const double rel = std::abs(got.ppl - want) / want;
    std::printf("perplexity of %s: tessel %.4f +/- %.5f, llama.cpp %s +/- %s (%s), relative difference %.3f %%\n",
                model_path.filename().c_str(), got.ppl, got.error, ref.at("ppl").c_str(), ref.at("ppl_error").c_str(),
                ref.at("command").c_str(), 100.0 * rel);
    EXPECT_EQ(got.chunks, std::stoll(ref.at("chunks")));
    EXPECT_LE(rel, max_rel_diff) << "tessel " << got.ppl << " vs llama.cpp " << want;
}

}  // namespace tessel::test
