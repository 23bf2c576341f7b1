// tessel's public API: load a model once, make contexts from it, decode batches, read logits.
// The C API (include/tessel.h) is a C-shaped shell over this one.
//
//   auto model = tessel::Model::load("model.gguf", tessel::ModelParams{});
//   tessel::Context ctx(model, {});
//   auto ids = model->tokenize("Hello", /*add_special=*/true, /*parse_special=*/false);
//   std::vector<tessel::BatchToken> batch;  // (token, position, sequence, wants logits)
//   for (int i = 0; i < (int)ids.size(); ++i) batch.push_back({ids[i], i, 0, i + 1 == (int)ids.size()});
//   ctx.decode(batch);
//   std::span<const float> logits = ctx.logits(0);  // n_vocab floats
//
// A model (hyper-parameters, weights in device buffers, vocabulary) is immutable after load and
// may be shared by several contexts, each with its own KV cache (several sequences) and
// compute buffers. Every failure caused by input throws tessel::Error (errors.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessel/errors.hpp"
#include "tessel/export.h"

namespace tessel {

namespace model { class Model; }
namespace vocab { class Tokenizer; class Utf8Stream; }
namespace runtime { class Context; struct EngineAccess; }

/// The library's version, "MAJOR.MINOR.PATCH" (the CMake project version it was built as).
TESSEL_API const char* version();

/// How Model::load reads a model.
struct ModelParams {
    /// Devices to run on, in priority order, by name: "cpu"; "npu" (the first NPU, NPU0); a
    /// registered name in any case, e.g. "npu1" (tessel::devices() lists them). The CPU is
    /// always added last: it runs the nodes no accelerator claims. Empty: {"cpu"}.
    std::vector<std::string> devices{"cpu"};
    /// tessel reads weights one way: copied with pread into the devices' buffers (where the
    /// CPU's packed kernels and the NPU's tiles need them repacked anyway; a file truncated while
    /// it loads is then an error, not a SIGBUS), the metadata through a read-only mapping that is
    /// dropped as it is parsed. Weights are never served from a mapping of the file, so true is
    /// accepted, changes nothing, and is reported once per load as a Warn log message (log.hpp).
    bool use_mmap = false;
    /// Read the vocabulary only: for tokenize, detokenize and chat templates. The file needs
    /// tokenizer.* metadata and nothing else (llama.cpp's vocab-only files load, whatever their
    /// architecture); ModelInfo then holds arch, name, file and n_vocab, no hyper-parameters. A
    /// Context cannot be made from such a model (InvalidArgument).
    bool vocab_only = false;
    /// Called on the loading thread with the fraction of weight bytes loaded, 0..1: 0 before the
    /// first weight is read, then after each weight, 1 at the end. Returning false cancels the
    /// load: Model::load throws Error(Cancelled) naming the file, and everything loaded so far is
    /// freed. Not called with vocab_only. An exception it throws leaves Model::load unchanged.
    std::function<bool(float fraction)> progress;
};

/// Facts about a loaded model.
struct ModelInfo {
    std::string arch;       ///< general.architecture, e.g. "llama"
    std::string name;       ///< general.name
    std::string file;       ///< path it was loaded from
    int64_t n_vocab = 0;    ///< tokens
    int64_t n_ctx_train = 0;  ///< training context, tokens
    int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0;
    int64_t n_params = 0;   ///< weight elements
    uint64_t size = 0;      ///< bytes of weight data
    std::string type;       ///< file type by majority of matrix weights, e.g. "Q4_1"; "" with vocab_only
    bool vocab_only = false;  ///< loaded with ModelParams::vocab_only (n_params and size are 0)
};

/// One message of a conversation.
struct ChatMessage {
    std::string role;  ///< "system", "user", "assistant" (a Jinja template may know others, e.g. "tool")
    std::string content;
};

/// How apply_chat_template renders a model's Jinja template (Model::chat_template_options()
/// fills the model's values).
struct ChatTemplateOptions {
    bool add_generation_prompt = true;  ///< end with the opening of an assistant turn
    std::string bos_token;              ///< the template's bos_token: the model's BOS text
    std::string eos_token;              ///< the template's eos_token: the model's EOS text
    /// The tokenizer adds BOS itself (Model::adds_bos()): a rendered text that starts with
    /// bos_token loses it, so the prompt has one BOS (as llama.cpp).
    bool drop_leading_bos = false;
};

/// Renders `messages` as the prompt text of a chat model. `chat_template` is either a Jinja
/// template (a model's tokenizer.chat_template, Model::chat_template(), or a file's text) or the
/// name of a built-in format: "chatml", "llama3", "gemma", "phi3".
///
/// A Jinja template is rendered by tessel's interpreter as HF transformers renders it
/// (trim_blocks, lstrip_blocks; variables messages, add_generation_prompt, bos_token, eos_token;
/// raise_exception, strftime_now; docs/chat-templates.md). When the template raises an error
/// (raise_exception) for a conversation with system messages, it is rendered again with each
/// system text folded into the next user message ("system\n\nuser"), for templates without a
/// system role (Gemma). When it uses a construct tessel does not implement, a warning naming it
/// is logged once per process and the built-in format its text is recognised as (by fingerprint:
/// src/runtime/chat_template.hpp) renders the chat instead.
/// A built-in name renders that format (BOS left to the tokenizer, roles system/user/assistant).
///
/// Throws tessel::Error: InvalidArgument for no messages, a role a built-in format does not
/// know, a malformed template ("template:LINE:COL: ...") or the template's own
/// raise_exception message; Unsupported "unknown chat template (...), known: chatml, llama3,
/// gemma, phi3; ..." for an empty template, or one with an unsupported construct that matches
/// no built-in format.
TESSEL_API std::string apply_chat_template(std::string_view chat_template, std::span<const ChatMessage> messages,
                                           const ChatTemplateOptions& options);
/// apply_chat_template with bos_token and eos_token "" (BOS left to the tokenizer).
TESSEL_API std::string apply_chat_template(std::string_view chat_template, std::span<const ChatMessage> messages,
                                           bool add_generation_prompt);

class TESSEL_API Model {
public:
    /// Loads a GGUF model to run on params.devices. Each weight is placed where the device that
    /// uses it reads it (model/weights.hpp). Throws tessel::Error: Io / Gguf* (file, named),
    /// Unsupported (architecture, tensor type, tokenizer), BadModel (missing or misshapen
    /// key/tensor, naming the file and key or tensor), InvalidArgument (an unknown device name,
    /// listing the devices), Device (the NPU's runtime could not be started), Environment (a
    /// TESSEL_* variable), Cancelled (params.progress returned false), OutOfMemory.
    static std::shared_ptr<const Model> load(const std::string& path, const ModelParams& params);
    /// Shorthand for load(path, ModelParams{.devices = {device}}).
    static std::shared_ptr<const Model> load(const std::string& path, const std::string& device = "cpu");
    ~Model();

    const ModelInfo& info() const { return info_; }

    /// Token ids of `text`; add_special adds BOS/EOS as the model's tokenizer says;
    /// parse_special turns special-token text (e.g. "<|im_start|>") into those tokens.
    std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;
    /// Bytes of one token (special tokens render as their text only when `special`); may be
    /// part of a UTF-8 character. Throws Error(InvalidArgument) for a token outside 0..n_vocab-1.
    std::string token_to_piece(int32_t token, bool special = false) const;
    /// The concatenated bytes of `tokens` (token_to_piece of each), as llama.cpp's detokenize: for
    /// a SentencePiece vocabulary that adds a space prefix, one leading space of the first piece
    /// is dropped (the one tokenize added), so detokenize(tokenize(text, false)) == text.
    /// Throws like token_to_piece.
    std::string detokenize(std::span<const int32_t> tokens, bool special = false) const;
    /// End-of-generation tokens (eos, eot, <|im_end|>, <|endoftext|>, ...).
    bool is_eog(int32_t token) const;
    int32_t bos() const;  ///< BOS id, or -1
    bool adds_bos() const;  ///< tokenize(..., add_special = true) prepends BOS
    /// tokenizer.chat_template; when the file has none, the name of the format its architecture's
    /// models use ("gemma" for gemma3, whose GGUF files often lack the key), else "".
    std::string chat_template() const;
    /// apply_chat_template's options for this model: its BOS and EOS token texts ("" when it has
    /// none), drop_leading_bos = adds_bos(), add_generation_prompt true.
    ChatTemplateOptions chat_template_options() const;

private:
    Model() = default;
    friend struct runtime::EngineAccess;  // the library's internal view (src/runtime/engine_access.hpp)
    std::shared_ptr<const model::Model> impl_;
    std::unique_ptr<vocab::Tokenizer> tok_;
    ModelInfo info_;
};

enum class FlashAttn { Off, On, Auto };

/// How a device made of several (an NPU group such as NPU[0-1]) shares the work (llama.cpp's
/// -sm): Row, every member computes its part of the rows of each weight matrix product; None, the
/// first member runs everything. A single device ignores it.
enum class SplitMode { None, Row };

/// The most CPU threads a context may ask for (ContextParams::n_threads).
inline constexpr int kMaxThreads = 1024;

struct ContextParams {
    int64_t n_ctx = 0;        ///< KV cells (tokens); 0: the model's training context capped at 4096
    int64_t n_ubatch = 512;   ///< tokens per forward graph (decode splits larger batches)
    int n_threads = 0;        ///< CPU threads, 0..kMaxThreads; 0: the default, physical cores (big ones only on big/little CPUs, docs/config.md)
    FlashAttn flash_attn = FlashAttn::Auto;  ///< Auto: fused attention (FLASH_ATTN_EXT)
    SplitMode split_mode = SplitMode::Row;   ///< a device group's split (--split-mode)
    std::string type_k = "f16";  ///< KV cache types: f16, f32 or q8_0 (q8_0 V needs flash attention)
    std::string type_v = "f16";
    /// true: any sequence may take any free cell of the cache. false (llama.cpp's kv_unified =
    /// false): sequences 0..n_seq_max-1 each own n_ctx / n_seq_max cells (rounded down to a
    /// multiple of 32, at least 32; n_ctx_seq()) and position p of a sequence always sits in the
    /// same cell of its range, so a sequence's logits do not depend on the others decoded with it
    /// at the CPU's avx2 and scalar tiers (higher tiers switch kernels by batch size);
    /// seq_cp then copies rows instead of sharing cells.
    bool kv_unified = true;
    int32_t n_seq_max = 1;  ///< sequences of a split cache, 1..64 (unused when kv_unified)
};

/// Generated tokens -> text, one token at a time, never cutting a UTF-8 character in two: a
/// character whose bytes span several tokens is held back until its last byte arrives. Bytes
/// that can never become valid UTF-8 are passed on as they are.
class TESSEL_API Detokenizer {
public:
    /// `special`: control tokens render as their text (as token_to_piece).
    explicit Detokenizer(std::shared_ptr<const Model> model, bool special = false);
    ~Detokenizer();
    Detokenizer(Detokenizer&&) noexcept;
    Detokenizer& operator=(Detokenizer&&) noexcept;

    /// Adds `token`'s bytes; returns the text complete so far (possibly empty). Throws
    /// Error(InvalidArgument) for a token outside the vocabulary (nothing is added).
    std::string push(int32_t token);
    /// Returns what is still held back (an unfinished character at the end) and starts afresh.
    std::string flush();

private:
    std::shared_ptr<const Model> model_;
    bool special_;
    std::unique_ptr<vocab::Utf8Stream> stream_;
};

/// One entry of a decode batch.
struct BatchToken {
    int32_t token = 0;
    int32_t pos = 0;      ///< position in its sequence, >= 0
    int32_t seq = 0;      ///< sequence id, 0..63
    bool logits = false;  ///< keep this entry's logits
};

/// One op of a profiled decode (Context::set_profiling).
struct OpProfile {
    std::string op;      ///< the op's name, e.g. "MUL_MAT"; a device's fused op "RMS_NORM+MUL"; "FENCE"
    std::string device;  ///< the device that ran it, e.g. "CPU", "NPU0"
    double ms = 0;       ///< its time (an accelerator's own clock)
    double bytes = 0;    ///< bytes it reads and writes, from its nodes' shapes (0: not known)
    double flops = 0;    ///< floating-point operations (MUL_MAT: 2 K N M; 0: not known)
};

class TESSEL_API Context {
public:
    /// Throws tessel::Error: InvalidArgument for bad parameters or a model loaded vocab_only,
    /// OutOfMemory naming the bytes the KV cache and compute buffers need and those available.
    Context(std::shared_ptr<const Model> model, const ContextParams& params);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    /// Decodes a batch (any number of tokens and sequences). Throws tessel::Error:
    /// InvalidArgument naming a bad entry (before anything runs), ContextFull when the cache
    /// has no free cells for the rest (the tokens decoded before stay in the cache).
    void decode(std::span<const BatchToken> batch);
    /// Logits (n_vocab floats) of the i-th entry of the last decode that asked for logits.
    std::span<const float> logits(size_t i) const;
    size_t n_outputs() const;

    int64_t n_ctx() const;  ///< cache size, tokens
    /// Cells one sequence may hold: n_ctx(), or its range when !ContextParams::kv_unified.
    int64_t n_ctx_seq() const;
    /// Removes positions [p0, p1) of sequence seq from the cache (p1 < 0: to the end; seq < 0: all).
    void seq_rm(int32_t seq, int32_t p0, int32_t p1);
    /// Makes sequence dst hold positions [p0, p1) of src (p1 < 0: to the end): shared cells, or
    /// copied rows when !ContextParams::kv_unified.
    void seq_cp(int32_t src, int32_t dst, int32_t p0, int32_t p1);
    /// Largest position of seq in the cache, or -1.
    int32_t seq_pos_max(int32_t seq) const;
    /// Empties the cache.
    void clear();
    bool flash_attn() const;
    /// Compute nodes (views excluded) of the last decoded graph per device name, in the order the
    /// devices run their first split, e.g. {{"NPU0", 575}}; empty before the first decode.
    std::vector<std::pair<std::string, int64_t>> graph_nodes_per_device() const;
    /// Starts (true) or stops timing every op of later decodes on every device; off costs nothing.
    void set_profiling(bool on);
    /// The ops the last decode ran while profiling, per device in the order they ran (a CPU op's
    /// time is its share of the graph's wall time; an NPU op's the device's own record).
    std::vector<OpProfile> last_profile() const;

private:
    std::shared_ptr<const Model> model_;
    friend struct runtime::EngineAccess;
    std::unique_ptr<runtime::Context> impl_;
};

}  // namespace tessel
