// `tessel perplexity -m FILE -f TEXT [-c 512] [-b N]`: perplexity as llama-perplexity reports it.
#include <cstdio>

#include "commands.hpp"
#include "run_options.hpp"
#include "common/perplexity.hpp"

namespace tessel::cli {

void add_perplexity_command(CLI::App& app) {
    struct Options {
        ModelOptions model;
        std::string file;
    };
    auto o = std::make_shared<Options>();
    o->model.n_ctx = 512;
    CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a text file (chunks of -c tokens, second halves scored)");
    add_model_options(*cmd, o->model);
    cmd->add_option("-f,--file", o->file, "Text file")->required();
    cmd->callback([o] {
        const std::string text = read_text_file(o->file);
        if (o->model.n_ctx == 0) throw Error(ErrorCode::InvalidArgument, "perplexity needs -c > 0");
        const LoadedModel loaded = load_model(o->model);
        const auto& model = loaded.model;
        const std::vector<int32_t> tokens = model->tokenize(tools::perplexity_text(text), true, false);
        Context ctx(model, context_params(o->model));
        loaded.report();
        std::fprintf(stderr, "tessel: %zu tokens, %lld chunks of %lld\n", tokens.size(),
                     static_cast<long long>(tokens.size() / ctx.n_ctx()), static_cast<long long>(ctx.n_ctx()));
        const auto r = tools::perplexity(ctx, tokens, model->adds_bos() ? model->bos() : -1, o->model.n_batch,
                                         [](int64_t c, double ppl) { std::fprintf(stderr, "[%lld]%.4f,", static_cast<long long>(c + 1), ppl); });
        std::fprintf(stderr, "\n");
        std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.error);
    });
}

}  // namespace tessel::cli
