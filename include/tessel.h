/* tessel's C API: load a GGUF model, make contexts, decode batches, read logits, sample.
 *
 * A C-shaped shell over the C++ API (tessel/engine.hpp, tessel/sampling.hpp): the same core, the
 * same checks, the same messages. Plain C11; compiles as C and as C++.
 *
 *   tessel_model* model = NULL;
 *   tessel_model_params mp = tessel_model_default_params();
 *   if (tessel_model_load("model.gguf", &mp, &model) != TESSEL_OK) {
 *       fprintf(stderr, "%s\n", tessel_last_error());
 *       return 1;
 *   }
 *
 * Conventions (every function):
 * - Status. A function that can fail returns tessel_status: TESSEL_OK, or an error whose
 *   one-line message (naming the file, tensor, key or argument, as the C++ exceptions do) is
 *   then in tessel_last_error(). No exception ever crosses this API; running out of memory
 *   inside it is TESSEL_ERROR_OUT_OF_MEMORY.
 * - Out-parameters are written only on TESSEL_OK (except the *n_needed of a too-small buffer).
 * - NULL for a required pointer argument is TESSEL_ERROR_INVALID_ARGUMENT naming the argument.
 * - Ownership. Handles (tessel_model, tessel_context, tessel_sampler, tessel_detokenizer) are
 *   made by a *_load / *_new function and freed by the matching *_free (NULL is accepted and
 *   ignored). A context keeps its model alive: the model may be freed before its contexts.
 *   Strings and arrays the library returns are owned by the library and valid as stated;
 *   buffers the caller passes stay the caller's.
 * - Buffers. A function that writes a variable amount (tokens, text) takes the buffer and its
 *   capacity and sets *n_needed to the full size of the result (elements; bytes for text,
 *   excluding the terminating NUL). When the result does not fit (text: with its NUL), nothing is
 *   written and the status is TESSEL_ERROR_BUFFER_TOO_SMALL: call again with *n_needed
 *   elements (text: *n_needed + 1 bytes). Text may contain NUL bytes of its own (a token's bytes
 *   are arbitrary); *n_needed is its true length.
 * - Threads. The last error is per thread. A model may be used from several threads at once
 *   (its functions do not change it); a context, sampler or detokenizer is used by one thread
 *   at a time.
 */
#ifndef TESSEL_H
#define TESSEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessel/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status and errors ------------------------------------------------------------------- */

/* Mirrors tessel::ErrorCode (tessel/errors.hpp), plus TESSEL_OK and the two C-only statuses
 * at the end. Values are stable. */
typedef enum tessel_status {
    TESSEL_OK = 0,
    TESSEL_ERROR_IO = 1,                /* open/read/mmap failed (errno text in the message) */
    TESSEL_ERROR_INVALID_ARGUMENT = 2,  /* a bad argument, parameter or batch entry */
    TESSEL_ERROR_UNSUPPORTED = 3,       /* valid input tessel cannot handle (dtype, architecture, chat template) */
    TESSEL_ERROR_BAD_MODEL = 4,         /* a model file lacks a key or tensor, or one has the wrong type/shape */
    TESSEL_ERROR_CONTEXT_FULL = 5,      /* a batch does not fit in the free cells of the KV cache */
    TESSEL_ERROR_DEVICE = 6,            /* an accelerator answered an error, stopped answering or died */
    TESSEL_ERROR_ENVIRONMENT = 7,       /* a TESSEL_* environment variable is empty or invalid */
    TESSEL_ERROR_OUT_OF_MEMORY = 8,     /* more memory than the process may take */
    TESSEL_ERROR_CANCELLED = 9,         /* the progress callback returned false */
    /* GGUF validation (the file is not a well-formed GGUF): */
    TESSEL_ERROR_GGUF_BAD_MAGIC = 20,
    TESSEL_ERROR_GGUF_UNSUPPORTED_VERSION = 21,
    TESSEL_ERROR_GGUF_TRUNCATED = 22,
    TESSEL_ERROR_GGUF_LENGTH_PAST_END = 23,
    TESSEL_ERROR_GGUF_UNKNOWN_VALUE_TYPE = 24,
    TESSEL_ERROR_GGUF_WRONG_VALUE_TYPE = 25,
    TESSEL_ERROR_GGUF_UNKNOWN_TENSOR_TYPE = 26,
    TESSEL_ERROR_GGUF_TOO_MANY_DIMS = 27,
    TESSEL_ERROR_GGUF_BAD_DIMENSION = 28,
    TESSEL_ERROR_GGUF_SIZE_OVERFLOW = 29,
    TESSEL_ERROR_GGUF_DATA_OUTSIDE_FILE = 30,
    TESSEL_ERROR_GGUF_OVERLAPPING_TENSORS = 31,
    TESSEL_ERROR_GGUF_MISALIGNED_OFFSET = 32,
    TESSEL_ERROR_GGUF_DUPLICATE_KEY = 33,
    TESSEL_ERROR_GGUF_DUPLICATE_TENSOR = 34,
    TESSEL_ERROR_GGUF_BAD_ALIGNMENT = 35,
    TESSEL_ERROR_GGUF_LIMIT = 36,
    /* C API only: */
    TESSEL_ERROR_BUFFER_TOO_SMALL = 100, /* the result needs *n_needed elements (see Buffers above) */
    TESSEL_ERROR_INTERNAL = 101          /* a failure that is a bug in tessel (the message says what) */
} tessel_status;

/* The message of the last call on this thread that failed: one line, never NULL ("" before any
 * failure). Valid until the next failing call on this thread. Successful calls leave it. */
TESSEL_API const char* tessel_last_error(void);

/* Short stable name of a status, as tessel::error_code_name: "ok", "io", "invalid-argument",
 * "gguf-truncated", ..., "buffer-too-small", "internal"; "unknown" for other values. Static. */
TESSEL_API const char* tessel_status_name(tessel_status status);

/* ---- Library ----------------------------------------------------------------------------- */

/* "MAJOR.MINOR.PATCH". Static. */
TESSEL_API const char* tessel_version(void);

typedef enum tessel_log_level {
    TESSEL_LOG_DEBUG = 0,
    TESSEL_LOG_INFO = 1,
    TESSEL_LOG_WARN = 2,
    TESSEL_LOG_ERROR = 3
} tessel_log_level;

/* Receives one diagnostic message (a NUL-terminated line without newline, valid during the
 * call) on the thread that logs; calls are serialized. It must not call back into tessel. */
typedef void (*tessel_log_callback)(tessel_log_level level, const char* text, void* user_data);

/* Sends every later message to `callback` with `user_data`; NULL restores the default (stderr).
 * Errors are not logged (they are statuses). */
TESSEL_API void tessel_set_log_callback(tessel_log_callback callback, void* user_data);

typedef enum tessel_device_kind {
    TESSEL_DEVICE_CPU = 0,   /* the host CPU: always present, the fallback device */
    TESSEL_DEVICE_ACCEL = 1  /* an accelerator, e.g. an NPU */
} tessel_device_kind;

typedef struct tessel_device_info {
    char name[64];          /* "CPU", "NPU0", ...: tessel_model_params.devices takes it in any case */
    char description[256];  /* e.g. the CPU model (cut to fit, NUL-terminated) */
    tessel_device_kind kind;
    uint64_t memory_free;   /* bytes */
    uint64_t memory_total;  /* bytes */
} tessel_device_info;

/* Number of registered devices (the CPU is device 0). */
TESSEL_API size_t tessel_device_count(void);
/* A snapshot of device `index` (< tessel_device_count()) in *info.
 * INVALID_ARGUMENT for an index out of range or info == NULL. */
TESSEL_API tessel_status tessel_device_get(size_t index, tessel_device_info* info);

/* ---- Model ------------------------------------------------------------------------------- */

typedef struct tessel_model tessel_model;

/* Called with the fraction of weight bytes loaded, 0..1 (0 before the first weight, 1 at the
 * end); return false to cancel the load (TESSEL_ERROR_CANCELLED). */
typedef bool (*tessel_progress_callback)(float fraction, void* user_data);

typedef struct tessel_model_params {
    /* Device names in priority order ("cpu", "npu", "npu1", ...; see tessel_device_get); the
     * CPU is always added last. n_devices == 0: the CPU only. The array is read during the
     * load only. */
    const char* const* devices;
    size_t n_devices;
    /* Accepted and reported (a Warn log message): tessel always copies weights into device
     * buffers, never serves them from a mapping (tessel/engine.hpp, ModelParams::use_mmap). */
    bool use_mmap;
    /* Hyper-parameters and vocabulary only: tokenize, detokenize, chat templates; no context. */
    bool vocab_only;
    tessel_progress_callback progress; /* NULL: none */
    void* progress_user_data;
} tessel_model_params;

/* No devices (CPU only), use_mmap false, vocab_only false, no progress callback. */
TESSEL_API tessel_model_params tessel_model_default_params(void);

/* Loads the GGUF file `path` (params NULL: the defaults) into *model. Errors: IO and GGUF_* for
 * the file, UNSUPPORTED, BAD_MODEL (naming file and key or tensor), INVALID_ARGUMENT (an unknown
 * device, listing the known ones; NULL path or model), DEVICE, ENVIRONMENT, CANCELLED,
 * OUT_OF_MEMORY. */
TESSEL_API tessel_status tessel_model_load(const char* path, const tessel_model_params* params, tessel_model** model);
TESSEL_API void tessel_model_free(tessel_model* model);

typedef struct tessel_model_info {
    const char* arch;  /* general.architecture, e.g. "llama" */
    const char* name;  /* general.name */
    const char* file;  /* the path it was loaded from */
    const char* type;  /* file type by majority of matrix weights, e.g. "Q4_1"; "" with vocab_only */
    int64_t n_vocab;   /* tokens */
    int64_t n_ctx_train; /* training context, tokens */
    int64_t n_embd, n_layer, n_head, n_head_kv;
    int64_t n_params;  /* weight elements (0 with vocab_only) */
    uint64_t size;     /* bytes of weight data (0 with vocab_only) */
    bool vocab_only;
} tessel_model_info;

/* Facts about the model; the strings are the model's, valid until tessel_model_free(model) is called.
 * INVALID_ARGUMENT for NULL arguments. */
TESSEL_API tessel_status tessel_model_get_info(const tessel_model* model, tessel_model_info* info);
/* Tokens of the vocabulary, or 0 for a NULL model. */
TESSEL_API int32_t tessel_model_n_vocab(const tessel_model* model);

/* ---- Tokens and text --------------------------------------------------------------------- */

/* Token ids of text[0..text_len) (any bytes) into tokens[0..capacity). add_special: BOS/EOS as
 * the model's tokenizer says; parse_special: special-token text (e.g. "<|im_start|>") becomes
 * that token. *n_needed: the number of tokens (Buffers above). */
TESSEL_API tessel_status tessel_tokenize(const tessel_model* model, const char* text, size_t text_len, bool add_special,
                                         bool parse_special, int32_t* tokens, size_t capacity, size_t* n_needed);

/* The bytes of tokens[0..n_tokens) concatenated (control tokens as their text only when
 * `special`) into buf[0..buf_size), NUL-terminated; a SentencePiece vocabulary that adds a space
 * prefix loses one leading space of the first piece, as in llama.cpp. *n_needed: the byte length
 * (Buffers above). INVALID_ARGUMENT for a token outside the vocabulary. */
TESSEL_API tessel_status tessel_detokenize(const tessel_model* model, const int32_t* tokens, size_t n_tokens, bool special,
                                           char* buf, size_t buf_size, size_t* n_needed);

/* True for end-of-generation tokens (eos, eot, <|im_end|>, ...); false for others and NULL. */
TESSEL_API bool tessel_token_is_eog(const tessel_model* model, int32_t token);
/* The BOS id, or -1 (also for NULL). */
TESSEL_API int32_t tessel_token_bos(const tessel_model* model);

/* Streaming detokenizer: generated tokens -> text that never cuts a UTF-8 character in two. */
typedef struct tessel_detokenizer tessel_detokenizer;

/* A detokenizer for `model` (kept alive by it). */
TESSEL_API tessel_status tessel_detokenizer_new(const tessel_model* model, bool special, tessel_detokenizer** detok);
TESSEL_API void tessel_detokenizer_free(tessel_detokenizer* detok);
/* Adds `token`; writes the text now complete (possibly "", NUL-terminated) into buf, its length
 * in *n_needed. On BUFFER_TOO_SMALL the token is kept and the text stays pending: call again
 * with token = -1 (adds nothing) and a buffer of *n_needed + 1 bytes. INVALID_ARGUMENT for a
 * token outside the vocabulary (nothing added). */
TESSEL_API tessel_status tessel_detokenizer_push(tessel_detokenizer* detok, int32_t token, char* buf, size_t buf_size,
                                                 size_t* n_needed);
/* Writes what is still held back (an unfinished character at the end) and starts afresh. On
 * BUFFER_TOO_SMALL nothing is lost: call again with a larger buffer. */
TESSEL_API tessel_status tessel_detokenizer_flush(tessel_detokenizer* detok, char* buf, size_t buf_size, size_t* n_needed);

/* ---- Chat templates ---------------------------------------------------------------------- */

typedef struct tessel_chat_message {
    const char* role;     /* "system", "user", "assistant" (a Jinja template may know others, e.g. "tool") */
    const char* content;  /* NUL-terminated */
} tessel_chat_message;

/* The model's tokenizer.chat_template, "" when it has none. Valid until tessel_model_free(model)
 * is called (even while a context still keeps the model itself alive); NULL only for a NULL model. */
TESSEL_API const char* tessel_model_chat_template(const tessel_model* model);

/* Renders messages[0..n_messages) as a chat model's prompt into buf (Buffers above), as
 * apply_chat_template in include/tessel/engine.hpp: `chat_template` is a Jinja template (a
 * model's tokenizer.chat_template, rendered by tessel's interpreter with bos_token and eos_token
 * "") or a built-in name: "chatml", "llama3", "gemma", "phi3". add_generation_prompt ends the
 * text with the opening of an assistant turn. Errors: UNSUPPORTED for an empty template or one
 * with an unsupported construct that matches no built-in format, INVALID_ARGUMENT for no
 * messages, a NULL role or content, a role a built-in format does not know, a malformed
 * template or the template's raise_exception (its message in tessel_last_error()). */
TESSEL_API tessel_status tessel_chat_apply_template(const char* chat_template, const tessel_chat_message* messages,
                                                    size_t n_messages, bool add_generation_prompt, char* buf, size_t buf_size,
                                                    size_t* n_needed);

/* As tessel_chat_apply_template with the model's own template (tessel_model_chat_template) and
 * its BOS and EOS texts as bos_token and eos_token; a leading BOS text is dropped when the
 * tokenizer adds BOS itself (Model::chat_template_options). */
TESSEL_API tessel_status tessel_model_apply_chat_template(const tessel_model* model, const tessel_chat_message* messages,
                                                          size_t n_messages, bool add_generation_prompt, char* buf,
                                                          size_t buf_size, size_t* n_needed);

/* ---- Context ----------------------------------------------------------------------------- */

typedef struct tessel_context tessel_context;

typedef enum tessel_flash_attn {
    TESSEL_FLASH_ATTN_OFF = 0,
    TESSEL_FLASH_ATTN_ON = 1,
    TESSEL_FLASH_ATTN_AUTO = 2  /* fused attention (FLASH_ATTN_EXT) */
} tessel_flash_attn;

typedef struct tessel_context_params {
    int64_t n_ctx;     /* KV cells (tokens); 0: the model's training context capped at 4096 */
    int64_t n_ubatch;  /* tokens per forward graph (decode splits larger batches), >= 1 */
    int32_t n_threads; /* CPU threads, 0..1024; 0: the default, physical cores (big ones only on big/little CPUs, docs/config.md) */
    tessel_flash_attn flash_attn;
    const char* type_k; /* KV cache types "f16", "f32" or "q8_0" (q8_0 V needs flash attention); */
    const char* type_v; /* NULL: "f16" */
    /* true: any sequence takes any free cell. false: sequences 0..n_seq_max-1 (1..64) each own
     * n_ctx / n_seq_max cells (a multiple of 32) and position p always sits in the same cell, so a
     * sequence's logits do not depend on the others in its batch (engine.hpp, ContextParams). */
    bool kv_unified;
    int32_t n_seq_max;
} tessel_context_params;

/* n_ctx 0, n_ubatch 512, n_threads 0, flash_attn AUTO, type_k and type_v "f16", kv_unified true,
 * n_seq_max 1. */
TESSEL_API tessel_context_params tessel_context_default_params(void);

/* A context (KV cache, compute buffers) on `model`'s devices (params NULL: the defaults).
 * Errors: INVALID_ARGUMENT (bad parameters, a vocab_only model), OUT_OF_MEMORY (naming the
 * bytes needed and available, before allocating). */
TESSEL_API tessel_status tessel_context_new(const tessel_model* model, const tessel_context_params* params,
                                            tessel_context** ctx);
TESSEL_API void tessel_context_free(tessel_context* ctx);
/* Cache size in tokens, or 0 for NULL. */
TESSEL_API int64_t tessel_context_n_ctx(const tessel_context* ctx);
/* Cells one sequence may hold (n_ctx, or its range when !kv_unified), or 0 for NULL. */
TESSEL_API int64_t tessel_context_n_ctx_seq(const tessel_context* ctx);

/* One entry of a decode batch. */
typedef struct tessel_batch_token {
    int32_t token;
    int32_t pos;  /* position in its sequence, >= 0; taken as given: tessel does not require a
                   * sequence's positions to follow each other or the ones already in the cache */
    int32_t seq;  /* sequence id, 0..63 */
    bool logits;  /* keep this entry's logits */
} tessel_batch_token;

/* Decodes batch[0..n_tokens) (any number of tokens and sequences; 0 tokens does nothing).
 * Errors: INVALID_ARGUMENT naming a bad entry, checked before anything runs (the last decode's
 * logits stay readable); CONTEXT_FULL when the cache lacks free cells for the whole batch, also
 * checked before anything runs (nothing is written; tessel_n_outputs becomes 0); DEVICE. The
 * context stays usable after any of them. */
TESSEL_API tessel_status tessel_decode(tessel_context* ctx, const tessel_batch_token* batch, size_t n_tokens);

/* Number of logit vectors the last decode kept (its entries with logits = true), 0 for NULL. */
TESSEL_API size_t tessel_n_outputs(const tessel_context* ctx);
/* *logits = the n_vocab raw scores (logits, not probabilities) of the i-th kept entry of the last
 * decode (batch order). Owned by
 * the context, valid until its next decode or free. INVALID_ARGUMENT for i >= tessel_n_outputs. */
TESSEL_API tessel_status tessel_get_logits(const tessel_context* ctx, size_t i, const float** logits);

/* KV cache edits. Positions are half-open [p0, p1); p0 < 0 means 0, p1 < 0 means to the end, and
 * p0 >= p1 selects nothing.
 * Removes positions [p0, p1) of sequence seq (seq < 0: of every sequence). */
TESSEL_API tessel_status tessel_kv_seq_rm(tessel_context* ctx, int32_t seq, int32_t p0, int32_t p1);
/* Makes sequence dst share positions [p0, p1) of src. */
TESSEL_API tessel_status tessel_kv_seq_cp(tessel_context* ctx, int32_t src, int32_t dst, int32_t p0, int32_t p1);
/* *pos = the largest position of seq in the cache, or -1 when it has none. */
TESSEL_API tessel_status tessel_kv_seq_pos_max(const tessel_context* ctx, int32_t seq, int32_t* pos);
/* Empties the cache. */
TESSEL_API tessel_status tessel_kv_clear(tessel_context* ctx);

/* ---- Sampler chain ----------------------------------------------------------------------- */

/* The chain of tessel/sampling.hpp: logit bias, then the stages of `samplers` (by default
 * llama.cpp's order: penalties, DRY, top-n-sigma, top-k, typical-p, top-p, min-p, XTC,
 * temperature) and a seeded categorical draw (greedy when temp <= 0), or with mirostat 1|2:
 * logit bias, temperature, Mirostat. A seed gives
 * the same tokens on every platform. */
typedef struct tessel_sampler tessel_sampler;

#define TESSEL_RANDOM_SEED 0xFFFFFFFFu /* seed value asking for a random seed */

/* The stages tessel_sampler_params.samplers orders (tessel::SamplerStage; llama.cpp's
 * --samplers names). Values are stable. */
typedef enum tessel_sampler_stage {
    TESSEL_SAMPLER_PENALTIES = 0,
    TESSEL_SAMPLER_DRY = 1,
    TESSEL_SAMPLER_TOP_N_SIGMA = 2,
    TESSEL_SAMPLER_TOP_K = 3,
    TESSEL_SAMPLER_TYPICAL_P = 4,
    TESSEL_SAMPLER_TOP_P = 5,
    TESSEL_SAMPLER_MIN_P = 6,
    TESSEL_SAMPLER_XTC = 7,
    TESSEL_SAMPLER_TEMPERATURE = 8
} tessel_sampler_stage;

/* One logit-bias entry: logit[token] += bias (-INFINITY bans the token). */
typedef struct tessel_logit_bias {
    int32_t token;          /* 0..n_vocab-1 */
    float bias;             /* finite or -INFINITY */
} tessel_logit_bias;

/* Fields past seed were added later, at the end, so the older ones keep their offsets. */
typedef struct tessel_sampler_params {
    float temp;             /* <= 0: greedy; finite */
    int32_t top_k;          /* >= 0; 0 = off */
    float top_p;            /* (0, 1]; 1 = off */
    float min_p;            /* [0, 1]; 0 = off */
    float repeat_penalty;   /* > 0; 1 = off */
    int32_t repeat_last_n;  /* >= -1 tokens of history penalized; 0 = off; -1 = all accepted */
    float presence_penalty; /* finite; 0 = off */
    float frequency_penalty;/* finite; 0 = off */
    uint32_t seed;          /* TESSEL_RANDOM_SEED: drawn at creation (tessel_sampler_seed) */
    const tessel_logit_bias* logit_bias; /* n_logit_bias entries, copied at creation; NULL if 0 */
    size_t n_logit_bias;
    float typical_p;        /* [0, 1]; 1 = off */
    float top_n_sigma;      /* finite; <= 0 = off */
    float xtc_probability;  /* [0, 1]; 0 = off */
    float xtc_threshold;    /* [0, 1]; > 0.5 = off */
    float dry_multiplier;   /* finite, >= 0; 0 = off */
    float dry_base;         /* finite, >= 1 */
    int32_t dry_allowed_length; /* >= 0 */
    int32_t dry_penalty_last_n; /* >= -1; 0 = off; -1 = all accepted */
    /* n_dry_sequence_breakers non-empty NUL-terminated strings, copied at creation. With DRY on
     * they need the vocabulary: tessel_sampler_new_for_model. */
    const char* const* dry_sequence_breakers;
    size_t n_dry_sequence_breakers;
    int32_t mirostat;       /* 0 = off, 1 or 2 */
    float mirostat_tau;     /* target surprise, bits; finite, >= 0 */
    float mirostat_eta;     /* learning rate; finite, >= 0 */
    /* n_samplers tessel_sampler_stage values: the stages in the order they run, copied at
     * creation; a stage left out does not run (none: NULL, 0). Unused with mirostat. */
    const int32_t* samplers;
    size_t n_samplers;
    /* GBNF text the output must match (NUL-terminated, copied at creation); NULL or "" = none.
     * Needs the vocabulary: tessel_sampler_new_for_model. A bad grammar: INVALID_ARGUMENT
     * "grammar:LINE:COLUMN: ...". tessel_json_schema_to_grammar converts a JSON schema. */
    const char* grammar;
} tessel_sampler_params;

/* llama.cpp's CLI defaults: temp 0.8, top_k 40, top_p 0.95, min_p 0.05, repeat_penalty 1,
 * repeat_last_n 64, presence and frequency penalties 0, seed TESSEL_RANDOM_SEED, no logit bias,
 * typical_p 1, top_n_sigma -1, xtc 0 / 0.1, dry 0 / 1.75 / 2 / -1 with breakers "\n", ":",
 * "\"", "*" (static storage), mirostat 0 / 5 / 0.1, samplers in llama.cpp's default order
 * (penalties, DRY, top-n-sigma, top-k, typical-p, top-p, min-p, XTC, temperature; static storage); no grammar. */
TESSEL_API tessel_sampler_params tessel_sampler_default_params(void);

/* A sampler over n_vocab tokens (params NULL: the defaults). INVALID_ARGUMENT naming the field
 * out of range, for n_vocab <= 0, or for DRY on with sequence breakers (they need the texts of
 * the tokens: use tessel_sampler_new_for_model). */
TESSEL_API tessel_status tessel_sampler_new(const tessel_sampler_params* params, int32_t n_vocab, tessel_sampler** sampler);
/* A sampler over model's vocabulary, which DRY's sequence breakers and the grammar use. Errors as
 * tessel_sampler_new; the sampler does not keep the model. */
TESSEL_API tessel_status tessel_sampler_new_for_model(const tessel_sampler_params* params, const tessel_model* model,
                                                      tessel_sampler** sampler);
TESSEL_API void tessel_sampler_free(tessel_sampler* sampler);
/* *token = the token the chain picks from logits[0..n_vocab) (-inf bans a token). Does not
 * record it: call tessel_sampler_accept for the token used. INVALID_ARGUMENT for a NaN or +inf
 * logit, or when every logit is -inf (also after the logit bias). */
TESSEL_API tessel_status tessel_sampler_sample(tessel_sampler* sampler, const float* logits, int32_t* token);
/* Records `token` (0..n_vocab-1) in the penalty and DRY history and advances the grammar over
 * it (INVALID_ARGUMENT, nothing recorded, when the grammar cannot take it). */
TESSEL_API tessel_status tessel_sampler_accept(tessel_sampler* sampler, int32_t token);
/* Clears the history, restarts Mirostat, the grammar and the random generator from the seed. */
TESSEL_API tessel_status tessel_sampler_reset(tessel_sampler* sampler);
/* The seed in use (the drawn one for TESSEL_RANDOM_SEED); 0 for NULL. */
TESSEL_API uint32_t tessel_sampler_seed(const tessel_sampler* sampler);
/* As tessel_sampler_accept without advancing the grammar: for prompt tokens (the grammar
 * constrains the output only). */
TESSEL_API tessel_status tessel_sampler_accept_prompt(tessel_sampler* sampler, int32_t token);
/* Restarts the grammar only (a new reply of a chat); nothing else changes. */
TESSEL_API tessel_status tessel_sampler_reset_grammar(tessel_sampler* sampler);
/* The GBNF grammar (tessel_sampler_params.grammar) of the JSON values that the JSON schema
 * schema[0..schema_len) describes, into buf (Buffers above); the keywords of tessel/sampling.hpp's
 * json_schema_to_grammar. INVALID_ARGUMENT for malformed JSON (naming line and column) or a
 * malformed schema, UNSUPPORTED for a keyword it does not convert (naming its JSON pointer). */
TESSEL_API tessel_status tessel_json_schema_to_grammar(const char* schema, size_t schema_len, char* buf, size_t buf_size,
                                                       size_t* n_needed);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_H */
