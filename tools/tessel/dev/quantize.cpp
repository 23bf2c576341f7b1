// `tessel quantize [--pure] [--allow-requantize] [-t N] IN.gguf OUT.gguf TYPE`: a copy of a model
// with its weights converted as llama-quantize would (model/quant_plan.hpp, model/quantize.hpp).
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "dev/commands.hpp"
#include "cpu/topology.hpp"
#include "model/quantize.hpp"
#include "tessel/errors.hpp"
#include "text.hpp"

namespace tessel::cli::dev {
namespace {

std::string type_list() {
    std::string s;
    for (const model::QuantTarget& t : model::quant_targets()) {
        s += std::string(s.empty() ? "" : ", ") + t.name;
        if (std::string(t.name) != t.ftype) s += std::string(" (= ") + t.ftype + ")";
    }
    return s;
}

double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

void add_quantize_command(CLI::App& app) {
    struct Options {
        std::string in, out, type;
        bool pure = false;
        bool allow_requantize = false;
        int threads = 0;
    };
    auto o = std::make_shared<Options>();
    o->threads = cpu::default_thread_count();
    CLI::App* cmd = app.add_subcommand("quantize", "Write a copy of a GGUF model with its weights quantized to TYPE "
                                                   "(llama-quantize's type rules)");
    cmd->group(kDeveloperGroup);
    cmd->add_option("in", o->in, "Input GGUF model")->required();
    cmd->add_option("out", o->out, "Output GGUF file (written to OUT.tmp, then renamed)")->required();
    cmd->add_option("type", o->type, "One of: " + type_list())
        ->required()
        ->check([](const std::string& s) {
            try {
                model::find_quant_target(s);
                return std::string();
            } catch (const Error& e) {
                return std::string(e.what());
            }
        });
    cmd->add_flag("--pure", o->pure, "TYPE for every quantized tensor: no mixture (output, attn_v, ffn_down rules)");
    cmd->add_flag("--allow-requantize", o->allow_requantize,
                  "Allow converting tensors that are already quantized (loses precision)");
    cmd->add_option("-t,--threads", o->threads, "Threads converting rows (default: physical cores; big ones only on big/little CPUs)")
        ->check(CLI::Range(1, 1024));
    cmd->callback([o] {
        const model::QuantTarget& target = model::find_quant_target(o->type);
        std::printf("tessel quantize: %s -> %s as %s (llama.cpp file type %s = %u), %d threads\n", printable(o->in).c_str(),
                    printable(o->out).c_str(), target.name, target.ftype, target.file_type, o->threads);
        size_t i = 0;
        const model::QuantizeStats st = model::quantize_model(
            o->in, o->out, target, {o->pure, o->allow_requantize}, o->threads, [&](const model::TensorPlan& p) {
                const gguf::TensorInfo& t = *p.info;
                std::printf("[%4zu] %-32s %-16s %-6s -> %-6s %10" PRIu64 " -> %10" PRIu64 " bytes  (%s)\n", ++i,
                            printable(t.name).c_str(), shape_text({t.ne, t.n_dims}).c_str(), dtype_name(t.type), dtype_name(p.to), t.size,
                            p.bytes_out, p.reason.c_str());
                std::fflush(stdout);
            });
        std::printf("tensors: %zu, data %" PRIu64 " -> %" PRIu64 " bytes (%.2f MiB -> %.2f MiB), file %" PRIu64
                    " bytes, %.2f s\n",
                    i, st.bytes_in, st.bytes_out, mib(st.bytes_in), mib(st.bytes_out), st.file_bytes, st.seconds);
    });
}

}  // namespace tessel::cli::dev
