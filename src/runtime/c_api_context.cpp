// The C API (include/tessel.h): contexts, decoding, logits and KV cache edits.
#include <vector>

#include "runtime/c_api.hpp"

using namespace tessel;
using capi::guard;
using capi::require;

namespace {

FlashAttn flash_attn_of(tessel_flash_attn f) {
    switch (f) {
        case TESSEL_FLASH_ATTN_OFF: return FlashAttn::Off;
        case TESSEL_FLASH_ATTN_ON: return FlashAttn::On;
        case TESSEL_FLASH_ATTN_AUTO: return FlashAttn::Auto;
    }
    throw Error(ErrorCode::InvalidArgument, "tessel_context_new: flash_attn " + std::to_string(static_cast<int>(f)) +
                                                " is not one of TESSEL_FLASH_ATTN_OFF, _ON, _AUTO");
}

}  // namespace

extern "C" {

tessel_context_params tessel_context_default_params(void) {
    const ContextParams d;
    tessel_context_params p{};
    p.n_ctx = d.n_ctx;
    p.n_ubatch = d.n_ubatch;
    p.n_threads = d.n_threads;
    p.flash_attn = TESSEL_FLASH_ATTN_AUTO;
    p.type_k = "f16";
    p.type_v = "f16";
    p.kv_unified = d.kv_unified;
    p.n_seq_max = d.n_seq_max;
    return p;
}

tessel_status tessel_context_new(const tessel_model* model, const tessel_context_params* params, tessel_context** ctx) {
    return guard(__func__, [&] {
        require(model, "model");
        require(ctx, "ctx");
        const tessel_context_params p = params ? *params : tessel_context_default_params();
        ContextParams cp;
        cp.n_ctx = p.n_ctx;
        cp.n_ubatch = p.n_ubatch;
        cp.n_threads = p.n_threads;
        cp.flash_attn = flash_attn_of(p.flash_attn);
        if (p.type_k) cp.type_k = p.type_k;
        if (p.type_v) cp.type_v = p.type_v;
        cp.kv_unified = p.kv_unified;
        cp.n_seq_max = p.n_seq_max;
        *ctx = new tessel_context{Context(model->model, cp)};
    });
}

void tessel_context_free(tessel_context* ctx) { delete ctx; }

int64_t tessel_context_n_ctx(const tessel_context* ctx) { return ctx ? ctx->ctx.n_ctx() : 0; }

int64_t tessel_context_n_ctx_seq(const tessel_context* ctx) { return ctx ? ctx->ctx.n_ctx_seq() : 0; }

tessel_status tessel_decode(tessel_context* ctx, const tessel_batch_token* batch, size_t n_tokens) {
    return guard(__func__, [&] {
        require(ctx, "ctx");
        if (n_tokens) require(batch, "batch");
        std::vector<BatchToken> b(n_tokens);
        for (size_t i = 0; i < n_tokens; ++i) b[i] = {batch[i].token, batch[i].pos, batch[i].seq, batch[i].logits};
        ctx->ctx.decode(b);
    });
}

size_t tessel_n_outputs(const tessel_context* ctx) { return ctx ? ctx->ctx.n_outputs() : 0; }

tessel_status tessel_get_logits(const tessel_context* ctx, size_t i, const float** logits) {
    return guard(__func__, [&] {
        require(ctx, "ctx");
        require(logits, "logits");
        *logits = ctx->ctx.logits(i).data();
    });
}

tessel_status tessel_kv_seq_rm(tessel_context* ctx, int32_t seq, int32_t p0, int32_t p1) {
    return guard(__func__, [&] {
        require(ctx, "ctx");
        ctx->ctx.seq_rm(seq, p0, p1);
    });
}

tessel_status tessel_kv_seq_cp(tessel_context* ctx, int32_t src, int32_t dst, int32_t p0, int32_t p1) {
    return guard(__func__, [&] {
        require(ctx, "ctx");
        ctx->ctx.seq_cp(src, dst, p0, p1);
    });
}

tessel_status tessel_kv_seq_pos_max(const tessel_context* ctx, int32_t seq, int32_t* pos) {
    return guard(__func__, [&] {
        require(ctx, "ctx");
        require(pos, "pos");
        *pos = ctx->ctx.seq_pos_max(seq);
    });
}

tessel_status tessel_kv_clear(tessel_context* ctx) {
    return guard(__func__, [&] {
        require(ctx, "ctx");
        ctx->ctx.clear();
    });
}

}  // extern "C"
