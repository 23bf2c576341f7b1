#include "model/model.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

#include "model/weights.hpp"
#include "tessel/errors.hpp"

namespace tessel::model {

Model::Model(gguf::File file, std::vector<Device*> devices) : file_(std::move(file)), devs_(std::move(devices)) {}
Model::~Model() = default;

Tensor* Model::weight(const std::string& name, int64_t ne0, int64_t ne1, bool required, bool f32_only) {
    const std::string what = file_.name() + ": tensor '" + name + "'";
    const gguf::TensorInfo* info = file_.find_tensor(name);
    if (!info) {
        if (required) throw Error(ErrorCode::BadModel, file_.name() + ": missing tensor '" + name + "'");
        return nullptr;
    }
    const std::array<int64_t, kMaxDims> expected{ne0, ne1, 1, 1};
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
    if (ne1 == 1) t.set_shape(type, {ne0});  // the reader has checked the file's shape against its type's block size
    else t.set_shape(type, {ne0, ne1});
    return &t;
}

int64_t Model::dim(Dim d) const {
    switch (d) {
        case Dim::One: return 1;
        case Dim::Embd: return hp_.n_embd;
        case Dim::HeadDim: return hp_.head_dim;
        case Dim::Q: return hp_.n_head * hp_.head_dim;
        case Dim::Kv: return hp_.n_embd_kv();
        case Dim::Ff: return hp_.n_ff;
        case Dim::Vocab: return hp_.n_vocab;
        case Dim::RopePairs: return hp_.n_rot / 2;
    }
    return 0;
}

ForwardInputs Model::build_forward(Graph& g, const std::vector<KvLayer>& kv, const ForwardShape& s) const {
    return arch_->build(g, *this, kv, s);
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
    m->arch_ = &find_arch(hp.arch, path);
    const gguf::TensorInfo* embd = m->file_.find_tensor("token_embd.weight");
    if (!embd) throw Error(ErrorCode::BadModel, path + ": missing tensor 'token_embd.weight'");
    hp.n_vocab = embd->ne[1];
    for (const WeightSpec<ModelWeights>& w : m->arch_->model_weights)
        m->w_.*w.slot = m->weight(w.name, m->dim(w.ne0), m->dim(w.ne1), w.required, w.f32);
    if (!m->w_.output) m->w_.output = m->w_.tok_embd;  // tied
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        LayerWeights lw;
        for (const WeightSpec<LayerWeights>& w : m->arch_->layer_weights)
            lw.*w.slot = m->weight(b + w.name, m->dim(w.ne0), m->dim(w.ne1), w.required, w.f32);
        m->layers_.push_back(lw);
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
    build_forward(probe, kv, ForwardShape{1, 256, 1, true});
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
