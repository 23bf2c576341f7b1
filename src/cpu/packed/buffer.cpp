#include "cpu/packed/buffer.hpp"
#include "core/env.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "core/cpu_features.hpp"
#include "cpu/packed/kernel.hpp"
#include "cpu/packed/mul_mat.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu::packed {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'L', 'P', 'A', 'C', 'K', '\0'};
constexpr size_t kAlign = 64;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

int64_t matrices(const Tensor& t) { return t.ne[2] * t.ne[3]; }

/// The formats t would be packed in (one per distinct format of its chain), empty if none.
std::vector<const Format*> formats_of(const Tensor& t) {
    std::vector<const Format*> out;
    if (t.view_src || !packed_enabled()) return out;
    for (const Kernel* k : chain(t.type, usable_cpu_features(), RhsLayout::Packed))
        if (std::find(out.begin(), out.end(), k->format) == out.end() && packable(*k->format, t.ne[0])) out.push_back(k->format);
    if (out.size() > static_cast<size_t>(kMaxSlots)) out.resize(kMaxSlots);
    return out;
}

size_t slot_bytes(const Format& f, const Tensor& t) { return packed_bytes(f, t.ne[1], t.ne[0]) * static_cast<size_t>(matrices(t)); }

size_t layout_bytes(const std::vector<const Format*>& fs, const Tensor& t) {
    size_t n = sizeof(PackedHeader);
    for (const Format* f : fs) n += round_up(slot_bytes(*f, t));
    return n;
}

/// Each matrix's packed form in format f: [K, N] rows of t's GGUF bytes.
void pack_slot(const Format& f, const Tensor& t, const uint8_t* plain, uint8_t* dst) {
    const size_t plain_matrix = static_cast<size_t>(dtype_row_bytes(t.type, t.ne[0]) * t.ne[1]);
    const size_t packed_matrix = packed_bytes(f, t.ne[1], t.ne[0]);
    for (int64_t i = 0; i < matrices(t); ++i)
        f.pack(plain + static_cast<size_t>(i) * plain_matrix, dst + static_cast<size_t>(i) * packed_matrix, t.ne[1], t.ne[0]);
}

class PackedBuffer final : public Buffer {
public:
    PackedBuffer(BufferType& type, size_t size) : Buffer(type, size) {
        data_ = static_cast<uint8_t*>(std::aligned_alloc(kAlign, round_up(std::max<size_t>(size, 1))));
        if (!data_) throw Error(ErrorCode::Io, "cannot allocate a CPU_PACKED buffer of " + std::to_string(size) + " bytes");
    }
    /// Tensors placed here keep dangling data and extra pointers afterwards, as with every buffer.
    ~PackedBuffer() override { std::free(data_); }

    void* base() override { return data_; }

    void init_tensor(Tensor& t, size_t offset) override {
        Buffer::init_tensor(t, offset);
        if (t.view_src || usage() != BufferUsage::Weights) return;
        std::vector<const Format*> fs = formats_of(t);
        if (fs.empty()) return;
        auto rec = std::make_unique<PackedTensor>();
        rec->formats = std::move(fs);
        t.extra = rec.get();
        records_[&t] = std::move(rec);
    }

    void set_tensor(Tensor& t, const void* src, size_t offset, size_t size) override {
        check_range(t, offset, size, "set_tensor");
        PackedTensor* rec = record(t);
        if (!rec) {
            std::memcpy(static_cast<uint8_t*>(t.data) + offset, src, size);
            return;
        }
        const size_t n = t.n_bytes();
        if (offset == 0 && size == n) {
            pack(t, *rec, static_cast<const uint8_t*>(src));
            return;
        }
        if (rec->complete) {  // a partial rewrite of a packed tensor: unpack, patch, repack
            rec->staging.resize(n);
            unpack(t, *rec, rec->staging.data());
            rec->written = {{0, n}};
            rec->complete = false;
        }
        rec->staging.resize(n);
        std::memcpy(rec->staging.data() + offset, src, size);
        add_range(rec->written, offset, offset + size);
        if (rec->written.size() == 1 && rec->written[0].first == 0 && rec->written[0].second == n) {
            std::vector<uint8_t> plain = std::move(rec->staging);
            pack(t, *rec, plain.data());
        }
    }

    void get_tensor(const Tensor& t, void* dst, size_t offset, size_t size) const override {
        check_range(t, offset, size, "get_tensor");
        const PackedTensor* rec = packed_of(t);
        if (!rec) {
            std::memcpy(dst, static_cast<const uint8_t*>(t.data) + offset, size);
        } else if (!rec->complete) {
            if (rec->staging.empty()) std::memset(dst, 0, size);
            else std::memcpy(dst, rec->staging.data() + offset, size);
        } else {
            read_rows(t, *rec, static_cast<uint8_t*>(dst), offset, size);
        }
    }

    void clear(uint8_t value) override { std::memset(data_, value, size()); }

private:
    PackedTensor* record(const Tensor& t) {
        auto it = records_.find(&t);
        return it != records_.end() && t.extra == it->second.get() ? it->second.get() : nullptr;
    }

    static void add_range(std::vector<std::pair<size_t, size_t>>& ranges, size_t b, size_t e) {
        ranges.emplace_back(b, e);
        std::sort(ranges.begin(), ranges.end());
        std::vector<std::pair<size_t, size_t>> merged;
        for (const auto& r : ranges) {
            if (!merged.empty() && r.first <= merged.back().second) merged.back().second = std::max(merged.back().second, r.second);
            else merged.push_back(r);
        }
        ranges = std::move(merged);
    }

    void pack(Tensor& t, PackedTensor& rec, const uint8_t* plain) {
        auto* h = static_cast<PackedHeader*>(t.data);
        std::memset(h, 0, sizeof *h);
        std::memcpy(h->magic, kMagic, sizeof kMagic);
        h->version = kHeaderVersion;
        h->slot_count = static_cast<uint32_t>(rec.formats.size());
        uint64_t at = sizeof(PackedHeader);
        for (size_t s = 0; s < rec.formats.size(); ++s) {
            const Format& f = *rec.formats[s];
            h->slots[s] = {static_cast<uint32_t>(f.id), 0, at, slot_bytes(f, t)};
            pack_slot(f, t, plain, static_cast<uint8_t*>(t.data) + at);
            at += round_up(h->slots[s].size);
        }
        rec.staging.clear();
        rec.staging.shrink_to_fit();
        rec.written.clear();
        rec.complete = true;
    }

    /// GGUF bytes [offset, offset + size) of t from slot 0: unpacks the groups holding the rows.
    static void read_rows(const Tensor& t, const PackedTensor& rec, uint8_t* dst, size_t offset, size_t size) {
        const Format& f = *rec.formats[0];
        const uint8_t* slot = slot_data(t, f);
        const size_t row = static_cast<size_t>(dtype_row_bytes(t.type, t.ne[0]));
        const int64_t N = t.ne[1];
        const size_t packed_matrix = packed_bytes(f, N, t.ne[0]);
        std::vector<uint8_t> rows;
        size_t done = 0;
        while (done < size) {
            const size_t at = offset + done;
            const int64_t global_row = static_cast<int64_t>(at / row);
            const int64_t mat = global_row / N, r = global_row % N;
            const int64_t g0 = r / kGroupRows * kGroupRows;
            const int64_t g1 = std::min<int64_t>(N, g0 + kGroupRows);  // one group at a time
            rows.resize(static_cast<size_t>(g1 - g0) * row);
            f.unpack(slot + static_cast<size_t>(mat) * packed_matrix + group_offset(f, g0, t.ne[0]), rows.data(), g1 - g0, t.ne[0]);
            const size_t from = at - static_cast<size_t>(mat * N + g0) * row;
            const size_t n = std::min(size - done, rows.size() - from);
            std::memcpy(dst + done, rows.data() + from, n);
            done += n;
        }
    }

    static void unpack(const Tensor& t, const PackedTensor& rec, uint8_t* dst) { read_rows(t, rec, dst, 0, t.n_bytes()); }

    uint8_t* data_ = nullptr;
    std::unordered_map<const Tensor*, std::unique_ptr<PackedTensor>> records_;
};

std::atomic<int> g_enabled{-1};  // -1: not decided yet (TESSEL_CPU_PACKED decides)

}  // namespace

const PackedTensor* packed_of(const Tensor& t) {
    if (!t.extra || !t.buffer || &t.buffer->type() != &PackedBufferType::instance() || t.view_src) return nullptr;
    return static_cast<const PackedTensor*>(t.extra);
}

const uint8_t* slot_data(const Tensor& t, const Format& f) {
    const PackedTensor* rec = packed_of(t);
    auto fail = [&](const std::string& what) {
        return Error(ErrorCode::InvalidArgument, "CPU_PACKED tensor " + describe(t) + ": " + what);
    };
    if (!rec) throw fail("not packed");
    if (!rec->complete) throw fail("read before all of its bytes were written (set_tensor)");
    const auto* h = static_cast<const PackedHeader*>(t.data);
    const size_t alloc = packed_alloc_size(t);
    if (std::memcmp(h->magic, kMagic, sizeof kMagic) != 0 || h->version != kHeaderVersion)
        throw fail("damaged header (magic or version)");
    if (h->slot_count == 0 || h->slot_count > static_cast<uint32_t>(kMaxSlots)) throw fail("damaged header (slot count)");
    for (uint32_t s = 0; s < h->slot_count; ++s) {
        const PackedSlot& sl = h->slots[s];
        if (sl.offset % kAlign != 0 || sl.offset < sizeof(PackedHeader) || sl.offset > alloc || sl.size > alloc - sl.offset)
            throw fail("slot " + std::to_string(s) + " lies outside the allocation of " + std::to_string(alloc) + " bytes");
        if (sl.format == static_cast<uint32_t>(f.id)) return static_cast<const uint8_t*>(t.data) + sl.offset;
    }
    throw fail(std::string("no slot in format ") + f.name);
}

size_t packed_alloc_size(const Tensor& t) {
    const std::vector<const Format*> fs = formats_of(t);
    return fs.empty() ? 0 : layout_bytes(fs, t);
}

std::unique_ptr<Buffer> PackedBufferType::alloc_buffer(size_t size) { return std::make_unique<PackedBuffer>(*this, size); }

size_t PackedBufferType::alloc_size(const Tensor& t) const {
    const size_t packed = packed_alloc_size(t);
    return packed ? std::max(packed, t.n_bytes()) : t.n_bytes();
}

PackedBufferType& PackedBufferType::instance() {
    static PackedBufferType t;
    return t;
}

bool PackedBufferType::supports_use(const Tensor& use) const { return supports_node(use); }

bool packed_enabled() {
    int v = g_enabled.load();
    if (v < 0) {
        const auto value = env::get("TESSEL_CPU_PACKED");
        if (value && *value != "0" && *value != "1") env::invalid("TESSEL_CPU_PACKED", *value, "0 (weights stay unpacked) or 1");
        v = value == "0" ? 0 : 1;
        g_enabled.store(v);
    }
    return v == 1;
}

void set_packed_enabled(bool on) { g_enabled.store(on ? 1 : 0); }

}  // namespace tessel::cpu::packed
