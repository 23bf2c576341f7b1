#include "model/model.hpp"

#include <algorithm>
#include <map>

#include "backend/weights.hpp"
#include "model/llama.hpp"
#include "tessel/errors.hpp"

namespace tessel::model {

Model::Model(gguf::File file, std::vector<Device*> devices) : file_(std::move(file)), devs_(std::move(devices)) {}
Model::~Model() = default;

Tensor* Model::weight(const std::string& name, std::initializer_list<int64_t> ne, bool f32_only) {
    const gguf::TensorInfo* info = file_.find_tensor(name);
    if (!info) throw Error(ErrorCode::BadModel, file_.name() + ": missing tensor '" + name + "'");
    // The shape is compared before a tensor is made of it: the hyper-parameters may ask for one
    // the file's type cannot hold (a row that is not a whole number of blocks).
    int64_t want[kMaxDims] = {1, 1, 1, 1};
    std::copy(ne.begin(), ne.end(), want);
    auto dims = [](const int64_t* d) {
        return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ", " + std::to_string(d[3]) + "]";
    };
    if (!std::equal(want, want + kMaxDims, info->ne))
        throw Error(ErrorCode::BadModel, file_.name() + ": tensor '" + name + "' has shape " + dims(info->ne) + ", expected " +
                                             dims(want) + " " + dtype_name(info->type));
    if (f32_only && info->type != DType::F32)
        throw Error(ErrorCode::BadModel, file_.name() + ": tensor '" + name + "' has type " + dtype_name(info->type) +
                                             ", expected F32");
    // Integer types are supported by the kernels, but an integer table makes GET_ROWS give integer
    // rows the norms refuse (an error that named neither file nor tensor): no weight is an integer.
    if (info->type == DType::I8 || info->type == DType::I16 || info->type == DType::I32 || info->type == DType::I64)
        throw Error(ErrorCode::BadModel, file_.name() + ": tensor '" + name + "' has type " + dtype_name(info->type) +
                                             ", expected a float or quantized type");
    require_supported(info->type, file_.name() + ": tensor '" + name + "'");
    Tensor& t = tensors_.emplace_back();
    t.name = name;
    t.set_shape(info->type, ne);
    return &t;
}

std::shared_ptr<const Model> Model::load(const std::string& path, std::vector<Device*> devices) {
    if (devices.empty() || devices.back()->kind() != DeviceKind::Cpu)
        throw Error(ErrorCode::InvalidArgument, path + ": a model needs a CPU device last in its device list (the fallback)");
    std::shared_ptr<Model> m(new Model(gguf::File::open(path), std::move(devices)));
    Hparams& hp = m->hp_;
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
    m->place_and_load();
    return m;
}

// Buffer types are chosen from the nodes that read each weight in a one-token graph (the ops
// and source types of any other batch size are the same).
void Model::place_and_load() {
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
    for (Tensor& t : tensors_) load_weight(file_, t);
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
