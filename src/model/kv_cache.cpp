#include "model/kv_cache.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/errors.hpp"

namespace tessel::model {
namespace {

constexpr uint16_t kF16Zero = 0x0000, kF16NegInf = 0xfc00;

void check_type(DType t, const Hparams& hp, const char* which) {
    if (t != DType::F16 && t != DType::F32 && t != DType::Q8_0)
        throw Error(ErrorCode::InvalidArgument, std::string("KV cache type ") + dtype_name(t) + " for " + which +
                                                    " is not supported (use f16, f32 or q8_0)");
    if (t == DType::Q8_0 && hp.head_dim % 32 != 0)
        throw Error(ErrorCode::InvalidArgument, std::string("KV cache type q8_0 for ") + which + " needs a head size divisible by 32, the model's is " +
                                                    std::to_string(hp.head_dim));
}

void check_seq(int32_t seq) {
    if (seq < 0 || seq >= KvCache::kMaxSeq)
        throw Error(ErrorCode::InvalidArgument, "sequence id " + std::to_string(seq) + " outside 0.." + std::to_string(KvCache::kMaxSeq - 1));
}

bool in_range(int32_t pos, int32_t p0, int32_t p1) { return pos >= p0 && (p1 < 0 || pos < p1); }

}  // namespace

KvCache::KvCache(const Hparams& hp, int64_t kv_size, DType type_k, DType type_v, BufferType& bt, int32_t n_seq) {
    if (kv_size <= 0) throw Error(ErrorCode::InvalidArgument, "KV cache size must be > 0 cells");
    if (n_seq < 0 || n_seq > kMaxSeq)
        throw Error(ErrorCode::InvalidArgument, "a split KV cache holds 1.." + std::to_string(kMaxSeq) + " sequences, not " + std::to_string(n_seq));
    if (n_seq > 0) {
        range_ = kv_size / n_seq / kSplitAlign * kSplitAlign;
        if (range_ == 0)
            throw Error(ErrorCode::InvalidArgument, "a KV cache of " + std::to_string(kv_size) + " cells split over " + std::to_string(n_seq) +
                                                        " sequences leaves fewer than " + std::to_string(kSplitAlign) + " cells each");
        n_seq_ = n_seq;
    }
    check_type(type_k, hp, "K");
    check_type(type_v, hp, "V");
    cells_.resize(static_cast<size_t>(kv_size));
    const size_t align = bt.alignment();
    size_t total = 0;
    std::vector<size_t> offsets;
    for (int64_t il = 0; il < hp.n_layer; ++il)
        for (int which = 0; which < 2; ++which) {
            Tensor& x = tensors_.emplace_back();
            x.name = (which == 0 ? "cache_k_l" : "cache_v_l") + std::to_string(il);
            x.set_shape(which == 0 ? type_k : type_v, {hp.n_embd_kv(), kv_size});
            offsets.push_back(total);
            total += (bt.alloc_size(x) + align - 1) / align * align;
        }
    buffer_ = bt.alloc_buffer(total);
    buffer_->set_usage(BufferUsage::Compute);
    for (size_t i = 0; i < tensors_.size(); ++i) buffer_->init_tensor(tensors_[i], offsets[i]);
    buffer_->clear(0);
    for (size_t i = 0; i < tensors_.size(); i += 2) layers_.push_back({&tensors_[i], &tensors_[i + 1]});
}

size_t KvCache::bytes() const {
    size_t n = 0;
    for (const Tensor& t : tensors_) n += t.n_bytes();
    return n;
}

void KvCache::find_cells(std::span<const int32_t> pos, std::span<const int32_t> seq, std::span<int64_t> cells) const {
    if (n_seq_ == 0) {
        size_t found = 0;
        for (int64_t c = 0; c < size() && found < cells.size(); ++c)
            if (cells_[static_cast<size_t>(c)].seqs == 0) cells[found++] = c;
        if (found < cells.size())
            throw Error(ErrorCode::ContextFull, "the context is full: " + std::to_string(cells.size()) + " tokens need cells, " +
                                                    std::to_string(found) + " of " + std::to_string(size()) + " are free");
        return;
    }
    for (size_t i = 0; i < cells.size(); ++i) {
        const std::string token = "position " + std::to_string(pos[i]) + " of sequence " + std::to_string(seq[i]);
        if (seq[i] >= n_seq_)
            throw Error(ErrorCode::InvalidArgument, "sequence " + std::to_string(seq[i]) + ": the KV cache is split for sequences 0.." +
                                                        std::to_string(n_seq_ - 1));
        if (pos[i] >= range_)
            throw Error(ErrorCode::ContextFull, "the context is full: " + token + " does not fit in the sequence's " + std::to_string(range_) + " cells");
        const int64_t c = seq[i] * range_ + pos[i];
        if (cells_[static_cast<size_t>(c)].seqs != 0 || std::find(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(i), c) != cells.begin() + static_cast<std::ptrdiff_t>(i))
            throw Error(ErrorCode::InvalidArgument, token + " is already in the cache (remove it with seq_rm first)");
        cells[i] = c;
    }
}

void KvCache::occupy(int64_t c, int32_t pos, int32_t seq) {
    check_seq(seq);
    Cell& cell = cells_.at(static_cast<size_t>(c));
    cell.pos = pos;
    cell.seqs = uint64_t{1} << seq;
}

int64_t KvCache::n_kv() const {
    int64_t used = 0;
    for (int64_t c = size(); c > 0; --c)
        if (cells_[static_cast<size_t>(c - 1)].seqs != 0) {
            used = c;
            break;
        }
    return std::min(size(), std::max<int64_t>(kPad, (used + kPad - 1) / kPad * kPad));
}

void KvCache::fill_mask(std::span<const int32_t> pos, std::span<const int32_t> seq, int64_t n_kv, uint16_t* mask, int64_t n_swa) const {
    for (size_t t = 0; t < pos.size(); ++t) {
        const uint64_t bit = uint64_t{1} << seq[t];
        const int64_t oldest = n_swa > 0 ? int64_t{pos[t]} - n_swa + 1 : INT64_MIN;  // first position in the window
        uint16_t* row = mask + t * static_cast<size_t>(n_kv);
        for (int64_t c = 0; c < n_kv; ++c) {
            const Cell& cell = cells_[static_cast<size_t>(c)];
            row[c] = (cell.seqs & bit) && cell.pos <= pos[t] && cell.pos >= oldest ? kF16Zero : kF16NegInf;
        }
    }
}

void KvCache::seq_rm(int32_t seq, int32_t p0, int32_t p1) {
    if (seq >= 0) check_seq(seq);
    const uint64_t bits = seq < 0 ? ~uint64_t{0} : uint64_t{1} << seq;
    for (Cell& cell : cells_)
        if ((cell.seqs & bits) && in_range(cell.pos, p0, p1)) {
            cell.seqs &= ~bits;
            if (cell.seqs == 0) cell.pos = -1;
        }
}

void KvCache::seq_cp(int32_t src, int32_t dst, int32_t p0, int32_t p1) {
    check_seq(src);
    check_seq(dst);
    if (n_seq_ == 0) {
        for (Cell& cell : cells_)
            if ((cell.seqs >> src & 1) && in_range(cell.pos, p0, p1)) cell.seqs |= uint64_t{1} << dst;
        return;
    }
    if (src >= n_seq_ || dst >= n_seq_)
        throw Error(ErrorCode::InvalidArgument, "seq_cp " + std::to_string(src) + " -> " + std::to_string(dst) +
                                                    ": the KV cache is split for sequences 0.." + std::to_string(n_seq_ - 1));
    if (src == dst) return;
    for (int64_t p = 0; p < range_; ++p) {
        const Cell& from = cells_[static_cast<size_t>(src * range_ + p)];
        if (!(from.seqs >> src & 1) || !in_range(from.pos, p0, p1)) continue;
        const int64_t to = dst * range_ + from.pos;  // a split range holds position p in its cell p
        copy_rows(src * range_ + p, to);
        cells_[static_cast<size_t>(to)] = Cell{from.pos, uint64_t{1} << dst};
    }
}

void KvCache::copy_rows(int64_t from, int64_t to) {
    std::vector<uint8_t> row;
    for (Tensor& t : tensors_) {
        const size_t bytes = t.nb[1];
        row.resize(bytes);
        buffer_->get_tensor(t, row.data(), static_cast<size_t>(from) * bytes, bytes);
        buffer_->set_tensor(t, row.data(), static_cast<size_t>(to) * bytes, bytes);
    }
}

int32_t KvCache::seq_pos_max(int32_t seq) const {
    check_seq(seq);
    int32_t best = -1;
    for (const Cell& cell : cells_)
        if (cell.seqs >> seq & 1) best = std::max(best, cell.pos);
    return best;
}

void KvCache::clear() {
    for (Cell& cell : cells_) cell = Cell{};
}

}  // namespace tessel::model
