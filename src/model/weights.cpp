#include "model/weights.hpp"

#include <string>
#include <vector>

#include "tessel/errors.hpp"

namespace tessel {
namespace {

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

BufferType& choose_weight_buffer_type(const std::vector<Device*>& devices, const Tensor& w,
                                      const std::vector<const Tensor*>& uses) {
    if (devices.empty()) throw Error(ErrorCode::InvalidArgument, "weight " + w.name + ": no device to place it on");
    for (Device* dev : devices) {
        std::vector<BufferType*> types = dev->extra_weight_buffer_types();
        types.push_back(&dev->buffer_type());
        for (BufferType* bt : types) {
            bool serves_all = dev->supports_buft(*bt);
            for (const Tensor* u : uses) serves_all = serves_all && bt->supports_use(*u) && dev->supports_op(*u);
            if (serves_all) return *bt;
        }
    }
    return devices.back()->buffer_type();
}

std::vector<std::unique_ptr<Buffer>> allocate_weights(BufferType& bt, const std::vector<Tensor*>& tensors) {
    const size_t align = bt.alignment();
    const size_t max = bt.max_size();
    // Group tensors into buffers: [first, last) ranges with their sizes.
    struct Group {
        size_t first, last, bytes;
    };
    std::vector<Group> groups;
    // Flag first: a buffer type may size a weight by its flag (NPUn stores weights tiled).
    for (Tensor* t : tensors) t->flags |= kFlagWeight;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const size_t need = align_up(bt.alloc_size(*tensors[i]), align);
        if (need > max)
            throw Error(ErrorCode::InvalidArgument, "weight " + describe(*tensors[i]) + " needs " + std::to_string(need) +
                                                        " bytes, more than the largest " + bt.name() + " buffer (" +
                                                        std::to_string(max) + " bytes)");
        if (groups.empty() || groups.back().bytes + need > max) groups.push_back({i, i, 0});
        groups.back().last = i + 1;
        groups.back().bytes += need;
    }
    std::vector<std::unique_ptr<Buffer>> buffers;
    for (const Group& g : groups) {
        auto buf = bt.alloc_buffer(g.bytes);
        buf->set_usage(BufferUsage::Weights);
        size_t offset = 0;
        for (size_t i = g.first; i < g.last; ++i) {
            buf->init_tensor(*tensors[i], offset);
            offset += align_up(bt.alloc_size(*tensors[i]), align);
        }
        buffers.push_back(std::move(buf));
    }
    return buffers;
}

void load_weight(const gguf::File& file, Tensor& t) {
    const gguf::TensorInfo* info = file.find_tensor(t.name);
    const std::string where = file.name() + ": tensor '" + t.name + "'";
    if (!info) throw Error(ErrorCode::InvalidArgument, where + " is missing from the file");
    if (info->type != t.type)
        throw Error(ErrorCode::InvalidArgument, where + " has type " + dtype_name(info->type) + ", expected " + dtype_name(t.type));
    for (int d = 0; d < kMaxDims; ++d)
        if (info->ne[d] != t.ne[d])
            throw Error(ErrorCode::InvalidArgument, where + " has shape " + std::to_string(info->ne[0]) + "x" +
                                                        std::to_string(info->ne[1]) + "x" + std::to_string(info->ne[2]) + "x" +
                                                        std::to_string(info->ne[3]) + ", expected " + describe(t));
    if (!t.buffer) throw Error(ErrorCode::InvalidArgument, where + " has no buffer to load into");
    if (info->size != t.n_bytes())
        throw Error(ErrorCode::InvalidArgument, where + " holds " + std::to_string(info->size) + " bytes, expected " +
                                                    std::to_string(t.n_bytes()));
    std::vector<uint8_t> bytes;  // read, not mapped: a file truncated meanwhile is an error, not a SIGBUS
    file.read_tensor(*info, bytes);
    t.buffer->set_tensor(t, bytes.data(), 0, info->size);
}

}  // namespace tessel
