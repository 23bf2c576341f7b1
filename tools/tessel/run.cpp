// `tessel run` (one prompt, streamed continuation) and `tessel chat` (interactive, the KV cache
// kept between turns).
#include <cstdio>
#include <iostream>
#include <limits>

#include "chat_options.hpp"
#include "commands.hpp"
#include "common/generate.hpp"
#include "run_options.hpp"
#include "tessel/chat.hpp"
#include "tessel/engine.hpp"

namespace tessel::cli {
namespace {

struct RunOptions {
    ModelOptions model;
    SamplerParams sampling;
    std::string prompt, prompt_file;
    int64_t n_predict = -1;
    bool chat = false;
    ChatTemplateFlags chat_template;
    std::string system;
};

/// Streams generated tokens to stdout as whole UTF-8 characters.
class Printer {
public:
    explicit Printer(const std::shared_ptr<const Model>& m) : detok_(m) {}
    void operator()(int32_t tok) { write(detok_.push(tok)); }
    void finish() { write(detok_.flush()); }

private:
    void write(const std::string& s) {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
    }
    Detokenizer detok_;
};

void report(const tools::GenerateStats& st, const Context& ctx) {
    if (st.stop == tools::StopReason::ContextFull)
        std::fprintf(stderr, "\ntessel: the context is full (%lld tokens): generation stopped (raise -c)\n", static_cast<long long>(ctx.n_ctx()));
    std::fprintf(stderr, "\ntessel: prompt %lld tokens, %.2f tokens/s; generated %lld tokens, %.2f tokens/s\n",
                 static_cast<long long>(st.n_prompt), st.t_prompt > 0 ? st.n_prompt / st.t_prompt : 0.0,
                 static_cast<long long>(st.n_generated), st.t_generate > 0 ? st.n_generated / st.t_generate : 0.0);
    // where the nodes of the last graph ran, e.g. "575 nodes on NPU0" or "540 nodes on NPU0, 35 on CPU"
    std::string where;
    for (const auto& [dev, n] : ctx.graph_nodes_per_device())
        where += (where.empty() ? std::to_string(n) + " nodes on " : ", " + std::to_string(n) + " on ") + dev;
    if (!where.empty()) std::fprintf(stderr, "tessel: the last graph ran %s\n", where.c_str());
}

void run(const RunOptions& o) {
    const std::string text = o.prompt_file.empty() ? o.prompt : read_text_file(o.prompt_file);
    // An argument error (exit 2), found before the model loads.
    if (text.empty()) throw CLI::ValidationError(o.prompt_file.empty() ? "-p: the prompt is empty" : "-f: the file '" + o.prompt_file + "' is empty");
    const LoadedModel loaded = load_model(o.model);
    const auto& model = loaded.model;
    std::vector<int32_t> tokens;
    if (o.chat) {
        const std::string tmpl = chat_template_for(*model, o.chat_template);
        std::vector<ChatMessage> msgs;
        if (!o.system.empty()) msgs.push_back({"system", o.system});
        msgs.push_back({"user", text});
        tokens = model->tokenize(apply_chat_template(tmpl, msgs, model->chat_template_options()), true, true);
    } else {
        tokens = model->tokenize(text, true, false);
    }
    Context ctx(model, context_params(o.model));
    tools::require_prompt_fits(ctx, 0, tokens.size());
    Sampler sampler(o.sampling, static_cast<int32_t>(model->info().n_vocab));
    loaded.report();
    tools::GenerateParams gp;
    gp.n_predict = o.n_predict;
    gp.n_batch = o.model.n_batch;
    Printer print(model);
    int32_t n_past = 0;
    const auto st = tools::generate(ctx, *model, sampler, tokens, n_past, gp, [&](int32_t t) { print(t); });
    print.finish();
    std::fputc('\n', stdout);
    report(st, ctx);
}

/// Interactive chat: each turn re-renders the conversation, keeps the cached prefix that still
/// matches its tokens and decodes the rest.
void chat(const RunOptions& o) {
    const LoadedModel loaded = load_model(o.model);
    const auto& model = loaded.model;
    const std::string tmpl = chat_template_for(*model, o.chat_template);
    const std::string format = chat_template_format(tmpl);  // an unknown template fails here, before the chat
    Context ctx(model, context_params(o.model));
    Sampler sampler(o.sampling, static_cast<int32_t>(model->info().n_vocab));
    loaded.report();
    std::vector<ChatMessage> msgs;
    if (!o.system.empty()) msgs.push_back({"system", o.system});
    std::vector<int32_t> cached;  // tokens in the cache, in order
    std::fprintf(stderr, "tessel chat: %s format; an empty line or end of input ends the chat\n", format.c_str());
    std::string line;
    while (std::fputs("> ", stderr), std::getline(std::cin, line) && !line.empty()) {
        msgs.push_back({"user", line});
        const std::vector<int32_t> all = model->tokenize(apply_chat_template(tmpl, msgs, model->chat_template_options()), true, true);
        if (static_cast<int64_t>(all.size()) >= ctx.n_ctx()) {  // no room for it and a reply: refused, the chat goes on
            msgs.pop_back();
            std::fprintf(stderr, "tessel chat: with this message the conversation is %zu tokens, the context holds %lld: "
                                 "it was not sent (write a shorter one, or raise -c)\n",
                         all.size(), static_cast<long long>(ctx.n_ctx()));
            continue;
        }
        size_t keep = 0;
        while (keep < cached.size() && keep < all.size() && cached[keep] == all[keep]) ++keep;
        if (keep == all.size()) --keep;  // decode at least one token to get logits
        ctx.seq_rm(0, static_cast<int32_t>(keep), -1);
        cached.resize(keep);
        int32_t n_past = static_cast<int32_t>(keep);
        std::string reply;
        Printer print(model);
        tools::GenerateParams gp;
        gp.n_predict = o.n_predict;
        gp.n_batch = o.model.n_batch;
        std::vector<int32_t> generated;
        const std::vector<int32_t> fresh(all.begin() + static_cast<std::ptrdiff_t>(keep), all.end());
        const auto st = tools::generate(ctx, *model, sampler, fresh, n_past, gp, [&](int32_t t) {
            print(t);
            generated.push_back(t);
            reply += model->token_to_piece(t);
        });
        print.finish();
        std::fputc('\n', stdout);
        cached.insert(cached.end(), fresh.begin(), fresh.end());
        cached.insert(cached.end(), generated.begin(), generated.begin() + (n_past - static_cast<int32_t>(cached.size())));
        msgs.push_back({"assistant", reply});
        report(st, ctx);
        if (st.stop == tools::StopReason::ContextFull) {
            std::fprintf(stderr, "tessel chat: the context is full, the chat ends (raise -c for longer chats)\n");
            break;
        }
    }
}

}  // namespace

void add_run_commands(CLI::App& app) {
    for (const bool interactive : {false, true}) {
        auto o = std::make_shared<RunOptions>();
        CLI::App* cmd = interactive ? app.add_subcommand("chat", "Chat interactively with a model (stdin lines are user turns)")
                                    : app.add_subcommand("run", "Generate text from a prompt, streamed to stdout");
        add_model_options(*cmd, o->model);
        add_sampling_options(*cmd, o->sampling);
        cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate (-1: until end of generation or context)")
            ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
        const std::vector<CLI::Option*> tmpl = add_chat_template_options(*cmd, o->chat_template);
        CLI::Option* sys = cmd->add_option("--system-prompt", o->system, "System message for chat formatting (also -sys)");
        if (!interactive) {
            CLI::Option* p = cmd->add_option("-p,--prompt", o->prompt, "Prompt text");
            CLI::Option* f = cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file")->excludes(p);
            p->excludes(f);
            CLI::Option* chat = cmd->add_flag("--chat", o->chat, "Format the prompt as a user turn of the model's chat template");
            for (CLI::Option* t : tmpl) t->needs(chat);
            sys->needs(chat);
            cmd->callback([o, p, f] {
                if (p->count() == 0 && f->count() == 0) throw CLI::RequiredError("run: -p PROMPT or -f FILE");
                run(*o);
            });
        } else {
            cmd->callback([o] { chat(*o); });
        }
    }
}

}  // namespace tessel::cli
