/* The C API (include/tessel.h) from a C11 program, on the default model (SmolLM2-135M-Instruct
 * Q4_1), against llama.cpp's reference data and the C++ API's own results as api_expect writes
 * them (tests/api/api_expect.cpp):
 *   - tokenization equals llama.cpp's ids; detokenizing, whole and streamed, gives the text back;
 *   - the logits equal the C++ API's bit for bit, their top-1 is llama.cpp's, and a full vector
 *     is within the NMSE bound of tests/smollm2/smollm2_test.cpp (kMaxNmse);
 *   - greedy tokens through the sampler chain equal the C++ API's; a grammar forces its text;
 *   - a KV cache edit (seq_rm) then the same decode gives the same logits; seq_cp shares a prefix;
 *   - the chat template renders what the model's Jinja template renders (the SmolLM2 rows of
 *     tests/unit/chat_template_test.cpp, printed by scripts/check_chat_templates.py);
 *   - errors: a missing file, NULL arguments, bad parameters, small buffers, a cancelled load give
 *     their statuses and messages, never a crash.
 *
 *   c_api_test EXPECT_FILE      (exit 0: all checks passed; 1: a check failed)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel.h"

static int g_failures = 0;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            ++g_failures;                                                    \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

/* A call that must succeed; on failure the test cannot go on. */
#define MUST(call)                                                                           \
    do {                                                                                     \
        tessel_status must_st = (call);                                                      \
        if (must_st != TESSEL_OK) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,                \
                    tessel_status_name(must_st), tessel_last_error());                       \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* ---- The expectations file ---------------------------------------------------------------- */

typedef struct {
    size_t n;
    int32_t* v;
} IntList;

typedef struct {
    size_t n;
    float* v;
} FloatList;

typedef struct {
    char* model;
    int32_t n_vocab;
    char* utf8_text;
    IntList utf8_tokens;
    char* prompt_text;
    IntList prompt_tokens;
    int32_t ref_top1;
    float ref_top1_margin;
    IntList full_tokens;
    FloatList full_logits;
    FloatList cpp_logits;
    IntList cpp_greedy;
    char* cpp_greedy_text;
} Expect;

static void die(const char* what) {
    fprintf(stderr, "c_api_test: %s\n", what);
    exit(1);
}

static char* read_hex(FILE* f) {
    static char word[1 << 16];
    if (fscanf(f, "%65535s", word) != 1) die("a string is missing");
    const size_t n = strlen(word) / 2;
    char* out = malloc(n + 1);
    if (!out) die("out of memory");
    for (size_t i = 0; i < n; ++i) {
        unsigned int b = 0;
        if (sscanf(word + 2 * i, "%2x", &b) != 1) die("bad hex string");
        out[i] = (char)b;
    }
    out[n] = '\0';
    return out;
}

static IntList read_ints(FILE* f) {
    IntList l = {0, NULL};
    if (fscanf(f, "%zu", &l.n) != 1) die("a list length is missing");
    l.v = malloc((l.n ? l.n : 1) * sizeof(int32_t));
    if (!l.v) die("out of memory");
    for (size_t i = 0; i < l.n; ++i)
        if (fscanf(f, "%d", &l.v[i]) != 1) die("an integer is missing");
    return l;
}

static FloatList read_floats(FILE* f) {
    FloatList l = {0, NULL};
    if (fscanf(f, "%zu", &l.n) != 1) die("a list length is missing");
    l.v = malloc((l.n ? l.n : 1) * sizeof(float));
    if (!l.v) die("out of memory");
    for (size_t i = 0; i < l.n; ++i)
        if (fscanf(f, "%f", &l.v[i]) != 1) die("a float is missing");
    return l;
}

static Expect read_expect(const char* path) {
    Expect e;
    memset(&e, 0, sizeof e);
    FILE* f = fopen(path, "r");
    if (!f) die("cannot open the expectations file");
    char key[64];
    while (fscanf(f, "%63s", key) == 1) {
        if (!strcmp(key, "model")) e.model = read_hex(f);
        else if (!strcmp(key, "n_vocab")) { if (fscanf(f, "%d", &e.n_vocab) != 1) die("n_vocab"); }
        else if (!strcmp(key, "utf8_text")) e.utf8_text = read_hex(f);
        else if (!strcmp(key, "utf8_tokens")) e.utf8_tokens = read_ints(f);
        else if (!strcmp(key, "prompt_text")) e.prompt_text = read_hex(f);
        else if (!strcmp(key, "prompt_tokens")) e.prompt_tokens = read_ints(f);
        else if (!strcmp(key, "ref_top1")) { if (fscanf(f, "%d", &e.ref_top1) != 1) die("ref_top1"); }
        else if (!strcmp(key, "ref_top1_margin")) { if (fscanf(f, "%f", &e.ref_top1_margin) != 1) die("ref_top1_margin"); }
        else if (!strcmp(key, "full_tokens")) e.full_tokens = read_ints(f);
        else if (!strcmp(key, "full_logits")) e.full_logits = read_floats(f);
        else if (!strcmp(key, "cpp_logits")) e.cpp_logits = read_floats(f);
        else if (!strcmp(key, "cpp_greedy")) e.cpp_greedy = read_ints(f);
        else if (!strcmp(key, "cpp_greedy_text")) e.cpp_greedy_text = read_hex(f);
        else die("unknown key in the expectations file");
    }
    fclose(f);
    if (!e.model || !e.cpp_greedy_text || !e.prompt_tokens.n || e.full_logits.n != (size_t)e.n_vocab ||
        e.cpp_logits.n != (size_t)e.n_vocab)
        die("the expectations file is incomplete");
    return e;
}

/* ---- Helpers ------------------------------------------------------------------------------- */

static int32_t argmax(const float* v, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i)
        if (v[i] > v[best]) best = i;
    return best;
}

static double nmse(const float* got, const float* want, int32_t n) {
    double num = 0.0, den = 0.0;
    for (int32_t i = 0; i < n; ++i) {
        const double d = (double)got[i] - (double)want[i];
        num += d * d;
        den += (double)want[i] * (double)want[i];
    }
    return num / den;
}

/* Decodes tokens[0..n) as sequence `seq` from position `pos0`, keeping the last entry's logits. */
static tessel_status decode_run(tessel_context* ctx, const int32_t* tokens, size_t n, int32_t pos0, int32_t seq) {
    tessel_batch_token* batch = malloc(n * sizeof *batch);
    if (!batch) die("out of memory");
    for (size_t i = 0; i < n; ++i) {
        batch[i].token = tokens[i];
        batch[i].pos = pos0 + (int32_t)i;
        batch[i].seq = seq;
        batch[i].logits = i + 1 == n;
    }
    const tessel_status st = tessel_decode(ctx, batch, n);
    free(batch);
    return st;
}

static const float* logits0(tessel_context* ctx) {
    const float* l = NULL;
    MUST(tessel_get_logits(ctx, 0, &l));
    return l;
}

/* True when s[0..n) holds only whole UTF-8 characters (no sequence cut at either end). */
static int whole_utf8(const char* s, size_t n) {
    size_t i = 0;
    while (i < n) {
        const unsigned char c = (unsigned char)s[i];
        const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || i + len > n) return 0;
        for (size_t k = 1; k < len; ++k)
            if (((unsigned char)s[i + k] >> 6) != 2) return 0;
        i += len;
    }
    return 1;
}

/* ---- Library, devices, errors without a model --------------------------------------------- */

static void test_library(void) {
    CHECK(!strcmp(tessel_version(), TESSEL_TEST_VERSION), "version '%s', CMake project version '%s'", tessel_version(),
          TESSEL_TEST_VERSION);
    const size_t n = tessel_device_count();
    CHECK(n >= 1, "%zu devices", n);
    tessel_device_info d;
    MUST(tessel_device_get(0, &d));
    CHECK(!strcmp(d.name, "CPU") && d.kind == TESSEL_DEVICE_CPU, "device 0 is '%s' kind %d", d.name, (int)d.kind);
    CHECK(d.memory_total > 0 && d.memory_free <= d.memory_total, "CPU memory %llu of %llu", (unsigned long long)d.memory_free,
          (unsigned long long)d.memory_total);
    CHECK(tessel_device_get(n, &d) == TESSEL_ERROR_INVALID_ARGUMENT, "device %zu of %zu", n, n);
    CHECK(tessel_device_get(0, NULL) == TESSEL_ERROR_INVALID_ARGUMENT, "NULL info");
    CHECK(strstr(tessel_last_error(), "info is NULL") != NULL, "last error '%s'", tessel_last_error());

    CHECK(!strcmp(tessel_status_name(TESSEL_OK), "ok"), "%s", tessel_status_name(TESSEL_OK));
    CHECK(!strcmp(tessel_status_name(TESSEL_ERROR_GGUF_TRUNCATED), "gguf-truncated"), "%s",
          tessel_status_name(TESSEL_ERROR_GGUF_TRUNCATED));
    CHECK(!strcmp(tessel_status_name(TESSEL_ERROR_CANCELLED), "cancelled"), "%s", tessel_status_name(TESSEL_ERROR_CANCELLED));
    CHECK(!strcmp(tessel_status_name((tessel_status)77), "unknown"), "%s", tessel_status_name((tessel_status)77));

    /* Sampler parameters out of range name the field. */
    tessel_sampler_params sp = tessel_sampler_default_params();
    sp.top_p = 0.0f;
    tessel_sampler* s = NULL;
    CHECK(tessel_sampler_new(&sp, 100, &s) == TESSEL_ERROR_INVALID_ARGUMENT && s == NULL, "top_p 0 accepted");
    CHECK(strstr(tessel_last_error(), "top_p") != NULL, "last error '%s'", tessel_last_error());
    CHECK(tessel_sampler_new(NULL, 0, &s) == TESSEL_ERROR_INVALID_ARGUMENT, "n_vocab 0 accepted");

    /* Chat template errors, and a small buffer. */
    const tessel_chat_message hi[] = {{"user", "hi"}};
    char buf[256];
    size_t n_needed = 0;
    CHECK(tessel_chat_apply_template("{% include 'base.jinja' %}", hi, 1, true, buf, sizeof buf, &n_needed) ==
              TESSEL_ERROR_UNSUPPORTED,
          "unknown template");
    CHECK(strstr(tessel_last_error(), "unknown chat template") != NULL, "last error '%s'", tessel_last_error());
    const tessel_chat_message bad_role[] = {{"robot", "hi"}};
    CHECK(tessel_chat_apply_template("chatml", bad_role, 1, true, buf, sizeof buf, &n_needed) == TESSEL_ERROR_INVALID_ARGUMENT,
          "role 'robot'");
    const char* want = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    CHECK(tessel_chat_apply_template("chatml", hi, 1, true, buf, 8, &n_needed) == TESSEL_ERROR_BUFFER_TOO_SMALL &&
              n_needed == strlen(want),
          "8-byte buffer: n_needed %zu", n_needed);
    MUST(tessel_chat_apply_template("chatml", hi, 1, true, buf, n_needed + 1, &n_needed));
    CHECK(!strcmp(buf, want), "chatml rendered '%s'", buf);
}

static void test_load_errors(const char* model_path) {
    tessel_model* m = NULL;
    const char* missing = "/nonexistent-dir/no-such-model.gguf";
    CHECK(tessel_model_load(missing, NULL, &m) == TESSEL_ERROR_IO && m == NULL, "missing file");
    CHECK(strstr(tessel_last_error(), missing) != NULL, "last error '%s' does not name the file", tessel_last_error());
    CHECK(tessel_model_load(NULL, NULL, &m) == TESSEL_ERROR_INVALID_ARGUMENT, "NULL path");
    CHECK(strstr(tessel_last_error(), "path is NULL") != NULL, "last error '%s'", tessel_last_error());
    CHECK(tessel_model_load(model_path, NULL, NULL) == TESSEL_ERROR_INVALID_ARGUMENT, "NULL model");

    tessel_model_params p = tessel_model_default_params();
    const char* devices[] = {"tpu7"};
    p.devices = devices;
    p.n_devices = 1;
    CHECK(tessel_model_load(model_path, &p, &m) == TESSEL_ERROR_INVALID_ARGUMENT, "device tpu7");
    CHECK(strstr(tessel_last_error(), "unknown device 'tpu7'") != NULL, "last error '%s'", tessel_last_error());

    /* NULL handles: statuses, no crash. */
    size_t n = 0;
    int32_t tok[4];
    CHECK(tessel_tokenize(NULL, "a", 1, true, false, tok, 4, &n) == TESSEL_ERROR_INVALID_ARGUMENT, "NULL model");
    CHECK(tessel_decode(NULL, NULL, 0) == TESSEL_ERROR_INVALID_ARGUMENT, "NULL ctx");
    CHECK(tessel_kv_seq_rm(NULL, 0, 0, -1) == TESSEL_ERROR_INVALID_ARGUMENT, "NULL ctx");
    CHECK(tessel_sampler_sample(NULL, NULL, NULL) == TESSEL_ERROR_INVALID_ARGUMENT, "NULL sampler");
    CHECK(tessel_context_new(NULL, NULL, NULL) == TESSEL_ERROR_INVALID_ARGUMENT, "NULL model");
    CHECK(tessel_model_n_vocab(NULL) == 0 && tessel_model_chat_template(NULL) == NULL && tessel_n_outputs(NULL) == 0,
          "NULL getters");
    tessel_model_free(NULL);
    tessel_context_free(NULL);
    tessel_sampler_free(NULL);
    tessel_detokenizer_free(NULL);
}

/* ---- Load progress, cancel, vocab_only, log callback ---------------------------------------- */

typedef struct {
    int calls;
    float first, last;
    int decreasing;
    float cancel_at; /* > 1: never cancel */
} Progress;

static bool on_progress(float fraction, void* user) {
    Progress* p = user;
    if (p->calls == 0) p->first = fraction;
    if (p->calls > 0 && fraction < p->last) p->decreasing = 1;
    p->last = fraction;
    ++p->calls;
    return fraction < p->cancel_at;
}

typedef struct {
    int warns_about_mmap;
} LogSeen;

static void on_log(tessel_log_level level, const char* text, void* user) {
    LogSeen* seen = user;
    if (level == TESSEL_LOG_WARN && strstr(text, "use_mmap")) seen->warns_about_mmap = 1;
}

static tessel_model* test_load(const char* model_path) {
    Progress cancel = {0, 0.0f, 0.0f, 0, 0.5f};
    tessel_model_params p = tessel_model_default_params();
    p.progress = on_progress;
    p.progress_user_data = &cancel;
    tessel_model* m = NULL;
    CHECK(tessel_model_load(model_path, &p, &m) == TESSEL_ERROR_CANCELLED && m == NULL, "cancelled load");
    CHECK(strstr(tessel_last_error(), model_path) != NULL && strstr(tessel_last_error(), "cancelled") != NULL,
          "last error '%s'", tessel_last_error());
    CHECK(cancel.last >= 0.5f && cancel.last < 1.0f, "cancelled at %g", (double)cancel.last);

    /* vocab_only: tokens yes, a context no. */
    tessel_model_params vp = tessel_model_default_params();
    vp.vocab_only = true;
    MUST(tessel_model_load(model_path, &vp, &m));
    tessel_model_info info;
    MUST(tessel_model_get_info(m, &info));
    CHECK(info.vocab_only && info.size == 0 && info.n_vocab > 0, "vocab_only info: size %llu n_vocab %lld",
          (unsigned long long)info.size, (long long)info.n_vocab);
    tessel_context* ctx = NULL;
    CHECK(tessel_context_new(m, NULL, &ctx) == TESSEL_ERROR_INVALID_ARGUMENT && ctx == NULL, "context on vocab_only");
    CHECK(strstr(tessel_last_error(), "vocab_only") != NULL, "last error '%s'", tessel_last_error());
    tessel_model_free(m);

    Progress full = {0, -1.0f, -1.0f, 0, 2.0f};
    LogSeen seen = {0};
    tessel_set_log_callback(on_log, &seen);
    const char* devices[] = {"cpu"};
    p = tessel_model_default_params();
    p.devices = devices;
    p.n_devices = 1;
    p.use_mmap = true;
    p.progress = on_progress;
    p.progress_user_data = &full;
    m = NULL;
    MUST(tessel_model_load(model_path, &p, &m));
    tessel_set_log_callback(NULL, NULL);
    CHECK(seen.warns_about_mmap, "no Warn log message about use_mmap");
    CHECK(full.calls > 2 && full.first == 0.0f && full.last == 1.0f && !full.decreasing, "progress: %d calls, %g .. %g%s",
          full.calls, (double)full.first, (double)full.last, full.decreasing ? ", decreasing" : "");
    MUST(tessel_model_get_info(m, &info));
    CHECK(!strcmp(info.arch, "llama") && !strcmp(info.type, "Q4_1") && !strcmp(info.file, model_path) && !info.vocab_only,
          "info: arch %s type %s file %s", info.arch, info.type, info.file);
    return m;
}

/* ---- Tokens and text ---------------------------------------------------------------------- */

static void test_tokens(tessel_model* m, const Expect* e) {
    const IntList* want = &e->utf8_tokens;
    const size_t len = strlen(e->utf8_text);
    size_t n = 0;
    CHECK(tessel_tokenize(m, e->utf8_text, len, true, false, NULL, 0, &n) == TESSEL_ERROR_BUFFER_TOO_SMALL && n == want->n,
          "size query: %zu tokens, llama.cpp %zu", n, want->n);
    int32_t* got = malloc(n * sizeof *got);
    if (!got) die("out of memory");
    MUST(tessel_tokenize(m, e->utf8_text, len, true, false, got, n, &n));
    CHECK(n == want->n && !memcmp(got, want->v, n * sizeof *got), "tokens differ from llama.cpp's");

    /* Detokenized whole, then streamed token by token (no chunk cuts a character). */
    const int bos = tessel_token_bos(m);
    const size_t skip = n > 0 && got[0] == bos ? 1 : 0;
    char text[4096];
    size_t n_text = 0;
    MUST(tessel_detokenize(m, got + skip, n - skip, false, text, sizeof text, &n_text));
    CHECK(n_text == len && !strcmp(text, e->utf8_text), "detokenized '%s'", text);
    CHECK(tessel_detokenize(m, got, n, false, text, 4, &n_text) == TESSEL_ERROR_BUFFER_TOO_SMALL && n_text >= len,
          "4-byte buffer");
    int32_t bad = e->n_vocab;
    CHECK(tessel_detokenize(m, &bad, 1, false, text, sizeof text, &n_text) == TESSEL_ERROR_INVALID_ARGUMENT, "token n_vocab");

    tessel_detokenizer* d = NULL;
    MUST(tessel_detokenizer_new(m, false, &d));
    char streamed[4096] = "";
    size_t n_streamed = 0;
    int held_back = 0;
    for (size_t i = skip; i < n; ++i) {
        char piece[64];
        size_t n_piece = 0;
        MUST(tessel_detokenizer_push(d, got[i], piece, sizeof piece, &n_piece));
        CHECK(whole_utf8(piece, n_piece), "chunk %zu cuts a character", i);
        char raw[64];
        size_t n_raw = 0;
        MUST(tessel_detokenize(m, &got[i], 1, false, raw, sizeof raw, &n_raw));
        held_back |= n_raw != n_piece;
        memcpy(streamed + n_streamed, piece, n_piece);
        n_streamed += n_piece;
    }
    char tail[64];
    size_t n_tail = 0;
    MUST(tessel_detokenizer_flush(d, tail, sizeof tail, &n_tail));
    CHECK(n_tail == 0, "%zu bytes held back at the end", n_tail);
    streamed[n_streamed] = '\0';
    CHECK(!strcmp(streamed, e->utf8_text), "streamed '%s'", streamed);
    CHECK(held_back, "no token of the prompt split a character: the streaming check proved nothing");
    /* A too-small buffer keeps the text: fetched by the next call with token -1. */
    size_t n_piece = 0;
    CHECK(tessel_detokenizer_push(d, got[skip], tail, 0, &n_piece) == TESSEL_ERROR_BUFFER_TOO_SMALL && n_piece > 0, "0-byte buffer");
    MUST(tessel_detokenizer_push(d, -1, tail, sizeof tail, &n_piece));
    MUST(tessel_detokenize(m, &got[skip], 1, false, text, sizeof text, &n_text));
    CHECK(n_piece == n_text && !memcmp(tail, text, n_text), "pending text lost");
    tessel_detokenizer_free(d);
    free(got);
}

static void test_chat(tessel_model* m) {
    /* SmolLM2-135M-Instruct rows of tests/unit/chat_template_test.cpp (Jinja-rendered). */
    const tessel_chat_message three_turns[] = {{"user", "What is 2+2?"}, {"assistant", " 4. "}, {"user", "  And 3+3?\n"}};
    const char* want_three_turns =
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n 4. <|im_end|>\n<|im_start|>user\n  And 3+3?\n"
        "<|im_end|>\n<|im_start|>assistant\n";
    const tessel_chat_message system[] = {{"system", "You answer in one word."}, {"user", "Capital of France?"}};
    const char* want_system =
        "<|im_start|>system\nYou answer in one word.<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n"
        "<|im_start|>assistant\n";
    const char* tmpl = tessel_model_chat_template(m);
    CHECK(tmpl && strstr(tmpl, "<|im_start|>"), "the model's template");
    char buf[1024];
    size_t n = 0;
    MUST(tessel_chat_apply_template(tmpl, three_turns, 3, true, buf, sizeof buf, &n));
    CHECK(!strcmp(buf, want_three_turns) && n == strlen(want_three_turns), "three_turns rendered '%s'", buf);
    MUST(tessel_chat_apply_template(tmpl, system, 2, true, buf, sizeof buf, &n));
    CHECK(!strcmp(buf, want_system), "system rendered '%s'", buf);
    /* The model's own template and token texts: SmolLM2's renders no BOS text. */
    MUST(tessel_model_apply_chat_template(m, system, 2, true, buf, sizeof buf, &n));
    CHECK(!strcmp(buf, want_system), "model template rendered '%s'", buf);
    CHECK(tessel_model_apply_chat_template(NULL, system, 2, true, buf, sizeof buf, &n) == TESSEL_ERROR_INVALID_ARGUMENT,
          "NULL model accepted");
}

/* ---- Decoding, logits, sampling, KV edits -------------------------------------------------- */

static void test_decode(tessel_model* m, const Expect* e) {
    const int32_t V = tessel_model_n_vocab(m);
    CHECK(V == e->n_vocab, "n_vocab %d, reference %d", V, e->n_vocab);
    tessel_context_params cp = tessel_context_default_params();
    cp.n_ctx = 256;
    cp.n_threads = 1; /* as api_expect's C++ run: the same numbers bit for bit */
    cp.flash_attn = TESSEL_FLASH_ATTN_OFF;
    tessel_context* ctx = NULL;
    MUST(tessel_context_new(m, &cp, &ctx));
    CHECK(tessel_context_n_ctx(ctx) == 256, "n_ctx %lld", (long long)tessel_context_n_ctx(ctx));
    CHECK(tessel_context_n_ctx_seq(ctx) == 256, "n_ctx_seq %lld", (long long)tessel_context_n_ctx_seq(ctx));
    {   /* a cache split by sequence: 256 cells over 3 sequences is 64 each (85 rounded down to 32s) */
        tessel_context_params sp = cp;
        sp.kv_unified = false;
        sp.n_seq_max = 3;
        tessel_context* split = NULL;
        MUST(tessel_context_new(m, &sp, &split));
        CHECK(tessel_context_n_ctx_seq(split) == 64, "split n_ctx_seq %lld", (long long)tessel_context_n_ctx_seq(split));
        tessel_context_free(split);
        sp.n_seq_max = 0;
        CHECK(tessel_context_new(m, &sp, &split) == TESSEL_ERROR_INVALID_ARGUMENT, "n_seq_max 0 accepted");
    }

    /* The prompt's logits: the C++ API's exactly, llama.cpp's top-1. */
    const IntList* prompt = &e->prompt_tokens;
    const int32_t n_prompt = (int32_t)prompt->n;
    MUST(decode_run(ctx, prompt->v, prompt->n, 0, 0));
    CHECK(tessel_n_outputs(ctx) == 1, "%zu outputs", tessel_n_outputs(ctx));
    const float* l = logits0(ctx);
    CHECK(!memcmp(l, e->cpp_logits.v, (size_t)V * sizeof(float)), "logits differ from the C++ API's");
    if (e->ref_top1_margin >= 0.5f)
        CHECK(argmax(l, V) == e->ref_top1, "top-1 %d, llama.cpp %d (margin %g)", argmax(l, V), e->ref_top1,
              (double)e->ref_top1_margin);
    else
        fprintf(stderr, "note: llama.cpp's top-2 margin is %g < 0.5, top-1 not compared\n", (double)e->ref_top1_margin);
    const float* none = NULL;
    CHECK(tessel_get_logits(ctx, 1, &none) == TESSEL_ERROR_INVALID_ARGUMENT && none == NULL, "logits 1 of 1");

    /* A sampler over the model's vocabulary: DRY with its default breakers (which a sampler
     * over n_vocab alone refuses), and a logit bias banning the arg-max: the runner-up. */
    {
        tessel_sampler_params bp = tessel_sampler_default_params();
        bp.temp = 0.0f;
        bp.dry_multiplier = 0.8f;
        const tessel_logit_bias ban = {argmax(l, V), -INFINITY};
        bp.logit_bias = &ban;
        bp.n_logit_bias = 1;
        int32_t runner_up = ban.token == 0 ? 1 : 0;
        for (int32_t i = 0; i < V; ++i)
            if (i != ban.token && l[i] > l[runner_up]) runner_up = i;
        tessel_sampler* bs = NULL;
        CHECK(tessel_sampler_new(&bp, V, &bs) == TESSEL_ERROR_INVALID_ARGUMENT && bs == NULL, "DRY breakers without a vocabulary");
        CHECK(strstr(tessel_last_error(), "dry_sequence_breakers") != NULL, "last error '%s'", tessel_last_error());
        MUST(tessel_sampler_new_for_model(&bp, m, &bs));
        int32_t t = -1;
        MUST(tessel_sampler_sample(bs, l, &t));
        CHECK(t == runner_up, "banned arg-max %d: got %d, runner-up %d", ban.token, t, runner_up);
        tessel_sampler_free(bs);
        const tessel_logit_bias outside = {V, 1.0f};
        bp.logit_bias = &outside;
        CHECK(tessel_sampler_new_for_model(&bp, m, &bs) == TESSEL_ERROR_INVALID_ARGUMENT, "logit bias token n_vocab");
        CHECK(strstr(tessel_last_error(), "logit_bias[0].token") != NULL, "last error '%s'", tessel_last_error());
    }

    /* A grammar: the output is "Paris" whatever the logits (the prompt's, reused at each step);
     * prompt tokens do not advance it. A JSON schema converts to a grammar text. */
    {
        tessel_sampler_params gp = tessel_sampler_default_params();
        gp.temp = 0.0f;
        gp.grammar = "root ::= \"Paris\"";
        tessel_sampler* gs = NULL;
        CHECK(tessel_sampler_new(&gp, V, &gs) == TESSEL_ERROR_INVALID_ARGUMENT && gs == NULL, "grammar without a vocabulary");
        MUST(tessel_sampler_new_for_model(&gp, m, &gs));
        MUST(tessel_sampler_accept_prompt(gs, prompt->v[0]));
        CHECK(tessel_sampler_accept(gs, argmax(l, V) == 0 ? 1 : 0) == TESSEL_ERROR_INVALID_ARGUMENT, "token 0/1 accepted");
        char out[64] = "";
        size_t n_out = 0;
        for (int step = 0; step < 10; ++step) {
            int32_t t = -1;
            MUST(tessel_sampler_sample(gs, l, &t));
            MUST(tessel_sampler_accept(gs, t));
            if (tessel_token_is_eog(m, t)) break;
            char piece[32];
            size_t n_piece = 0;
            MUST(tessel_detokenize(m, &t, 1, false, piece, sizeof piece, &n_piece));
            if (n_out + n_piece < sizeof out) memcpy(out + n_out, piece, n_piece + 1);
            n_out += n_piece;
        }
        CHECK(!strcmp(out, "Paris"), "grammar output '%s'", out);
        MUST(tessel_sampler_reset_grammar(gs));
        int32_t t = -1;
        MUST(tessel_sampler_sample(gs, l, &t));
        CHECK(!tessel_token_is_eog(m, t), "end of generation right after reset_grammar");
        tessel_sampler_free(gs);
        gp.grammar = "root ::= [a";
        CHECK(tessel_sampler_new_for_model(&gp, m, &gs) == TESSEL_ERROR_INVALID_ARGUMENT, "bad grammar");
        CHECK(strstr(tessel_last_error(), "grammar:1:10: unclosed character class") != NULL, "last error '%s'", tessel_last_error());

        const char* schema = "{\"enum\": [1, \"a\"]}";
        char g[256];
        size_t n_g = 0;
        CHECK(tessel_json_schema_to_grammar(schema, strlen(schema), g, 4, &n_g) == TESSEL_ERROR_BUFFER_TOO_SMALL,
              "small buffer");
        MUST(tessel_json_schema_to_grammar(schema, strlen(schema), g, sizeof g, &n_g));
        CHECK(!strcmp(g, "root ::= \"1\" | \"\\\"a\\\"\"\n") && n_g == strlen(g), "schema grammar '%s'", g);
        CHECK(tessel_json_schema_to_grammar("{\"type\":", 8, g, sizeof g, &n_g) == TESSEL_ERROR_INVALID_ARGUMENT,
              "truncated schema");
        CHECK(strstr(tessel_last_error(), "line 1, column 9") != NULL, "last error '%s'", tessel_last_error());
    }

    /* Greedy through the sampler chain: the C++ API's tokens. */
    tessel_sampler_params sp = tessel_sampler_default_params();
    sp.temp = 0.0f;
    tessel_sampler* s = NULL;
    MUST(tessel_sampler_new(&sp, V, &s));
    int32_t* greedy = malloc(e->cpp_greedy.n * sizeof *greedy);
    if (!greedy) die("out of memory");
    for (size_t i = 0; i < e->cpp_greedy.n; ++i) {
        MUST(tessel_sampler_sample(s, logits0(ctx), &greedy[i]));
        MUST(tessel_sampler_accept(s, greedy[i]));
        MUST(decode_run(ctx, &greedy[i], 1, n_prompt + (int32_t)i, 0));
    }
    CHECK(!memcmp(greedy, e->cpp_greedy.v, e->cpp_greedy.n * sizeof *greedy), "greedy tokens differ from the C++ API's");
    char text[1024];
    size_t n_text = 0;
    MUST(tessel_detokenize(m, greedy, e->cpp_greedy.n, false, text, sizeof text, &n_text));
    CHECK(!strcmp(text, e->cpp_greedy_text), "greedy text '%s', C++ '%s'", text, e->cpp_greedy_text);
    CHECK(tessel_sampler_accept(s, V) == TESSEL_ERROR_INVALID_ARGUMENT, "accept token n_vocab");
    tessel_sampler_free(s);

    /* KV edits: drop the generated tokens, decode the first one again: the same logits. */
    int32_t pos = -2;
    MUST(tessel_kv_seq_pos_max(ctx, 0, &pos));
    CHECK(pos == n_prompt + (int32_t)e->cpp_greedy.n - 1, "pos_max %d", pos);
    MUST(tessel_kv_seq_rm(ctx, 0, n_prompt + 1, -1));
    MUST(tessel_kv_seq_pos_max(ctx, 0, &pos));
    CHECK(pos == n_prompt, "pos_max after seq_rm %d, want %d", pos, n_prompt);
    MUST(tessel_kv_seq_rm(ctx, 0, n_prompt, -1));
    MUST(decode_run(ctx, &greedy[0], 1, n_prompt, 0));
    float* first = malloc((size_t)V * sizeof *first);
    if (!first) die("out of memory");
    memcpy(first, logits0(ctx), (size_t)V * sizeof *first);
    MUST(tessel_kv_seq_rm(ctx, 0, n_prompt, -1));
    MUST(decode_run(ctx, &greedy[0], 1, n_prompt, 0));
    CHECK(!memcmp(first, logits0(ctx), (size_t)V * sizeof *first), "logits after seq_rm and the same decode differ");
    CHECK(argmax(first, V) == greedy[1], "after the edit the next greedy token is %d, was %d", argmax(first, V), greedy[1]);

    /* seq_cp: sequence 2 shares the prompt, so its next token's logits are sequence 0's. */
    MUST(tessel_kv_seq_cp(ctx, 0, 2, 0, n_prompt));
    MUST(tessel_kv_seq_pos_max(ctx, 2, &pos));
    CHECK(pos == n_prompt - 1, "seq 2 pos_max %d", pos);
    MUST(decode_run(ctx, &greedy[0], 1, n_prompt, 2));
    CHECK(!memcmp(first, logits0(ctx), (size_t)V * sizeof *first), "logits of the copied sequence differ");

    /* A full vector of llama.cpp's teacher-forced run, after clearing the cache. */
    MUST(tessel_kv_clear(ctx));
    MUST(tessel_kv_seq_pos_max(ctx, 0, &pos));
    CHECK(pos == -1, "pos_max after clear %d", pos);
    MUST(decode_run(ctx, e->full_tokens.v, e->full_tokens.n, 0, 0));
    const double err = nmse(logits0(ctx), e->full_logits.v, V);
    CHECK(err <= 8e-2, "NMSE %g against llama.cpp (smollm2_test.cpp's kMaxNmse 8e-2)", err);
    printf("c_api_test: NMSE %.3g against llama.cpp at position %zu\n", err, e->full_tokens.n - 1);

    /* Bad batches: statuses naming the entry, nothing decoded. */
    const tessel_batch_token bad[] = {{0, 0, 0, true}, {V, 1, 0, true}};
    CHECK(tessel_decode(ctx, bad, 2) == TESSEL_ERROR_INVALID_ARGUMENT, "token n_vocab");
    CHECK(strstr(tessel_last_error(), "batch entry 1") != NULL, "last error '%s'", tessel_last_error());
    CHECK(tessel_decode(ctx, NULL, 3) == TESSEL_ERROR_INVALID_ARGUMENT, "NULL batch");
    free(first);
    free(greedy);
    tessel_context_free(ctx);
}

/* The model may be freed before its context: the context keeps it. */
static void test_lifetime(const char* model_path) {
    tessel_model* m = NULL;
    MUST(tessel_model_load(model_path, NULL, &m));
    tessel_context_params cp = tessel_context_default_params();
    cp.n_ctx = 64;
    tessel_context* ctx = NULL;
    MUST(tessel_context_new(m, &cp, &ctx));
    tessel_model_free(m);
    const int32_t t = 1;
    MUST(decode_run(ctx, &t, 1, 0, 0));
    CHECK(tessel_n_outputs(ctx) == 1, "decode after the model was freed");
    tessel_context_free(ctx);
}

static void free_expect(Expect* e) {
    free(e->model);
    free(e->utf8_text);
    free(e->prompt_text);
    free(e->cpp_greedy_text);
    free(e->utf8_tokens.v);
    free(e->prompt_tokens.v);
    free(e->full_tokens.v);
    free(e->cpp_greedy.v);
    free(e->full_logits.v);
    free(e->cpp_logits.v);
}

int main(int argc, char** argv) {
    if (argc != 2) die("usage: c_api_test EXPECT_FILE");
    Expect e = read_expect(argv[1]);
    test_library();
    test_load_errors(e.model);
    tessel_model* m = test_load(e.model);
    test_tokens(m, &e);
    test_chat(m);
    test_decode(m, &e);
    tessel_model_free(m);
    test_lifetime(e.model);
    free_expect(&e);
    if (g_failures) {
        fprintf(stderr, "c_api_test: %d check(s) failed\n", g_failures);
        return 1;
    }
    printf("c_api_test: all checks passed\n");
    return 0;
}
