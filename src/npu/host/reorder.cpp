#include "npu/host/reorder.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <unordered_map>

#include "backend/buffer.hpp"
#include "graph/op.hpp"

namespace tessel::npu {
namespace {

// A byte range of one storage: a buffer (absolute addresses) or an unallocated owner (offsets).
struct Bytes {
    const void* storage = nullptr;
    uint64_t begin = 0, end = 0;
    bool operator==(const Bytes&) const = default;
};

Bytes bytes_of(const Tensor& t) {
    const Tensor& o = t.view_src ? *t.view_src : t;
    const uint64_t off = t.view_src ? t.view_offset : 0;
    const uint64_t n = t.n_bytes();
    if (o.buffer && o.data) {
        const uint64_t at = reinterpret_cast<uintptr_t>(o.data) + off;
        return {o.buffer, at, at + n};
    }
    return {&o, off, off + n};
}

bool overlap(const Bytes& a, const Bytes& b) { return a.storage == b.storage && a.begin < b.end && b.begin < a.end; }

// What a node reads (its sources) and writes (itself); a view op computes nothing.
struct Access {
    std::array<Bytes, kMaxSrc> reads{};
    int n_reads = 0;
    Bytes write;
    bool writes = false;
};

Access access_of(const Tensor& n) {
    Access a;
    if (op_is_view(n.op)) return a;
    for (const Tensor* s : n.src)
        if (s) a.reads[a.n_reads++] = bytes_of(*s);
    a.write = bytes_of(n);
    a.writes = true;
    return a;
}

bool reads_overlap(const Access& a, const Bytes& b) {
    return std::any_of(a.reads.begin(), a.reads.begin() + a.n_reads, [&](const Bytes& r) { return overlap(r, b); });
}

// Two reads never conflict; a write conflicts with any overlapping read or write.
bool conflict(const Access& passed, const Access& moved) {
    if (passed.writes && (reads_overlap(moved, passed.write) || (moved.writes && overlap(moved.write, passed.write)))) return true;
    return moved.writes && reads_overlap(passed, moved.write);
}

bool reads(const Tensor& n, const Tensor& t) { return std::find(n.src.begin(), n.src.end(), &t) != n.src.end(); }

bool is_weight(const Tensor& t) {
    const Tensor& o = t.view_src ? *t.view_src : t;
    return (o.flags & kFlagWeight) || (o.buffer && o.buffer->usage() == BufferUsage::Weights);
}

bool is_matmul(const Tensor& t) { return t.op == Op::MUL_MAT || t.op == Op::MUL_MAT_ID; }

// The fusion patterns: may consumer c be fused with producer p (p a source of c)?
bool fusable(const Tensor& p, const Tensor& c) {
    switch (c.op) {
        case Op::MUL: return p.op == Op::RMS_NORM;
        case Op::ADD: {
            const Tensor* other = c.src[0] == &p ? c.src[1] : c.src[0];
            return p.op == Op::MUL_MAT && other && is_weight(*other);
        }
        case Op::GLU: return p.op == Op::MUL_MAT;
        default: return false;
    }
}

bool shares_input(const Tensor& a, const Tensor& b) {
    if (a.op != b.op || !is_matmul(a)) return false;
    auto same = [](const Tensor* x, const Tensor* y) { return x == y || (x && y && bytes_of(*x) == bytes_of(*y)); };
    return same(a.src[1], b.src[1]) && (a.op != Op::MUL_MAT_ID || same(a.src[2], b.src[2]));
}

struct Item {
    Tensor* node;
    bool glued;  // part of the chain the node before it belongs to
};

// May the nodes [from, from + len) move to position `to` (< from), passing [to, from)?
bool can_pass(const std::vector<Item>& v, size_t to, size_t from, size_t len) {
    for (size_t m = from; m < from + len; ++m) {
        const Access moved = access_of(*v[m].node);
        for (size_t k = to; k < from; ++k)
            if (reads(*v[m].node, *v[k].node) || conflict(access_of(*v[k].node), moved)) return false;
    }
    return true;
}

size_t lowest(size_t j) { return j + 1 >= kReorderWindow ? j + 1 - kReorderWindow : 0; }

// Step 1: a consumer moves up to its producer when the producer is its latest source.
size_t join_chains(std::vector<Item>& v) {
    std::unordered_map<const Tensor*, int> readers;
    for (const Item& it : v) {
        const auto& src = it.node->src;
        for (auto s = src.begin(); s != src.end(); ++s)
            if (*s && std::find(src.begin(), s, *s) == s) ++readers[*s];  // a node reading t twice is one reader
    }
    size_t moved = 0;
    for (size_t c = 1; c < v.size(); ++c) {
        const Tensor& consumer = *v[c].node;
        size_t p = c;
        for (size_t k = c; k-- > lowest(c);)
            if (reads(consumer, *v[k].node)) {
                p = k;
                break;
            }
        if (p == c) continue;
        const Tensor& producer = *v[p].node;
        if (!fusable(producer, consumer) || readers[&producer] != 1 || (producer.flags & kFlagOutput)) continue;
        if (p + 1 < c && (v[p + 1].glued || !can_pass(v, p + 1, c, 1))) continue;
        if (p + 1 < c) {
            std::rotate(v.begin() + static_cast<std::ptrdiff_t>(p + 1), v.begin() + static_cast<std::ptrdiff_t>(c),
                        v.begin() + static_cast<std::ptrdiff_t>(c + 1));
            ++moved;
        }
        v[p + 1].glued = true;
    }
    return moved;
}

// Step 2: a matmul (with its chain) moves to the nearest earlier matmul sharing its input.
size_t stack_matmuls(std::vector<Item>& v) {
    size_t moved = 0;
    for (size_t j = 1; j < v.size(); ++j) {
        if (v[j].glued || !is_matmul(*v[j].node)) continue;
        size_t len = 1;
        while (j + len < v.size() && v[j + len].glued) ++len;
        size_t partner = j;
        for (size_t k = j; k-- > lowest(j);)
            if (!v[k].glued && shares_input(*v[k].node, *v[j].node)) {
                partner = k;
                break;
            }
        if (partner == j) continue;
        size_t to = partner + 1;
        while (to < j && v[to].glued) ++to;
        if (to == j || !can_pass(v, to, j, len)) continue;
        std::rotate(v.begin() + static_cast<std::ptrdiff_t>(to), v.begin() + static_cast<std::ptrdiff_t>(j),
                    v.begin() + static_cast<std::ptrdiff_t>(j + len));
        moved += len;
        j += len - 1;  // [to + len, j + len) now holds the nodes passed, already seen
    }
    return moved;
}

}  // namespace

size_t reorder_nodes(std::vector<Tensor*>& nodes) {
    std::vector<Item> v;
    v.reserve(nodes.size());
    for (Tensor* n : nodes) v.push_back({n, false});
    const size_t moved = join_chains(v) + stack_matmuls(v);
    for (size_t i = 0; i < v.size(); ++i) nodes[i] = v[i].node;
    return moved;
}

}  // namespace tessel::npu
