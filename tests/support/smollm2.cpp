#include "support/smollm2.hpp"

#include "runtime/context.hpp"
#include "runtime/engine_access.hpp"
#include "common/model_fetch.hpp"

namespace tessel::test {

std::filesystem::path smollm2_path() {
    return tools::model_cache_dir() / tools::default_model_source().file_name;
}

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
    p.n_ctx = 1024;
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

}  // namespace tessel::test
