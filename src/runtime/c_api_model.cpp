// The C API (include/tessel.h): models, tokens and text, the streaming detokenizer, chat templates.
#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/c_api.hpp"

using namespace tessel;
using capi::guard;
using capi::require;

namespace {

const Model& model_of(const tessel_model* m) {
    require(m, "model");
    return *m->model;
}

std::string_view bytes(const char* text, size_t len) {
    if (len) require(text, "text");
    return {text ? text : "", len};
}

std::vector<ChatMessage> chat_messages(const char* function, const tessel_chat_message* messages, size_t n) {
    if (n) require(messages, "messages");
    std::vector<ChatMessage> msgs;
    for (size_t i = 0; i < n; ++i) {
        if (!messages[i].role || !messages[i].content)
            throw Error(ErrorCode::InvalidArgument, std::string(function) + ": message " + std::to_string(i) + " has a NULL " +
                                                        (messages[i].role ? "content" : "role"));
        msgs.push_back({messages[i].role, messages[i].content});
    }
    return msgs;
}

}  // namespace

extern "C" {

tessel_model_params tessel_model_default_params(void) {
    tessel_model_params p{};
    p.devices = nullptr;
    p.n_devices = 0;
    p.use_mmap = false;
    p.vocab_only = false;
    p.progress = nullptr;
    p.progress_user_data = nullptr;
    return p;
}

tessel_status tessel_model_load(const char* path, const tessel_model_params* params, tessel_model** model) {
    return guard(__func__, [&] {
        require(path, "path");
        require(model, "model");
        const tessel_model_params p = params ? *params : tessel_model_default_params();
        ModelParams mp;
        mp.devices.clear();
        if (p.n_devices) require(p.devices, "params->devices");
        for (size_t i = 0; i < p.n_devices; ++i) {
            if (!p.devices[i]) throw capi::NullArgument{"params->devices[i]"};
            mp.devices.emplace_back(p.devices[i]);
        }
        mp.use_mmap = p.use_mmap;
        mp.vocab_only = p.vocab_only;
        if (p.progress)
            mp.progress = [cb = p.progress, user = p.progress_user_data](float fraction) { return cb(fraction, user); };
        auto handle = std::make_unique<tessel_model>();
        handle->model = Model::load(path, mp);
        handle->chat_template = handle->model->chat_template();
        *model = handle.release();
    });
}

void tessel_model_free(tessel_model* model) { delete model; }

tessel_status tessel_model_get_info(const tessel_model* model, tessel_model_info* info) {
    return guard(__func__, [&] {
        const ModelInfo& i = model_of(model).info();
        require(info, "info");
        tessel_model_info out{};
        out.arch = i.arch.c_str();
        out.name = i.name.c_str();
        out.file = i.file.c_str();
        out.type = i.type.c_str();
        out.n_vocab = i.n_vocab;
        out.n_ctx_train = i.n_ctx_train;
        out.n_embd = i.n_embd;
        out.n_layer = i.n_layer;
        out.n_head = i.n_head;
        out.n_head_kv = i.n_head_kv;
        out.n_params = i.n_params;
        out.size = i.size;
        out.vocab_only = i.vocab_only;
        *info = out;
    });
}

int32_t tessel_model_n_vocab(const tessel_model* model) { return model ? static_cast<int32_t>(model->model->info().n_vocab) : 0; }

tessel_status tessel_tokenize(const tessel_model* model, const char* text, size_t text_len, bool add_special, bool parse_special,
                              int32_t* tokens, size_t capacity, size_t* n_needed) {
    return guard(__func__, [&] {
        const Model& m = model_of(model);
        require(n_needed, "n_needed");
        const std::vector<int32_t> ids = m.tokenize(bytes(text, text_len), add_special, parse_special);
        *n_needed = ids.size();
        if (ids.size() > capacity) throw capi::BufferTooSmall{ids.size(), capacity, "tokens"};
        if (!ids.empty()) require(tokens, "tokens");
        std::copy(ids.begin(), ids.end(), tokens);
    });
}

tessel_status tessel_detokenize(const tessel_model* model, const int32_t* tokens, size_t n_tokens, bool special, char* buf,
                                size_t buf_size, size_t* n_needed) {
    return guard(__func__, [&] {
        const Model& m = model_of(model);
        if (n_tokens) require(tokens, "tokens");
        capi::write_text(m.detokenize(std::span(tokens, n_tokens), special), buf, buf_size, n_needed);
    });
}

bool tessel_token_is_eog(const tessel_model* model, int32_t token) { return model && model->model->is_eog(token); }

int32_t tessel_token_bos(const tessel_model* model) { return model ? model->model->bos() : -1; }

tessel_status tessel_detokenizer_new(const tessel_model* model, bool special, tessel_detokenizer** detok) {
    return guard(__func__, [&] {
        model_of(model);
        require(detok, "detok");
        *detok = new tessel_detokenizer{Detokenizer(model->model, special), {}};
    });
}

void tessel_detokenizer_free(tessel_detokenizer* detok) { delete detok; }

tessel_status tessel_detokenizer_push(tessel_detokenizer* detok, int32_t token, char* buf, size_t buf_size, size_t* n_needed) {
    return guard(__func__, [&] {
        require(detok, "detok");
        require(n_needed, "n_needed");
        if (token != -1) detok->ready += detok->detok.push(token);
        capi::write_text(detok->ready, buf, buf_size, n_needed);
        detok->ready.clear();
    });
}

tessel_status tessel_detokenizer_flush(tessel_detokenizer* detok, char* buf, size_t buf_size, size_t* n_needed) {
    return guard(__func__, [&] {
        require(detok, "detok");
        require(n_needed, "n_needed");
        detok->ready += detok->detok.flush();
        capi::write_text(detok->ready, buf, buf_size, n_needed);
        detok->ready.clear();
    });
}

const char* tessel_model_chat_template(const tessel_model* model) { return model ? model->chat_template.c_str() : nullptr; }

tessel_status tessel_chat_apply_template(const char* chat_template, const tessel_chat_message* messages, size_t n_messages,
                                         bool add_generation_prompt, char* buf, size_t buf_size, size_t* n_needed) {
    return guard(__func__, [&] {
        require(chat_template, "chat_template");
        const std::vector<ChatMessage> msgs = chat_messages(__func__, messages, n_messages);
        capi::write_text(apply_chat_template(chat_template, msgs, add_generation_prompt), buf, buf_size, n_needed);
    });
}

tessel_status tessel_model_apply_chat_template(const tessel_model* model, const tessel_chat_message* messages,
                                               size_t n_messages, bool add_generation_prompt, char* buf, size_t buf_size,
                                               size_t* n_needed) {
    return guard(__func__, [&] {
        const Model& m = model_of(model);
        const std::vector<ChatMessage> msgs = chat_messages(__func__, messages, n_messages);
        ChatTemplateOptions o = m.chat_template_options();
        o.add_generation_prompt = add_generation_prompt;
        capi::write_text(apply_chat_template(model->chat_template, msgs, o), buf, buf_size, n_needed);
    });
}

}  // extern "C"
