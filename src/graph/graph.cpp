#include "graph/graph.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "tessel/errors.hpp"

namespace tessel {

Tensor* Graph::new_tensor(DType type, std::initializer_list<int64_t> ne, std::string name) {
    Tensor& t = tensors_.emplace_back();
    t.name = std::move(name);
    t.set_shape(type, ne);
    return &t;
}

Tensor* Graph::new_node(Op op, DType type, const std::array<int64_t, kMaxDims>& ne, std::initializer_list<Tensor*> srcs) {
    if (srcs.size() > kMaxSrc)
        throw Error(ErrorCode::InvalidArgument, std::string(op_name(op)) + ": too many sources");
    Tensor& t = tensors_.emplace_back();
    t.op = op;
    t.set_shape(type, {ne[0], ne[1], ne[2], ne[3]});
    int i = 0;
    for (Tensor* s : srcs) t.src[i++] = s;
    t.flags = kFlagCompute;
    return &t;
}

Tensor* Graph::new_view(Op op, Tensor* src, const std::array<int64_t, kMaxDims>& ne,
                        const std::array<uint64_t, kMaxDims>& nb, uint64_t offset) {
    Tensor& t = tensors_.emplace_back();
    t.op = op;
    t.type = src->type;
    t.ne = ne;
    t.nb = nb;
    t.src[0] = src;
    // Views of views point at the storage owner, so offsets add up once.
    t.view_src = src->view_src ? src->view_src : src;
    t.view_offset = (src->view_src ? src->view_offset : 0) + offset;
    return &t;
}

void Graph::expand(Tensor* out) {
    visit(out);
}

void Graph::visit(Tensor* t) {
    // Iterative DFS: deep graphs (hundreds of layers) must not exhaust the stack.
    struct Frame {
        Tensor* t;
        int next_src;
    };
    auto listed = [this](const Tensor* x) { return listed_.count(x) != 0; };
    if (listed(t)) return;
    std::vector<Frame> stack{{t, 0}};
    std::unordered_set<const Tensor*> on_stack{t};
    while (!stack.empty()) {
        Frame& f = stack.back();
        if (f.next_src < kMaxSrc) {
            Tensor* s = f.t->src[f.next_src++];
            if (!s || listed(s)) continue;
            if (on_stack.count(s))
                throw Error(ErrorCode::InvalidArgument, "graph has a cycle through " + describe(*s));
            stack.push_back({s, 0});
            on_stack.insert(s);
            continue;
        }
        Tensor* done = f.t;
        stack.pop_back();
        on_stack.erase(done);
        listed_.insert(done);
        (done->op == Op::NONE ? leaves_ : nodes_).push_back(done);
    }
}

namespace {

// FNV-1a over 64-bit words with a final avalanche (splitmix64 finaliser).
struct Hasher {
    uint64_t h = 0xcbf29ce484222325ull;
    void add(uint64_t v) {
        for (int i = 0; i < 8; ++i) {
            h ^= (v >> (8 * i)) & 0xff;
            h *= 0x100000001b3ull;
        }
    }
    uint64_t finish() const {
        uint64_t z = h + 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
};

}  // namespace

uint64_t Graph::uid() const {
    // Sources are identified by their position in leaves()/nodes(), not by address, so a graph
    // rebuilt identically (new Tensor objects) on the same buffers gets the same uid.
    std::unordered_map<const Tensor*, uint64_t> position;
    position.reserve(leaves_.size() + nodes_.size());
    for (size_t i = 0; i < leaves_.size(); ++i) position[leaves_[i]] = i;
    for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i]] = (1ull << 32) | i;
    Hasher hs;
    auto add_tensor = [&](const Tensor* t) {
        hs.add(static_cast<uint64_t>(t->op));
        hs.add(static_cast<uint64_t>(t->type));
        for (int64_t n : t->ne) hs.add(static_cast<uint64_t>(n));
        for (uint64_t n : t->nb) hs.add(n);
        for (int32_t p : t->op_params) hs.add(static_cast<uint32_t>(p));
        hs.add(t->view_offset);
        // A tensor outside this graph's lists (e.g. a scheduler's local copy) counts by address.
        auto where = [&](const Tensor* s) -> uint64_t {
            if (!s) return ~1ull;
            auto it = position.find(s);
            return it != position.end() ? it->second : (reinterpret_cast<uintptr_t>(s) ^ (3ull << 62));
        };
        hs.add(where(t->view_src));
        for (const Tensor* s : t->src) hs.add(where(s));
        hs.add(reinterpret_cast<uintptr_t>(t->buffer));
        hs.add(reinterpret_cast<uintptr_t>(t->data));
    };
    hs.add(leaves_.size());
    for (const Tensor* t : leaves_) add_tensor(t);
    hs.add(nodes_.size());
    for (const Tensor* t : nodes_) add_tensor(t);
    return hs.finish();
}

}  // namespace tessel
