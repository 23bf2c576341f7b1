#include "run_options.hpp"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <cstdio>
#include <limits>
#include <string>

#include "common/model_fetch.hpp"
#include "tessel/device.hpp"
#include "tessel/errors.hpp"
#include "tessel/system.hpp"

namespace tessel::cli {

CLI::Validator device_validator() {
    return CLI::Validator(
        [](std::string& in) -> std::string {
            try {
                resolve_device(in);
                return {};
            } catch (const Error& e) {
                return e.what();
            }
        },
        "DEVICE");
}

void add_model_options(CLI::App& cmd, ModelOptions& o) {
    cmd.add_option("-m,--model", o.model, "GGUF model file (default: $TESSEL_MODEL, else SmolLM2-135M-Instruct Q4_1, fetched once)");
    cmd.add_option("--device", o.device, "Device to run on: cpu, npu (the first NPU), or an NPU by name as TESSEL_NPU_DEVICES registers them "
                   "(npu1, npu0:1, npu[0-1]); the NPU takes the ops it claims, the CPU the rest")
        ->capture_default_str()
        ->check(device_validator());
    cmd.add_option("-c,--ctx-size", o.n_ctx, "Context size, tokens (0: the model's, at most 4096)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
    cmd.add_option("-t,--threads", o.n_threads, "CPU threads (0: physical cores; big ones only on big/little CPUs)")->check(CLI::Range(0, kMaxThreads));
    cmd.add_option("-b,--batch-size", o.n_batch, "Prompt tokens per decode call")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
    cmd.add_option("--ubatch-size", o.n_ubatch, "Tokens per forward graph (also -ub)")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
    cmd.add_option("--flash-attn", o.flash_attn, "Fused attention: on, off or auto (also -fa)")->check(CLI::IsMember({"on", "off", "auto"}));
    add_split_mode_option(cmd, o.split_mode);
    cmd.add_option("--cache-type-k", o.type_k, "K cache type: f16, f32, q8_0 (also -ctk)")->check(CLI::IsMember({"f16", "f32", "q8_0"}));
    cmd.add_option("--cache-type-v", o.type_v, "V cache type: f16, f32, q8_0; q8_0 needs -fa on (also -ctv)")->check(CLI::IsMember({"f16", "f32", "q8_0"}));
    add_packing_flag(cmd);
}

void add_split_mode_option(CLI::App& cmd, std::string& mode) {
    cmd.add_option("--split-mode", mode,
                   "A device group (TESSEL_NPU_DEVICES=NPU[0-1]): row, each member computes its rows of every weight matmul; "
                   "none, the first member runs everything (also -sm)")
        ->check(CLI::IsMember({"none", "row"}))
        ->capture_default_str();
}

SplitMode split_mode_of(const std::string& mode) { return mode == "none" ? SplitMode::None : SplitMode::Row; }

int mpi_ranks() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
        if (const char* v = std::getenv(var)) return std::max(1, std::atoi(v));
    return 1;
}

bool mpi_other_rank() {
    for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
        if (const char* v = std::getenv(var)) return std::string_view(v) != "0";
    return false;
}

void check_mpi_ranks(const ModelOptions& o, const char* command, bool interactive, const SamplerParams* sampling) {
    const int ranks = mpi_ranks();
    if (ranks <= 1 || o.split_mode == "none") return;
    const std::string under = std::string(command) + " under mpirun (" + std::to_string(ranks) + " ranks splitting the rows)";
    if (interactive)
        throw CLI::ValidationError(under + ": its input reaches rank 0 only; run it in one process, or with --split-mode none");
    if (sampling && sampling->temp > 0.0f && sampling->seed == kRandomSeed)
        throw CLI::ValidationError(under + ": every rank must sample the same tokens; give --seed N (or --temp 0, or --split-mode none)");
}

void add_packing_flag(CLI::App& cmd) {
    cmd.add_flag_callback("--no-packed", [] { set_weight_packing(false); },
                          "Keep weights in their GGUF layout (no CPU_PACKED repacking; also TESSEL_CPU_PACKED=0)");
}

namespace {

// Validators for the sampling flags, so a bad value is a flag error (exit 2) naming the flag;
// the rules are the Sampler's (src/sample/sampler.cpp), which checks them again.
CLI::Validator finite_above(double lo, bool allow_lo, const std::string& what) {
    return CLI::Validator(
        [lo, allow_lo, what](std::string& in) -> std::string {
            double v = 0.0;
            try {
                size_t used = 0;
                v = std::stod(in, &used);
                if (used != in.size()) return "expected a number, got '" + in + "'";
            } catch (const std::exception&) {
                return "expected a number, got '" + in + "'";
            }
            if (!std::isfinite(v) || v < lo || (!allow_lo && v == lo)) return "expected " + what + ", got " + in;
            return {};
        },
        what);
}

// "TOKEN_ID+BIAS" or "TOKEN_ID-BIAS" (llama.cpp's -l syntax; BIAS a number or inf, "-inf" bans
// the token) as a LogitBias; the error text when it is not one.
std::string parse_logit_bias(const std::string& in, LogitBias& out) {
    const std::string bad = "expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1, 15043-inf), got '" + in + "'";
    const size_t sign = in.find_first_of("+-", 1);
    if (sign == std::string::npos || sign == 0) return bad;
    try {
        size_t used = 0;
        const long long token = std::stoll(in.substr(0, sign), &used);
        if (used != sign || in[0] == '+' || in[0] == '-') return bad;
        const std::string magnitude = in.substr(sign + 1);
        if (magnitude.empty() || magnitude[0] == '+' || magnitude[0] == '-') return bad;
        const float value = std::stof(magnitude, &used);
        if (used != magnitude.size() || std::isnan(value)) return bad;
        const float bias = in[sign] == '-' ? -value : value;
        if (bias == std::numeric_limits<float>::infinity()) return "a bias of +inf is not allowed (got '" + in + "')";
        if (token > std::numeric_limits<int32_t>::max()) return "token id " + in.substr(0, sign) + " is too large";
        out = {static_cast<int32_t>(token), bias};
        return {};
    } catch (const std::exception&) {
        return bad;
    }
}

// A --samplers list (llama.cpp's names and aliases, separated by ';') or a --sampling-seq string
// (one letter a stage) as stages; the error text when it is not one.
std::string parse_sampler_order(const std::string& in, bool letters, std::vector<SamplerStage>& out) {
    using S = SamplerStage;
    static const std::vector<std::pair<std::string, S>> names = {
        {"penalties", S::Penalties}, {"dry", S::Dry}, {"top_n_sigma", S::TopNSigma}, {"top-n-sigma", S::TopNSigma},
        {"top_k", S::TopK}, {"top-k", S::TopK}, {"typ_p", S::TypicalP}, {"typ-p", S::TypicalP}, {"typ", S::TypicalP},
        {"typical_p", S::TypicalP}, {"typical-p", S::TypicalP}, {"typical", S::TypicalP}, {"top_p", S::TopP},
        {"top-p", S::TopP}, {"nucleus", S::TopP}, {"min_p", S::MinP}, {"min-p", S::MinP}, {"xtc", S::Xtc},
        {"temperature", S::Temperature}, {"temp", S::Temperature}};
    static const std::string codes = "edskypmxt";  // in SamplerStage order
    out.clear();
    if (letters) {
        for (char c : in) {
            const size_t i = codes.find(c);
            if (i == std::string::npos)
                return std::string("unknown sampler letter '") + c + "' (known: " + codes + ")";
            out.push_back(static_cast<S>(i));
        }
        return {};
    }
    for (size_t start = 0; start <= in.size();) {
        const size_t end = std::min(in.find(';', start), in.size());
        const std::string name = in.substr(start, end - start);
        start = end + 1;
        if (name.empty()) continue;
        const auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == name; });
        if (it == names.end())
            return "unknown sampler '" + name + "' (known: penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature)";
        out.push_back(it->second);
    }
    return {};
}

// A --dry-sequence-breaker value with \n, \t, \r, \\, \" and \' turned into their characters, as
// llama.cpp does; any other backslash stays as it is.
std::string unescape(const std::string& in) {
    std::string out;
    for (size_t i = 0; i < in.size(); ++i) {
        const char next = i + 1 < in.size() ? in[i + 1] : '\0';
        const char* const from = "ntr\\\"'";
        const char* const to = "\n\t\r\\\"'";
        const char* hit = in[i] == '\\' && next != '\0' ? std::strchr(from, next) : nullptr;
        if (hit) {
            out += to[hit - from];
            ++i;
        } else {
            out += in[i];
        }
    }
    return out;
}

// A flag's value turned into GBNF text (read from a file, converted from a JSON schema) and
// parsed, so a bad grammar is a flag error (exit 2) before the model loads. The parse is the
// Sampler's own, over a one-token vocabulary.
CLI::Validator grammar_from(bool file, bool json_schema) {
    return CLI::Validator(
        [file, json_schema](std::string& in) -> std::string {
            try {
                if (file) in = read_text_file(in);
                if (json_schema) in = json_schema_to_grammar(in);
                SamplerParams p;
                p.grammar = in;
                Sampler(p, SamplerVocab{{"x"}, {}, {}, {}});
                return {};
            } catch (const Error& e) {
                return e.what();
            }
        },
        file ? "FILE" : json_schema ? "SCHEMA" : "GBNF");
}

}  // namespace

void add_sampling_options(CLI::App& cmd, SamplerParams& s) {
    const double inf = std::numeric_limits<double>::infinity();
    const int32_t int_max = std::numeric_limits<int32_t>::max();
    cmd.add_option("--temp", s.temp, "Temperature (<= 0: greedy)")->check(finite_above(-inf, false, "a finite value"));
    cmd.add_option("--top-k", s.top_k, "Top-k (0: off)")->check(CLI::Range(0, int_max));
    cmd.add_option("--top-p", s.top_p, "Top-p (1: off)")
        ->check(finite_above(0.0, false, "a value in (0, 1]") & CLI::Range(0.0, 1.0));
    cmd.add_option("--min-p", s.min_p, "Min-p (0: off)")->check(CLI::Range(0.0, 1.0));
    cmd.add_option("--typical", s.typical_p, "Locally typical sampling, parameter p (1: off)")->check(CLI::Range(0.0, 1.0));
    cmd.add_option("--top-nsigma,--top-n-sigma", s.top_n_sigma, "Top-n-sigma: keep logits within n standard deviations of the largest (<= 0: off)")
        ->check(finite_above(-inf, false, "a finite value"));
    cmd.add_option("--xtc-probability", s.xtc_probability, "XTC: chance of removing the top choices (0: off)")->check(CLI::Range(0.0, 1.0));
    cmd.add_option("--xtc-threshold", s.xtc_threshold, "XTC: probability a top choice needs (> 0.5: off)")->check(CLI::Range(0.0, 1.0));
    cmd.add_option("--repeat-penalty", s.repeat_penalty, "Repetition penalty (1: off)")
        ->check(finite_above(0.0, false, "a finite value > 0"));
    cmd.add_option("--repeat-last-n", s.repeat_last_n, "Tokens of history the penalties look at (0: off, -1: all)")
        ->check(CLI::Range(-1, int_max));
    cmd.add_option("--presence-penalty", s.presence_penalty, "Presence penalty (0: off)")
        ->check(finite_above(-inf, false, "a finite value"));
    cmd.add_option("--frequency-penalty", s.frequency_penalty, "Frequency penalty (0: off)")
        ->check(finite_above(-inf, false, "a finite value"));
    cmd.add_option("--dry-multiplier", s.dry_multiplier, "DRY repetition penalty multiplier (0: off)")
        ->check(finite_above(0.0, true, "a finite value >= 0"));
    cmd.add_option("--dry-base", s.dry_base, "DRY penalty base")->check(finite_above(1.0, true, "a finite value >= 1"));
    cmd.add_option("--dry-allowed-length", s.dry_allowed_length, "DRY: repeats this long are not penalized")
        ->check(CLI::Range(0, int_max));
    cmd.add_option("--dry-penalty-last-n", s.dry_penalty_last_n, "DRY: tokens of history to scan (0: off, -1: all)")
        ->check(CLI::Range(-1, int_max));
    cmd.add_option_function<std::vector<std::string>>(
           "--dry-sequence-breaker",
           [&s](const std::vector<std::string>& values) {
               s.dry_sequence_breakers.clear();  // the first use replaces the defaults
               for (const std::string& v : values) {
                   if (v == "none") s.dry_sequence_breakers.clear();
                   else s.dry_sequence_breakers.push_back(unescape(v));
               }
           },
           "DRY sequence breaker, repeatable; replaces the defaults \"\\n\", \":\", \"\\\"\", \"*\"; 'none': no breakers")
        ->check(CLI::Validator([](std::string& in) -> std::string { return in.empty() ? "expected a non-empty string" : ""; },
                               "STRING"));
    cmd.add_option("--mirostat", s.mirostat, "Mirostat sampling: 0 off, 1 Mirostat, 2 Mirostat 2.0 (replaces the other samplers)")
        ->check(CLI::Range(0, 2));
    cmd.add_option("--mirostat-lr", s.mirostat_eta, "Mirostat learning rate, eta")->check(finite_above(0.0, true, "a finite value >= 0"));
    cmd.add_option("--mirostat-ent", s.mirostat_tau, "Mirostat target entropy, tau")->check(finite_above(0.0, true, "a finite value >= 0"));
    cmd.add_option_function<std::vector<std::string>>(
           "-l,--logit-bias",
           [&s](const std::vector<std::string>& values) {
               for (const std::string& v : values) parse_logit_bias(v, s.logit_bias.emplace_back());
           },
           "Add BIAS to a token's logit, repeatable: TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1, 15043-inf bans it)")
        ->check(CLI::Validator(
            [](std::string& in) -> std::string {
                LogitBias unused;
                return parse_logit_bias(in, unused);
            },
            "TOKEN_ID(+/-)BIAS"));
    for (const bool letters : {false, true}) {
        cmd.add_option_function<std::string>(
               letters ? "--sampling-seq,--sampler-seq" : "--samplers",
               [&s, letters](const std::string& v) { parse_sampler_order(v, letters, s.samplers); },
               letters ? "The samplers' order as letters, one a stage (default: edskypmxt)"
                       : "The samplers' order, ';'-separated (default: penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature)")
            ->check(CLI::Validator(
                [letters](std::string& in) -> std::string {
                    std::vector<SamplerStage> unused;
                    return parse_sampler_order(in, letters, unused);
                },
                letters ? "LETTERS" : "NAMES"));
    }
    cmd.add_option_function<int64_t>(
           "--seed", [&s](const int64_t& v) { s.seed = v == -1 ? kRandomSeed : static_cast<uint32_t>(v); },
           "RNG seed (-1: random, the default)")
        ->check(CLI::Range(int64_t{-1}, int64_t{std::numeric_limits<uint32_t>::max()}));
    // The grammar: one of four flags (llama.cpp's), exclusive.
    const auto set = [&s](const std::string& gbnf) { s.grammar = gbnf; };
    CLI::Option* flags[] = {
        cmd.add_option_function<std::string>("--grammar", set, "GBNF grammar the output must match (llama.cpp's syntax)")
            ->transform(grammar_from(false, false)),
        cmd.add_option_function<std::string>("--grammar-file", set, "File holding a GBNF grammar the output must match")
            ->transform(grammar_from(true, false)),
        cmd.add_option_function<std::string>("-j,--json-schema", set, "JSON schema the output must match (as JSON text)")
            ->transform(grammar_from(false, true)),
        cmd.add_option_function<std::string>("--json-schema-file", set, "File holding a JSON schema the output must match (also -jf)")
            ->transform(grammar_from(true, true)),
    };
    for (CLI::Option* a : flags)
        for (CLI::Option* b : flags)
            if (a != b) a->excludes(b);
}

Sampler make_sampler(const SamplerParams& s, const Model& model) {
    const int64_t n_vocab = model.info().n_vocab;
    for (const LogitBias& b : s.logit_bias)
        if (b.token >= n_vocab)
            throw CLI::ValidationError("--logit-bias: token " + std::to_string(b.token) + " is not in the vocabulary (0.." +
                                       std::to_string(n_vocab - 1) + ")");
    return Sampler(s, model);
}

std::string read_text_file(const std::string& path) {
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (ec) throw Error(ErrorCode::Io, path + ": cannot read: " + ec.message());
    if (!std::filesystem::is_regular_file(st)) throw Error(ErrorCode::Io, path + ": not a regular file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorCode::Io, path + ": cannot read: " + std::strerror(errno));
    if (std::filesystem::file_size(path, ec) == 0 && !ec) return {};  // << of an empty rdbuf sets failbit
    std::ostringstream text;
    if (!(text << in.rdbuf()) || in.bad()) throw Error(ErrorCode::Io, path + ": cannot read: " + std::strerror(errno));
    return text.str();
}

LoadedModel load_model(const ModelOptions& o) {
    // Flags that conflict are a usage error (exit 2), found before the model is read.
    if (o.type_v == "q8_0" && o.flash_attn == "off")
        throw CLI::ValidationError("--cache-type-v q8_0 needs flash attention: it cannot be used with -fa off");
    const auto path = tools::resolve_model(o.model);
    const auto t0 = std::chrono::steady_clock::now();
    LoadedModel m;
    m.model = Model::load(path.string(), o.device);
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (const int64_t train = m.model->info().n_ctx_train; o.n_ctx > train)
        std::fprintf(stderr, "tessel: warning: -c %lld is more than the model's training context (%lld tokens): text past it may degrade\n",
                     static_cast<long long>(o.n_ctx), static_cast<long long>(train));
    return m;
}

void LoadedModel::report() const {
    if (mpi_other_rank()) return;
    const ModelInfo& i = model->info();
    std::fprintf(stderr, "tessel: loaded %s (%s, %s, %.1f M params, %.1f MiB) in %.2f s\n", i.file.c_str(), i.arch.c_str(),
                 i.type.c_str(), static_cast<double>(i.n_params) / 1e6, static_cast<double>(i.size) / (1 << 20), seconds);
}

ContextParams context_params(const ModelOptions& o) {
    ContextParams p;
    p.n_ctx = o.n_ctx;
    p.n_threads = o.n_threads;
    p.n_ubatch = o.n_ubatch;
    p.flash_attn = o.flash_attn == "on" ? FlashAttn::On : o.flash_attn == "off" ? FlashAttn::Off : FlashAttn::Auto;
    p.split_mode = split_mode_of(o.split_mode);
    p.type_k = o.type_k;
    p.type_v = o.type_v;
    return p;
}

}  // namespace tessel::cli
