// The KV cache: per layer a K and a V tensor of kv_size rows ("cells") of n_embd_kv elements,
// plus per cell the position it holds and the set of sequences that share it.
//
// Unified (the default): a token's K/V rows go to a free cell (any free cell, lowest index first).
// Split into n_seq ranges: sequence s owns cells [s·R, (s+1)·R) (R = size / n_seq rounded down to
// a multiple of kSplitAlign) and position p of s is cell s·R + p, so a sequence's cells sit where
// they would sit were it alone, whatever the other sequences do: kernels that walk cells in tiles
// then give each sequence the same result in any batch. A graph attends to
// the prefix of n_kv() cells that covers every used cell, rounded up to kPad, so the graph's
// shapes (and uid) stay the same for many steps. Token (pos p, seq s) may attend cell c when c
// holds a position <= p of sequence s (and, on sliding-window layers, > p - n_swa); every other
// cell in the prefix is masked with -inf. Sliding-window layers keep every cell too (no
// separate smaller cache): simpler, at the cost of the memory of the cells outside the window.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "model/hparams.hpp"
#include "model/arch.hpp"

namespace tessel::model {

class KvCache {
public:
    static constexpr int64_t kPad = 256;  ///< n_kv() granularity, cells
    static constexpr int32_t kMaxSeq = 64;  ///< sequence ids are 0 .. kMaxSeq-1
    static constexpr int64_t kSplitAlign = 32;  ///< a split range's cells (a multiple of the attention kernels' key tiles)

    /// Allocates K and V for every layer (types F16, F32 or Q8_0; Q8_0 needs head_dim % 32 == 0)
    /// in one buffer of type `bt` (memory every device of the context reads and writes in place,
    /// e.g. CPU, or NPU0-HOST beside an NPU), cleared. Throws tessel::Error(InvalidArgument) for a
    /// type or size it cannot hold, Error(Io) when memory is short. n_seq > 0 splits the cells
    /// into n_seq ranges (above), 1..kMaxSeq, each at least kSplitAlign cells (else InvalidArgument).
    KvCache(const Hparams& hp, int64_t kv_size, DType type_k, DType type_v, BufferType& bt, int32_t n_seq = 0);

    int64_t size() const { return static_cast<int64_t>(cells_.size()); }
    const std::vector<KvLayer>& layers() const { return layers_; }
    DType type_k() const { return layers_.front().k->type; }
    DType type_v() const { return layers_.front().v->type; }
    /// Bytes of K and V data.
    size_t bytes() const;

    /// Cells of one sequence: a split range's R, else size().
    int64_t seq_cells() const { return n_seq_ > 0 ? range_ : size(); }
    /// Fills cells[i] with the cell for token (pos[i], seq[i]) (allocates nothing). Unified: free
    /// cells, lowest first; throws tessel::Error(ContextFull) when fewer are free. Split: s·R + p;
    /// throws ContextFull when p >= R, InvalidArgument when that cell already holds a position of
    /// s or two tokens want it.
    void find_cells(std::span<const int32_t> pos, std::span<const int32_t> seq, std::span<int64_t> cells) const;
    /// Marks cell c as holding position pos of sequence seq (c must be free).
    void occupy(int64_t c, int32_t pos, int32_t seq);
    /// Cells a graph attends to: the used prefix rounded up to kPad, at most size().
    int64_t n_kv() const;
    /// Fills mask [n_kv, n_tokens] (F16 bits, row t for token t) for tokens with these positions
    /// and sequences; with n_swa > 0 a token at position p also may not attend positions
    /// p - n_swa or earlier (a sliding window of n_swa positions, its own included).
    void fill_mask(std::span<const int32_t> pos, std::span<const int32_t> seq, int64_t n_kv, uint16_t* mask, int64_t n_swa = 0) const;

    /// Removes sequence seq's cells with position in [p0, p1) (p1 < 0: to the end); seq < 0:
    /// every sequence. A cell no sequence holds becomes free.
    void seq_rm(int32_t seq, int32_t p0, int32_t p1);
    /// Makes sequence dst hold src's positions in [p0, p1) (p1 < 0: to the end). Unified: the
    /// cells are shared. Split: their K and V rows are copied into dst's range (what dst held at
    /// those positions is replaced).
    void seq_cp(int32_t src, int32_t dst, int32_t p0, int32_t p1);
    /// Largest position held by seq, or -1 when it holds none.
    int32_t seq_pos_max(int32_t seq) const;
    /// Frees every cell.
    void clear();

private:
    struct Cell {
        int32_t pos = -1;
        uint64_t seqs = 0;  ///< bit s: held by sequence s
    };
    void copy_rows(int64_t from, int64_t to);

    std::vector<Cell> cells_;
    int32_t n_seq_ = 0;   ///< split ranges, 0: unified
    int64_t range_ = 0;   ///< cells per range when split
    std::vector<KvLayer> layers_;
    std::deque<Tensor> tensors_;
    std::unique_ptr<Buffer> buffer_;
};

}  // namespace tessel::model
