// The KV cache: per layer a K and a V tensor of kv_size rows ("cells") of n_embd_kv elements,
// plus per cell the position it holds and the set of sequences that share it.
//
// A token's K/V rows go to a free cell (any free cell, lowest index first); a graph attends to
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

    /// Allocates K and V for every layer (types F16, F32 or Q8_0; Q8_0 needs head_dim % 32 == 0)
    /// in one buffer of type `bt` (memory every device of the context reads and writes in place,
    /// e.g. CPU, or NPU0-HOST beside an NPU), cleared. Throws tessel::Error(InvalidArgument) for a
    /// type or size it cannot hold, Error(Io) when memory is short.
    KvCache(const Hparams& hp, int64_t kv_size, DType type_k, DType type_v, BufferType& bt);

    int64_t size() const { return static_cast<int64_t>(cells_.size()); }
    const std::vector<KvLayer>& layers() const { return layers_; }
    DType type_k() const { return layers_.front().k->type; }
    DType type_v() const { return layers_.front().v->type; }
    /// Bytes of K and V data.
    size_t bytes() const;

    /// Fills `cells` with free cells, lowest first (allocates nothing). Throws
    /// tessel::Error(ContextFull) when fewer than cells.size() are free.
    void find_free(std::span<int64_t> cells) const;
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
    /// Makes sequence dst share src's cells with position in [p0, p1) (p1 < 0: to the end).
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
    std::vector<Cell> cells_;
    std::vector<KvLayer> layers_;
    std::deque<Tensor> tensors_;
    std::unique_ptr<Buffer> buffer_;
};

}  // namespace tessel::model
