// The GGUF writer: collects metadata and tensors and serializes a GGUF v2/v3 file (layout in
// gguf/format.hpp; ggml docs/gguf.md). Used by tests to build files and by `tessel quantize`.
//
// The writer only produces files the reader accepts as far as the format is concerned: known
// keys must have their specified types and the alignment must be valid. tessel's reader sanity
// limits (gguf/format.hpp) are not enforced here, so tests can build files that exceed them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "gguf/value.hpp"

namespace tessel::gguf {

namespace detail {
class ByteSink;
}

class Writer {
public:
    /// Sets metadata `key` to `v`: replaces the value of an existing key in place, otherwise
    /// appends (file order = insertion order). Setting general.alignment also sets the alignment.
    /// Throws tessel::Error(InvalidArgument) when a well-known key gets the wrong type or
    /// general.alignment is not a valid alignment.
    void set(std::string key, Value v);

    /// Sets the data alignment in bytes (a power of two, at most 1 MiB) and writes it as the
    /// UINT32 key general.alignment. Throws tessel::Error(InvalidArgument) when invalid.
    void set_alignment(uint32_t alignment);

    /// Current data alignment in bytes (32 unless set).
    uint32_t alignment() const { return alignment_; }

    /// The value set for `key`, or nullptr.
    const Value* find(std::string_view key) const;

    /// Adds a tensor of `type` with dims `ne` (ne[0] innermost, 1..4 dims), copying `bytes` bytes
    /// from `data`. Throws tessel::Error(InvalidArgument) when the name is taken, a dim is <= 0,
    /// ne[0] is not a multiple of the block size, or `bytes` differs from the shape's size.
    void add_tensor(std::string name, DType type, std::vector<int64_t> ne, const void* data, size_t bytes);

    /// The whole file in memory. `version` is 2 or 3 (the layouts are identical; v3 is the
    /// current one). Throws tessel::Error(InvalidArgument) for other versions.
    std::vector<uint8_t> to_bytes(uint32_t version = 3) const;

    /// Writes the file to `path.tmp` and renames it to `path`, so no partial file is left under
    /// `path` on error. Throws tessel::Error(Io) naming the path when writing fails, and
    /// tessel::Error(InvalidArgument) for a bad version or when `path` exists and is not a
    /// regular file (a device, FIFO, folder or symlink is never replaced).
    void write_file(const std::string& path, uint32_t version = 3) const;

    /// Bytes the file will take (the size of to_bytes()).
    uint64_t file_size() const;

private:
    struct PendingTensor {
        std::string name;
        DType type;
        std::vector<int64_t> ne;
        std::vector<uint8_t> data;
    };
    void serialize(detail::ByteSink& sink, uint32_t version) const;

    std::vector<KeyValue> metadata_;
    std::vector<PendingTensor> tensors_;
    uint32_t alignment_ = 32;
};

}  // namespace tessel::gguf
