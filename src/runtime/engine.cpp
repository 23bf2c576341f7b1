// The public API (include/tessel/engine.hpp) over the model, vocab and runtime layers.
#include <algorithm>
#include <map>

#include "backend/registry.hpp"
#include "core/log.hpp"
#include "runtime/context.hpp"
#include "runtime/engine_access.hpp"
#include "tessel/engine.hpp"
#include "vocab/detokenize.hpp"
#include "vocab/tokenizer.hpp"
#include "runtime/devices.hpp"

namespace tessel {
namespace {

/// The file type named after the most common type among the matrix weights (by bytes).
std::string majority_type(const gguf::File& f) {
    std::map<std::string, uint64_t> bytes;
    for (const gguf::TensorInfo& t : f.tensors())
        if (t.n_dims >= 2) bytes[dtype_name(t.type)] += t.size;
    std::string best = "F32";
    uint64_t most = 0;
    for (const auto& [name, n] : bytes)
        if (n > most) best = name, most = n;
    return best;
}

/// End-of-generation texts that chat models use besides their eos/eot ids (llama.cpp's list).
constexpr const char* kEogTexts[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|eom_id|>"};

}  // namespace

Model::~Model() = default;

std::shared_ptr<const Model> Model::load(const std::string& path, const std::string& device) {
    ModelParams params;
    params.devices = {device};
    return load(path, params);
}

std::shared_ptr<const Model> Model::load(const std::string& path, const ModelParams& params) {
    if (params.use_mmap)
        log(LogLevel::Warn, path + ": use_mmap has no effect: tessel copies weights into device buffers (ModelParams::use_mmap)");
    model::LoadOptions options;
    options.vocab_only = params.vocab_only;
    options.progress = params.progress;
    std::shared_ptr<Model> m(new Model());
    m->impl_ = model::Model::load(path, runtime::device_registry().run_devices(params.devices), options);
    m->tok_ = std::make_unique<vocab::Tokenizer>(vocab::Vocab::load(m->impl_->file()));
    const model::Hparams& hp = m->impl_->hparams();
    if (!params.vocab_only && m->tok_->vocab().size() != hp.n_vocab)
        throw Error(ErrorCode::BadModel, path + ": the vocabulary has " + std::to_string(m->tok_->vocab().size()) +
                                             " tokens, token_embd.weight has " + std::to_string(hp.n_vocab) + " rows");
    ModelInfo& i = m->info_;
    i.arch = hp.arch;
    i.name = hp.name;
    i.file = path;
    i.n_vocab = params.vocab_only ? m->tok_->vocab().size() : hp.n_vocab;
    i.n_ctx_train = hp.n_ctx_train;
    i.n_embd = hp.n_embd;
    i.n_layer = hp.n_layer;
    i.n_head = hp.n_head;
    i.n_head_kv = hp.n_head_kv;
    i.n_params = m->impl_->n_params();
    i.size = m->impl_->weight_bytes();
    i.type = params.vocab_only ? "" : majority_type(m->impl_->file());
    i.vocab_only = params.vocab_only;
    return m;
}

std::vector<int32_t> Model::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    vocab::TokenizeOptions o;
    o.add_bos = o.add_eos = add_special;
    o.parse_special = parse_special;
    return tok_->tokenize(text, o);
}

std::string Model::token_to_piece(int32_t token, bool special) const {
    if (!tok_->vocab().valid(token))
        throw Error(ErrorCode::InvalidArgument, "token " + std::to_string(token) + " outside the vocabulary");
    return vocab::token_to_piece(tok_->vocab(), token, special);
}

std::string Model::detokenize(std::span<const int32_t> tokens, bool special) const {
    for (int32_t t : tokens)
        if (!tok_->vocab().valid(t)) throw Error(ErrorCode::InvalidArgument, "token " + std::to_string(t) + " outside the vocabulary");
    return vocab::detokenize(tok_->vocab(), tokens, special);
}

bool Model::is_eog(int32_t token) const {
    const vocab::Vocab& v = tok_->vocab();
    if (!v.valid(token)) return false;
    if (token == v.eos() || token == v.eot()) return true;
    for (const char* t : kEogTexts)
        if (v.text(token) == t) return true;
    return false;
}

int32_t Model::bos() const { return tok_->vocab().bos(); }
bool Model::adds_bos() const { return tok_->vocab().add_bos() && tok_->vocab().bos() >= 0; }

std::string Model::chat_template() const {
    const gguf::Value* v = impl_->file().find("tokenizer.chat_template");
    if (v && v->type() == gguf::ValueType::STRING) return v->as_string();
    const model::ArchSpec* arch = impl_->arch();
    return arch ? std::string(arch->chat_format) : std::string();
}

ChatTemplateOptions Model::chat_template_options() const {
    const vocab::Vocab& v = tok_->vocab();
    ChatTemplateOptions o;
    if (v.valid(v.bos())) o.bos_token = v.text(v.bos());
    if (v.valid(v.eos())) o.eos_token = v.text(v.eos());
    o.drop_leading_bos = adds_bos();
    return o;
}

Detokenizer::Detokenizer(std::shared_ptr<const Model> model, bool special)
    : model_(std::move(model)), special_(special), stream_(std::make_unique<vocab::Utf8Stream>()) {}
Detokenizer::~Detokenizer() = default;
Detokenizer::Detokenizer(Detokenizer&&) noexcept = default;
Detokenizer& Detokenizer::operator=(Detokenizer&&) noexcept = default;

std::string Detokenizer::push(int32_t token) { return stream_->push(model_->token_to_piece(token, special_)); }
std::string Detokenizer::flush() { return stream_->flush(); }

namespace {

std::shared_ptr<const model::Model> runnable(const Model& m) {
    if (m.info().vocab_only)
        throw Error(ErrorCode::InvalidArgument, m.info().file + ": the model was loaded vocab_only: it has no weights to run a context");
    return runtime::EngineAccess::model_ptr(m);
}

}  // namespace

Context::Context(std::shared_ptr<const Model> model, const ContextParams& params)
    : model_(std::move(model)), impl_(std::make_unique<runtime::Context>(runnable(*model_), params)) {}
Context::~Context() = default;

void Context::decode(std::span<const BatchToken> batch) { impl_->decode(batch); }
std::span<const float> Context::logits(size_t i) const { return impl_->logits(i); }
size_t Context::n_outputs() const { return impl_->n_outputs(); }
int64_t Context::n_ctx() const { return impl_->n_ctx(); }
int64_t Context::n_ctx_seq() const { return impl_->kv().seq_cells(); }
void Context::seq_rm(int32_t seq, int32_t p0, int32_t p1) { impl_->kv().seq_rm(seq, p0, p1); }
void Context::seq_cp(int32_t src, int32_t dst, int32_t p0, int32_t p1) { impl_->kv().seq_cp(src, dst, p0, p1); }
int32_t Context::seq_pos_max(int32_t seq) const { return impl_->kv().seq_pos_max(seq); }
void Context::clear() { impl_->kv().clear(); }
bool Context::flash_attn() const { return impl_->flash_attn(); }

void Context::set_profiling(bool on) { impl_->set_profiling(on); }

std::vector<OpProfile> Context::last_profile() const { return impl_->last_profile(); }

std::vector<std::pair<std::string, int64_t>> Context::graph_nodes_per_device() const {
    std::vector<std::pair<std::string, int64_t>> out;
    if (impl_->graphs_built() == 0) return out;
    for (const Scheduler::Split& sp : impl_->scheduler().splits()) {
        const std::string dev = sp.backend->name();
        auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == dev; });
        if (it == out.end()) it = out.insert(out.end(), {dev, 0});
        for (const Tensor* n : sp.nodes) it->second += op_is_view(n->op) ? 0 : 1;
    }
    return out;
}

}  // namespace tessel
