#include "model/model.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

#include "model/weights.hpp"
#include "model/llama.hpp"
#include "tessel/errors.hpp"

namespace tessel::model {

Model::Model(gguf::File file, std::vector<Device*> devices) : file_(std::move(file)), devs_(std::move(devices)) {}
Model::~Model() = default;

Tensor* Model::weight(const std::string& name, std::initializer_list<int64_t> ne, bool f32_only) {
    const std::string what = file_.name() + ": tensor '" + name + "'";
    const gguf::TensorInfo* info = file_.find_tensor(name);
    if (!info) throw Error(ErrorCode::BadModel, file_.name() + ": missing tensor '" + name + "'");
    std::array<int64_t, kMaxDims> expected{1, 1, 1, 1};
    std::copy(ne.begin(), ne.end(), expected.begin());
    auto dims = [](const int64_t* d) {  // appended piece by piece: g++ 12 warns falsely (-Wrestrict) on "[" + string
        std::string out = "[";
        for (int i = 0; i < kMaxDims; ++i) out += std::to_string(d[i]) + (i + 1 < kMaxDims ? ", " : "]");
        return out;
    };
    if (!std::equal(expected.begin(), expected.end(), info->ne))
        throw Error(ErrorCode::BadModel, what + " has shape " + dims(info->ne) + ", the hyper-parameters expect " + dims(expected.data()));
    const DType type = info->type;
    if (f32_only && type != DType::F32) throw Error(ErrorCode::BadModel, what + " has type " + dtype_name(type) + ", expected F32");
    if (type == DType::I8 || type == DType::I16 || type == DType::I32 || type == DType::I64)
        throw Error(ErrorCode::BadModel, what + " has the integer type " + std::string(dtype_name(type)) +
                                             ", expected a float or quantized weight type");
    if (!dtype_info(type).supported)
        throw Error(ErrorCode::Unsupported, what + ": type " + std::string(dtype_name(type)) + " is not supported");
    Tensor& t = tensors_.emplace_back();
    t.name = name;
    t.set_shape(type, ne);  // the reader has checked the file's shape against its type's block size
    return &t;
}

std::shared_ptr<const Model> Model::load(const std::string& path, std::vector<Device*> devices, const LoadOptions& options) {
    if (devices.empty() || devices.back()->kind() != DeviceKind::Cpu)
        throw Error(ErrorCode::InvalidArgument, path + ": a model needs a CPU device last in its device list (the fallback)");
    std::shared_ptr<Model> m(new Model(gguf::File::open(path), std::move(devices)));
    Hparams& hp = m->hp_;
    if (options.vocab_only) {  // tokenizer.* keys are all it needs (llama.cpp's vocab-only files: any architecture, no tensors)
        for (auto [key, field] : {std::pair{"general.architecture", &hp.arch}, std::pair{"general.name", &hp.name}})
            if (const gguf::Value* v = m->file_.find(key); v && v->type() == gguf::ValueType::STRING) *field = v->as_string();
        return m;
    }
    hp = read_hparams(m->file_);
    const gguf::TensorInfo* embd = m->file_.find_tensor("token_embd.weight");
    if (!embd) throw Error(ErrorCode::BadModel, path + ": missing tensor 'token_embd.weight'");
    hp.n_vocab = embd->ne[1];
    const int64_t E = hp.n_embd, Dq = hp.n_head * hp.head_dim, Dkv = hp.n_embd_kv(), F = hp.n_ff;
    m->tok_embd_ = m->weight("token_embd.weight", {E, hp.n_vocab});
    m->output_norm_ = m->weight("output_norm.weight", {E}, true);
    m->output_ = m->file_.find_tensor("output.weight") ? m->weight("output.weight", {E, hp.n_vocab}) : m->tok_embd_;
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        LayerWeights w;
        w.attn_norm = m->weight(b + "attn_norm.weight", {E}, true);
        w.wq = m->weight(b + "attn_q.weight", {E, Dq});
        w.wk = m->weight(b + "attn_k.weight", {E, Dkv});
        w.wv = m->weight(b + "attn_v.weight", {E, Dkv});
        w.wo = m->weight(b + "attn_output.weight", {Dq, E});
        w.ffn_norm = m->weight(b + "ffn_norm.weight", {E}, true);
        w.w_gate = m->weight(b + "ffn_gate.weight", {E, F});
        w.w_up = m->weight(b + "ffn_up.weight", {E, F});
        w.w_down = m->weight(b + "ffn_down.weight", {F, E});
        m->layers_.push_back(w);
    }
    try {
        m->place_and_load(options.progress);
    } catch (const Error& e) {  // errors of the placement and loading layers, named by file
        if (std::string_view(e.what()).starts_with(path + ": ") || e.code() == ErrorCode::Device || e.code() == ErrorCode::Environment)
            throw;  // a device that could not start, or a setting, is not about the file
        throw Error(e.code(), path + ": " + e.what());
    }
    return m;
}

// Buffer types are chosen from the nodes that read each weight in a one-token graph (the ops
// and source types of any other batch size are the same).
void Model::place_and_load(const std::function<bool(float)>& progress) {
    Graph probe;
    std::vector<KvLayer> kv;
    for (int64_t il = 0; il < hp_.n_layer; ++il)
        kv.push_back({probe.new_tensor(DType::F16, {hp_.n_embd_kv(), 256}), probe.new_tensor(DType::F16, {hp_.n_embd_kv(), 256})});
    build_llama(probe, *this, kv, ForwardShape{1, 256, 1, true});
    std::map<const Tensor*, std::vector<const Tensor*>> uses;
    for (const Tensor* node : probe.nodes())
        for (const Tensor* src : node->src)
            if (src) uses[src].push_back(node);

    // Flagged before the choice, so a buffer type can tell which sources of a use are weights.
    for (Tensor& t : tensors_) t.flags |= kFlagWeight;
    std::map<BufferType*, std::vector<Tensor*>> by_type;
    for (Tensor& t : tensors_) by_type[&choose_weight_buffer_type(devs_, t, uses[&t])].push_back(&t);
    for (auto& [bt, list] : by_type)
        for (auto& buf : allocate_weights(*bt, list)) buffers_.push_back(std::move(buf));
    uint64_t total = 0, done = 0;
    for (const Tensor& t : tensors_) total += t.n_bytes();
    auto report = [&] {
        if (progress && !progress(total ? static_cast<float>(static_cast<double>(done) / static_cast<double>(total)) : 1.0f))
            throw Error(ErrorCode::Cancelled, file_.name() + ": loading cancelled by the progress callback");
    };
    report();
    for (Tensor& t : tensors_) {
        load_weight(file_, t);
        done += t.n_bytes();
        report();
    }
}

size_t Model::weight_bytes() const {
    size_t n = 0;
    for (const Tensor& t : tensors_) n += t.n_bytes();
    return n;
}

int64_t Model::n_params() const {
    int64_t n = 0;
    for (const Tensor& t : tensors_) n += t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    return n;
}

}  // namespace tessel::model
