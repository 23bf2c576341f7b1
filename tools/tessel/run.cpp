// `tessel run` (one prompt, streamed continuation) and `tessel chat` (interactive, the KV cache
// kept between turns).
#include <cstdio>
#include <iostream>
#include <limits>
#include <set>

#include "chat_options.hpp"
#include "commands.hpp"
#include "common/escapes.hpp"
#include "common/generate.hpp"
#include "run_options.hpp"
#include "tessel/chat.hpp"
#include "tessel/engine.hpp"

namespace tessel::cli {
namespace {

constexpr const char* kBuiltinFormats[] = {"chatml", "llama3", "gemma", "phi3"};

/// How `run` sends its prompt: as a user turn of the chat template, or as raw text.
enum class ChatMode { Auto, On, Off };

struct RunOptions {
    ModelOptions model;
    SamplerParams sampling;
    std::string prompt, prompt_file;
    int64_t n_predict = -1;
    ChatMode chat = ChatMode::Auto;
    ChatTemplateFlags chat_template;
    std::string system;
    bool escape = true;          ///< -e/--escape (default) vs --no-escape
    bool parse_special = true;   ///< special-token text in a raw prompt becomes those tokens
    bool print_special = false;  ///< -sp: print control tokens' text
    bool ignore_eos = false;     ///< --ignore-eos: end-of-generation tokens banned by a logit bias
    std::vector<std::string> reverse_prompts;
    std::string in_prefix, in_suffix;  ///< chat: around each user line
};

/// True when the GGUF carries tokenizer.chat_template (Model::chat_template() returns a built-in
/// format's name, or "", for a file without one).
bool has_own_chat_template(const Model& m) {
    const std::string t = m.chat_template();
    if (t.empty()) return false;
    for (const char* known : kBuiltinFormats)
        if (t == known) return false;
    return true;
}

/// True when `prompt`, read with special-token parsing, uses a control token that the chat template
/// itself writes (e.g. <|im_start|>): the user formatted the conversation already.
bool holds_template_markup(const Model& m, const std::string& tmpl, const std::string& prompt) {
    std::string probe;
    try {
        probe = apply_chat_template(tmpl, std::vector<ChatMessage>{{"user", "x"}}, m.chat_template_options());
    } catch (const Error&) {
        return false;  // a template tessel cannot render: nothing to compare with
    }
    const auto is_control = [&](int32_t t) { return m.token_to_piece(t, false).empty() && !m.token_to_piece(t, true).empty(); };
    std::set<int32_t> markup;
    for (int32_t t : m.tokenize(probe, false, true))
        if (is_control(t)) markup.insert(t);
    for (int32_t t : m.tokenize(prompt, false, true))
        if (markup.count(t)) return true;
    return false;
}

/// Streams generated tokens to stdout as whole UTF-8 characters.
class Printer {
public:
    Printer(const std::shared_ptr<const Model>& m, bool special) : detok_(m, special) {}
    void operator()(int32_t tok) { write(detok_.push(tok)); }
    void finish() { write(detok_.flush()); }

private:
    void write(const std::string& s) {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
    }
    Detokenizer detok_;
};

void report(const tools::GenerateStats& st, const Context& ctx, const std::string& mode, const ModelOptions& o) {
    if (mpi_other_rank()) return;
    if (st.stop == tools::StopReason::ContextFull)
        std::fprintf(stderr, "\ntessel: the context is full (%lld tokens): generation stopped (raise -c)\n", static_cast<long long>(ctx.n_ctx()));
    if (st.stop == tools::StopReason::EndOfGeneration && st.n_generated == 0)
        std::fprintf(stderr, "\ntessel: the model ended its output at its first token (end of generation); the prompt was sent as %s\n",
                     mode.c_str());
    std::fprintf(stderr, "\ntessel: prompt %lld tokens, %.2f tokens/s; generated %lld tokens, %.2f tokens/s\n",
                 static_cast<long long>(st.n_prompt), st.t_prompt > 0 ? st.n_prompt / st.t_prompt : 0.0,
                 static_cast<long long>(st.n_generated), st.t_generate > 0 ? st.n_generated / st.t_generate : 0.0);
    // where the nodes of the last graph ran, e.g. "575 nodes on NPU0" or "540 nodes on NPU0, 35 on CPU"
    std::string where;
    for (const auto& [dev, n] : ctx.graph_nodes_per_device())
        where += (where.empty() ? std::to_string(n) + " nodes on " : ", " + std::to_string(n) + " on ") + dev;
    if (!where.empty() && mpi_ranks() > 1 && o.split_mode == "row" && where.find("NPU") != std::string::npos)
        where += " (the NPU's weight matmuls split by rows across " + std::to_string(mpi_ranks()) + " MPI ranks)";
    if (!where.empty()) std::fprintf(stderr, "tessel: the last graph ran %s\n", where.c_str());
}

/// The sampler of a command; --ignore-eos adds llama.cpp's bias of -inf on every end-of-generation token.
Sampler sampler_for(const RunOptions& o, const Model& model) {
    SamplerParams params = o.sampling;
    if (o.ignore_eos)
        for (int32_t t = 0; t < static_cast<int32_t>(model.info().n_vocab); ++t)
            if (model.is_eog(t)) params.logit_bias.push_back({t, -std::numeric_limits<float>::infinity()});
    return make_sampler(params, model);
}

tools::GenerateParams generate_params(const RunOptions& o) {
    tools::GenerateParams gp;
    gp.n_predict = o.n_predict;
    gp.n_batch = o.model.n_batch;
    gp.stop_strings = o.reverse_prompts;
    return gp;
}

void run(const RunOptions& o) {
    const std::string text = o.prompt_file.empty() ? o.prompt : read_text_file(o.prompt_file);
    // An argument error (exit 2), found before the model loads.
    if (text.empty()) throw CLI::ValidationError(o.prompt_file.empty() ? "-p: the prompt is empty" : "-f: the file '" + o.prompt_file + "' is empty");
    const LoadedModel loaded = load_model(o.model);
    const auto& model = loaded.model;
    std::vector<int32_t> tokens;
    std::string mode;
    bool chat = o.chat == ChatMode::On;
    if (o.chat == ChatMode::Auto) {
        // llama.cpp's llama-cli converses when the model has a template, Ollama always does; a prompt
        // that already holds the template's markup is the user's own formatting and goes in as is.
        const bool implied = !o.system.empty() || !o.chat_template.name.empty() || !o.chat_template.file.empty();
        chat = implied || has_own_chat_template(*model);
        if (chat && !implied) {
            try {
                chat_template_format(model->chat_template());
                if (holds_template_markup(*model, model->chat_template(), text)) {
                    chat = false;
                    std::fprintf(stderr, "tessel: the prompt holds the chat template's special tokens: it is sent as written (raw completion)\n");
                }
            } catch (const Error& e) {
                chat = false;
                std::fprintf(stderr, "tessel: warning: the model's chat template cannot be used (%s): the prompt is sent as raw text\n", e.what());
            }
        }
    }
    if (chat) {
        const std::string tmpl = chat_template_for(*model, o.chat_template);
        std::vector<ChatMessage> msgs;
        if (!o.system.empty()) msgs.push_back({"system", o.system});
        msgs.push_back({"user", text});
        tokens = model->tokenize(apply_chat_template(tmpl, msgs, model->chat_template_options()), true, true);
        mode = "a user turn of the " + chat_template_format(tmpl) + " chat template (--no-chat sends it as raw text)";
    } else {
        tokens = model->tokenize(text, true, o.parse_special);
        mode = "raw text (--chat sends it as a user turn of the chat template)";
    }
    Context ctx(model, context_params(o.model));
    tools::require_prompt_fits(ctx, 0, tokens.size());
    Sampler sampler = sampler_for(o, *model);
    loaded.report();
    Printer print(model, o.print_special);
    int32_t n_past = 0;
    const auto st = tools::generate(ctx, *model, sampler, tokens, n_past, generate_params(o), [&](int32_t t) { print(t); });
    print.finish();
    std::fputc('\n', stdout);
    report(st, ctx, mode, o.model);
}

/// Interactive chat: each turn re-renders the conversation, keeps the cached prefix that still
/// matches its tokens and decodes the rest.
void chat(const RunOptions& o) {
    const LoadedModel loaded = load_model(o.model);
    const auto& model = loaded.model;
    const std::string tmpl = chat_template_for(*model, o.chat_template);
    const std::string format = chat_template_format(tmpl);  // an unknown template fails here, before the chat
    Context ctx(model, context_params(o.model));
    Sampler sampler = sampler_for(o, *model);
    loaded.report();
    std::vector<ChatMessage> msgs;
    if (!o.system.empty()) msgs.push_back({"system", o.system});
    std::vector<int32_t> cached;  // tokens in the cache, in order
    std::fprintf(stderr, "tessel chat: %s format; an empty line or end of input ends the chat\n", format.c_str());
    const std::string mode = "a user turn of the " + format + " chat template";
    std::string line;
    while (std::fputs("> ", stderr), std::getline(std::cin, line) && !line.empty()) {
        msgs.push_back({"user", o.in_prefix + line + o.in_suffix});
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
        Printer print(model, o.print_special);
        std::vector<int32_t> generated;
        const std::vector<int32_t> fresh(all.begin() + static_cast<std::ptrdiff_t>(keep), all.end());
        sampler.reset_grammar();  // each reply matches the grammar on its own
        const auto st = tools::generate(ctx, *model, sampler, fresh, n_past, generate_params(o), [&](int32_t t) {
            print(t);
            generated.push_back(t);
            reply += model->token_to_piece(t);
        });
        print.finish();
        std::fputc('\n', stdout);
        cached.insert(cached.end(), fresh.begin(), fresh.end());
        cached.insert(cached.end(), generated.begin(), generated.begin() + (n_past - static_cast<int32_t>(cached.size())));
        msgs.push_back({"assistant", reply});
        report(st, ctx, mode, o.model);
        if (st.stop == tools::StopReason::ContextFull) {
            std::fprintf(stderr, "tessel chat: the context is full, the chat ends (raise -c for longer chats)\n");
            break;
        }
    }
}

/// Decodes -e escapes in the texts given on the command line (not in -f files, which are taken as
/// written) once the flags are parsed.
void process_escapes(RunOptions& o) {
    if (!o.escape) return;
    for (std::string* s : {&o.prompt, &o.system, &o.in_prefix, &o.in_suffix}) *s = tools::process_escapes(*s);
    for (std::string& r : o.reverse_prompts) r = tools::process_escapes(r);
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
        CLI::Option* sys = cmd->add_option("--system-prompt", o->system, "System message of the conversation (also -sys)");
        cmd->add_flag("--ignore-eos", o->ignore_eos, "Never end at an end-of-generation token (it is banned: a logit bias of -inf)");
        cmd->add_flag("--special", o->print_special, "Print special tokens' text, e.g. <|im_end|> (also -sp)");
        cmd->add_option("-r,--reverse-prompt", o->reverse_prompts, "Stop generating when the output ends with this text (repeatable)")
            ->allow_extra_args(false);
        CLI::Option* esc = cmd->add_flag("-e,--escape", o->escape, "Decode \\n \\t \\\" \\\\ \\xHH ... in -p, -sys, -r (default: on)");
        cmd->add_flag_callback("--no-escape", [o] { o->escape = false; }, "Take -p, -sys, -r as written")->excludes(esc);
        if (!interactive) {
            CLI::Option* p = cmd->add_option("-p,--prompt", o->prompt, "Prompt text");
            CLI::Option* f = cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file (taken as written)")->excludes(p);
            p->excludes(f);
            CLI::Option* on = cmd->add_flag_callback("--chat,--conversation", [o] { o->chat = ChatMode::On; },
                                                     "Send the prompt as a user turn of the chat template (the default when the model has "
                                                     "one and the prompt holds none of its special tokens; also -cnv)");
            CLI::Option* off = cmd->add_flag_callback("--no-chat,--no-conversation", [o] { o->chat = ChatMode::Off; },
                                                      "Send the prompt as raw text for the model to continue (also -no-cnv)");
            on->excludes(off);
            off->excludes(on)->excludes(sys);
            for (CLI::Option* t : tmpl) off->excludes(t);
            cmd->add_flag_callback("--no-parse-special", [o] { o->parse_special = false; },
                                   "Read special-token text in a raw prompt (e.g. <|im_start|>) as plain text");
            cmd->callback([o, p, f] {
                if (p->count() == 0 && f->count() == 0) throw CLI::RequiredError("run: -p PROMPT or -f FILE");
                process_escapes(*o);
                check_mpi_ranks(o->model, "tessel run", false, &o->sampling);
                run(*o);
            });
        } else {
            cmd->add_option("--in-prefix", o->in_prefix, "Text put before each user line");
            cmd->add_option("--in-suffix", o->in_suffix, "Text put after each user line");
            cmd->callback([o] {
                process_escapes(*o);
                check_mpi_ranks(o->model, "tessel chat", true);
                chat(*o);
            });
        }
    }
}

}  // namespace tessel::cli
