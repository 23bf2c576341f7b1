// `tessel trace -f PROMPTS -o OUT.gguf [model flags]`: what a device computed, for numerical checks
// against a float64 emulation (scripts/reference/quant_aware.py; docs/trace.md gives the format).
// Each non-blank line of PROMPTS is one prompt (BOS added when the model adds one); each is decoded teacher-forced in a fresh cache,
// all tokens but the last as one ubatch (a prompt graph), then the last one alone (a decode graph),
// and its logits at every position are written. The two graphs of the first prompt are written node
// by node: every compute node's output and inputs as the node saw them, its op, op_params, device
// and kernel. The context keeps every intermediate (Context::keep_intermediates), so nothing is
// overwritten before it is read back.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "dev/commands.hpp"
#include "core/cpu_features.hpp"
#include "gguf/writer.hpp"
#include "graph/graph.hpp"
#include "run_options.hpp"
#include "runtime/context.hpp"
#include "runtime/engine_access.hpp"
#include "tessel/errors.hpp"

namespace tessel::cli::dev {
namespace {

/// t's elements in ne order as a contiguous tensor of t's type (block types: whole rows, which
/// must be contiguous within themselves), read through its storage owner's buffer.
std::vector<uint8_t> materialize(const Tensor& t) {
    const Tensor& root = t.view_src ? *t.view_src : t;
    std::vector<uint8_t> storage(root.n_bytes());
    root.buffer->get_tensor(root, storage.data(), 0, storage.size());
    const uint8_t* base = storage.data() + (t.view_src ? t.view_offset : 0);
    const DTypeInfo& info = dtype_info(t.type);
    const uint64_t row = t.row_bytes();
    if (info.block_size > 1 && t.nb[0] != info.block_bytes)
        throw Error(ErrorCode::Unsupported, "trace: " + describe(t) + " has strided blocks");
    std::vector<uint8_t> out(t.n_bytes());
    uint8_t* dst = out.data();
    for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) {
                const uint8_t* src = base + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
                if (info.block_size > 1 || t.nb[0] == info.block_bytes) {
                    std::memcpy(dst, src, row);
                    dst += row;
                } else {
                    for (int64_t i0 = 0; i0 < t.ne[0]; ++i0, dst += info.block_bytes)
                        std::memcpy(dst, src + i0 * t.nb[0], info.block_bytes);
                }
            }
    return out;
}

std::vector<int64_t> dims(const Tensor& t) { return {t.ne[0], t.ne[1], t.ne[2], t.ne[3]}; }

/// Writes every compute node of ctx's last graph under `prefix` (see the file comment).
void write_graph(gguf::Writer& w, const runtime::Context& ctx, const std::string& prefix) {
    const std::string key = "tessel.trace." + prefix + ".";
    uint32_t n = 0;
    for (const Scheduler::Split& sp : ctx.scheduler().splits())
        for (const Tensor* node : sp.nodes) {
            if (op_is_view(node->op)) continue;
            const std::string id = prefix + "." + std::to_string(n);
            const std::string k = key + std::to_string(n) + ".";
            w.set(k + "op", gguf::Value::string(op_name(node->op)));
            w.set(k + "name", gguf::Value::string(node->name));
            w.set(k + "device", gguf::Value::string(sp.backend->name()));
            w.set(k + "kernel", gguf::Value::string(sp.backend->kernel_name(*node)));
            w.set(k + "params", gguf::Value::i32s(std::vector<int32_t>(node->op_params.begin(), node->op_params.end())));
            std::vector<std::string> srcs;
            for (int i = 0; i < kMaxSrc; ++i) {
                const Tensor* s = node->src[i];
                if (!s) {
                    srcs.emplace_back();
                } else if ((s->flags & kFlagWeight) && !s->view_src) {
                    srcs.push_back("w:" + s->name);  // a model weight: read it from the model file
                } else {
                    const std::string name = id + ".src" + std::to_string(i);
                    const std::vector<uint8_t> bytes = materialize(*s);
                    w.add_tensor(name, s->type, dims(*s), bytes.data(), bytes.size());
                    srcs.push_back("t:" + name);
                }
            }
            while (!srcs.empty() && srcs.back().empty()) srcs.pop_back();
            w.set(k + "srcs", gguf::Value::strings(srcs));
            const std::vector<uint8_t> out = materialize(*node);
            w.add_tensor(id + ".out", node->type, dims(*node), out.data(), out.size());
            ++n;
        }
    w.set(key + "n_nodes", gguf::Value::u32(n));
}

}  // namespace

void add_trace_command(CLI::App& app) {
    struct Options {
        ModelOptions model;
        std::string prompts, out;
    };
    auto o = std::make_shared<Options>();
    o->model.n_ctx = 256;
    CLI::App* cmd = app.add_subcommand("trace", "Write what a device computed (nodes of a prompt and a decode graph, logits) for numerical checks");
    cmd->group(kDeveloperGroup);
    add_model_options(*cmd, o->model);
    cmd->add_option("-f,--file", o->prompts, "Prompts, one per line")->required();
    cmd->add_option("-o,--output", o->out, "Output GGUF file")->required();
    cmd->callback([o] {
        std::vector<std::string> prompts;
        {
            std::istringstream in(read_text_file(o->prompts));
            for (std::string line; std::getline(in, line);) {
                if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
                if (line.find_first_not_of(" \t") != std::string::npos) prompts.push_back(line);
            }
        }
        if (prompts.empty()) throw Error(ErrorCode::InvalidArgument, o->prompts + ": no prompt (one per line)");
        const LoadedModel loaded = load_model(o->model);
        const auto& model = loaded.model;
        Context ctx(model, context_params(o->model));
        loaded.report();
        runtime::Context& rc = runtime::EngineAccess::context(ctx);
        rc.keep_intermediates();
        const int64_t n_vocab = model->info().n_vocab;

        gguf::Writer w;
        w.set("tessel.trace.version", gguf::Value::u32(1));
        w.set("tessel.trace.device", gguf::Value::string(o->model.device));
        w.set("tessel.trace.cpu_tier", gguf::Value::string(tier_name(best_tier(usable_cpu_features()))));
        w.set("tessel.trace.flash_attn", gguf::Value::boolean(ctx.flash_attn()));
        w.set("tessel.trace.n_prompts", gguf::Value::u32(static_cast<uint32_t>(prompts.size())));
        for (size_t p = 0; p < prompts.size(); ++p) {
            const std::vector<int32_t> tokens = model->tokenize(prompts[p], true, false);
            if (tokens.size() < 2) throw Error(ErrorCode::InvalidArgument, o->prompts + ": prompt " + std::to_string(p + 1) + " has fewer than 2 tokens");
            const auto n = static_cast<int64_t>(tokens.size());
            if (n > ctx.n_ctx() || n - 1 > o->model.n_ubatch)
                throw Error(ErrorCode::InvalidArgument, o->prompts + ": prompt " + std::to_string(p + 1) + " has " + std::to_string(n) +
                                                            " tokens; -c " + std::to_string(ctx.n_ctx()) + " and -ub " +
                                                            std::to_string(o->model.n_ubatch) + " take at most " +
                                                            std::to_string(std::min(ctx.n_ctx(), o->model.n_ubatch + 1)));
            ctx.clear();
            std::vector<float> logits;
            auto decode = [&](size_t begin, size_t end) {
                std::vector<BatchToken> batch;
                for (size_t i = begin; i < end; ++i) batch.push_back({tokens[i], static_cast<int32_t>(i), 0, true});
                ctx.decode(batch);
                for (size_t i = 0; i < batch.size(); ++i) logits.insert(logits.end(), ctx.logits(i).begin(), ctx.logits(i).end());
            };
            decode(0, tokens.size() - 1);
            if (p == 0) write_graph(w, rc, "prompt");
            decode(tokens.size() - 1, tokens.size());
            if (p == 0) write_graph(w, rc, "decode");
            const std::string id = "p" + std::to_string(p);
            w.add_tensor(id + ".tokens", DType::I32, {static_cast<int64_t>(tokens.size())}, tokens.data(), tokens.size() * sizeof(int32_t));
            w.add_tensor(id + ".logits", DType::F32, {n_vocab, static_cast<int64_t>(tokens.size())}, logits.data(),
                         logits.size() * sizeof(float));
        }
        w.write_file(o->out);
        std::fprintf(stderr, "tessel: wrote %s (%zu prompt%s)\n", o->out.c_str(), prompts.size(), prompts.size() == 1 ? "" : "s");
    });
}

}  // namespace tessel::cli::dev
