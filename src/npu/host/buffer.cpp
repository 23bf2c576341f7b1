#include "npu/host/buffer.hpp"

#include <algorithm>
#include <cstring>

#include "npu/host/device.hpp"
#include "npu/host/session.hpp"
#include "npu/host/tiled.hpp"
#include "npu/host/translate.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

/// Whether buffer type `bt` would store t tiled in a Weights buffer.
bool tiles(const NpuBufferType& bt, const Tensor& t) { return !bt.is_host() && would_tile(t); }

/// Adds [b, e) to sorted, merged ranges.
void add_range(std::vector<std::pair<size_t, size_t>>& ranges, size_t b, size_t e) {
    ranges.emplace_back(b, e);
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<size_t, size_t>> merged;
    for (const auto& r : ranges) {
        if (!merged.empty() && r.first <= merged.back().second) merged.back().second = std::max(merged.back().second, r.second);
        else merged.push_back(r);
    }
    ranges = std::move(merged);
}

}  // namespace

bool would_tile(const Tensor& t) { return (t.flags & kFlagWeight) && !t.view_src && tiled::is_tileable(t.type); }

bool NpuBufferType::supports_use(const Tensor& use) const {
    return host_ || device_supports(use, device_.budget());
}

std::string NpuBufferType::name() const { return device_.name() + (host_ ? "-HOST" : ""); }

size_t NpuBufferType::max_size() const {
    return static_cast<size_t>(std::min<uint64_t>(uint64_t{1} << 31, device_.config().max_mapped / 4));
}

std::unique_ptr<Buffer> NpuBufferType::alloc_buffer(size_t size) {
    if (size > max_size())
        throw Error(ErrorCode::InvalidArgument, name() + ": a buffer of " + std::to_string(size) + " bytes exceeds the " +
                                                    std::to_string(max_size()) + "-byte limit of one device mapping (a quarter of TESSEL_NPU_VMEM, at most 2 GiB)");
    return std::make_unique<NpuBuffer>(*this, size);
}

size_t NpuBufferType::alloc_size(const Tensor& t) const {
    return tiles(*this, t) ? tiled::tiled_size(t.type, t.ne) : t.n_bytes();
}

NpuBuffer::NpuBuffer(NpuBufferType& type, size_t size) : Buffer(type, size), npu_type_(type) {
    shm_ = std::make_unique<ShmBuffer>(type.name(), size);
    type.device().session().map(*shm_, wire_flags());
    for (const auto& peer : type.device().peers()) map_on(peer->session());  // a group's ranks 1..n-1
}

NpuBuffer::~NpuBuffer() {
    for (Session* s : peers_) s->unmap(*shm_);
    npu_type_.device().session().unmap(*shm_);
}

void NpuBuffer::map_on(Session& session) const {
    if (&session == &npu_type_.device().session()) return;
    std::lock_guard lock(peers_mu_);
    if (std::find(peers_.begin(), peers_.end(), &session) != peers_.end()) return;
    session.map(*shm_, wire_flags());
    peers_.push_back(&session);
}

uint32_t NpuBuffer::wire_flags() const {
    uint32_t f = npu_type_.is_host() ? TSL_NPU_BUF_HOST : 0;
    if (usage() == BufferUsage::Weights) f |= TSL_NPU_BUF_WEIGHTS;
    return f;
}

void NpuBuffer::init_tensor(Tensor& t, size_t offset) {
    Buffer::init_tensor(t, offset);
    if (usage() != BufferUsage::Weights || !tiles(npu_type_, t)) return;
    auto rec = std::make_unique<TiledTensor>();
    rec->device_bytes = tiled::tiled_size(t.type, t.ne);
    t.extra = rec.get();
    tiled_[&t] = std::move(rec);
}

const TiledTensor* NpuBuffer::tiled(const Tensor& t) const {
    auto it = tiled_.find(&t);
    return it != tiled_.end() && t.extra == it->second.get() && t.buffer == this ? it->second.get() : nullptr;
}

void NpuBuffer::repack_from(Tensor& t, TiledTensor& rec, const uint8_t* plain) {
    tiled::repack(t.type, t.ne, plain, static_cast<uint8_t*>(t.data));
    rec.complete = true;
    rec.written.clear();
    rec.staging.clear();
    rec.staging.shrink_to_fit();
}

void NpuBuffer::set_tensor(Tensor& t, const void* src, size_t offset, size_t size) {
    check_range(t, offset, size, "set_tensor");
    TiledTensor* rec = tiled(t) ? tiled_.at(&t).get() : nullptr;
    if (!rec) {
        std::memcpy(static_cast<uint8_t*>(t.data) + offset, src, size);
        return;
    }
    const size_t n = t.n_bytes();
    if (offset == 0 && size == n) return repack_from(t, *rec, static_cast<const uint8_t*>(src));
    if (size == 0) return;
    if (rec->complete) {  // a partial rewrite: unpack into staging, patch, repack below
        rec->staging.resize(n);
        tiled::unpack(t.type, t.ne, static_cast<const uint8_t*>(t.data), 0, n, rec->staging.data());
        rec->written = {{0, n}};
        rec->complete = false;
    }
    rec->staging.resize(n);  // zero-filled the first time
    std::memcpy(rec->staging.data() + offset, src, size);
    add_range(rec->written, offset, offset + size);
    if (rec->written.size() == 1 && rec->written[0] == std::pair<size_t, size_t>{0, n}) {
        const std::vector<uint8_t> plain = std::move(rec->staging);
        repack_from(t, *rec, plain.data());
    }
}

void NpuBuffer::get_tensor(const Tensor& t, void* dst, size_t offset, size_t size) const {
    check_range(t, offset, size, "get_tensor");
    const TiledTensor* rec = tiled(t);
    if (!rec) std::memcpy(dst, static_cast<const uint8_t*>(t.data) + offset, size);
    else if (!rec->complete && !rec->staging.empty()) std::memcpy(dst, rec->staging.data() + offset, size);
    else tiled::unpack(t.type, t.ne, static_cast<const uint8_t*>(t.data), offset, size, static_cast<uint8_t*>(dst));
}

void NpuBuffer::clear(uint8_t value) { std::memset(shm_->data(), value, this->size()); }

const NpuBuffer* npu_buffer_of(const Tensor& t) {
    return dynamic_cast<const NpuBuffer*>(t.buffer);
}

const TiledTensor* tiled_of(const Tensor& t) {
    const NpuBuffer* b = t.extra ? npu_buffer_of(t) : nullptr;
    return b ? b->tiled(t) : nullptr;
}

bool reads_tiled(const Tensor& t) {
    const Tensor* owner = &t;
    while (owner->view_src) owner = owner->view_src;
    return tiled_of(*owner) != nullptr;
}

bool stored_tiled(const Tensor& t) { return tiled_of(t) || (!t.buffer && would_tile(t)); }

}  // namespace tessel::npu
