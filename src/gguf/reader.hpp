// The validating GGUF reader: maps a file, checks every field against the bytes that remain
// before allocating anything, and exposes metadata, tensor infos and zero-copy tensor data.
//
// Format: GGUF v2 and v3, little-endian (ggml docs/gguf.md; constants in gguf/format.hpp).
// Every defect is reported as tessel::Error with one GGUF ErrorCode per category (see
// include/tessel/errors.hpp); the message starts with the file name and names the key or tensor.
// Tensor types tessel cannot compute with (e.g. IQ2_XXS) load fine; only unknown ids fail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "gguf/value.hpp"

namespace tessel::gguf {

/// One tensor as declared in the file's tensor-info table.
struct TensorInfo {
    std::string name;
    DType type;
    uint32_t n_dims;  ///< 1..4
    int64_t ne[4];    ///< elements per dimension, ne[0] innermost; unused dims are 1
    uint64_t offset;  ///< bytes, relative to the start of the data section (File::data_offset)
    uint64_t size;    ///< bytes of data

    /// Total number of elements (product of ne).
    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

namespace detail {
struct ParsedFile;
}

namespace detail {
/// Test hook: called by File::open with the path once the file is parsed (nullptr: none). Tests
/// use it to change the file between parsing and reading weights, deterministically.
void set_after_parse_hook(void (*hook)(const std::string& path));
}  // namespace detail

/// A parsed, fully validated GGUF file. Move-only; an opened file stays mapped until destroyed.
class File {
public:
    /// Maps `path` read-only and validates it completely.
    /// Throws tessel::Error(Io) when the file cannot be opened or mapped, and tessel::Error with a
    /// GGUF ErrorCode when its contents are malformed.
    static File open(const std::string& path);

    /// Validates `size` bytes at `data` without copying them; the caller keeps them alive (and
    /// unchanged) while the File and pointers from tensor_data() are in use. `name` is used in
    /// error messages. Throws tessel::Error with a GGUF ErrorCode when malformed.
    static File from_memory(const void* data, size_t size, std::string name);

    File(File&& other) noexcept;
    File& operator=(File&& other) noexcept;
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    ~File();

    /// The path given to open(), or the name given to from_memory().
    const std::string& name() const { return name_; }
    /// Format version: 2 or 3.
    uint32_t version() const { return version_; }
    /// Alignment of the data section and of each tensor's offset, bytes (general.alignment or 32).
    uint64_t alignment() const { return alignment_; }
    /// Byte offset of the data section from the start of the file.
    uint64_t data_offset() const { return data_offset_; }
    /// Size of the whole file in bytes.
    uint64_t file_size() const { return size_; }

    /// Metadata entries in file order.
    const std::vector<KeyValue>& metadata() const { return metadata_; }
    /// The value of `key`, or nullptr when absent.
    const Value* find(std::string_view key) const;

    /// Tensor infos in file order.
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    /// The tensor called `name`, or nullptr when absent.
    const TensorInfo* find_tensor(std::string_view name) const;

    /// Pointer to the tensor's first byte inside the mapping (valid for info.size bytes).
    /// `info` must come from this File's tensors(). Reading it faults (SIGBUS) if the file has
    /// been truncated since open(): loaders use read_tensor().
    const uint8_t* tensor_data(const TensorInfo& info) const { return data_ + data_offset_ + info.offset; }

    /// The tensor's info.size bytes, copied into `out` (resized). An opened file is read with
    /// pread, not through its mapping, so a file truncated since open() gives tessel::Error(Io)
    /// naming the file, the tensor and where the file now ends (instead of a SIGBUS); a
    /// from_memory() file is copied from memory. `info` must come from this File's tensors().
    void read_tensor(const TensorInfo& info, std::vector<uint8_t>& out) const;

private:
    File(const uint8_t* data, size_t size, bool owns_mapping, std::string name);
    void adopt(detail::ParsedFile&& parsed);
    void release() noexcept;

    std::string name_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    bool owns_mapping_ = false;  ///< data_ is an mmap this File must munmap
    int fd_ = -1;                ///< the opened file (read_tensor), -1 for from_memory()

    uint32_t version_ = 0;
    uint64_t alignment_ = 0;
    uint64_t data_offset_ = 0;
    std::vector<KeyValue> metadata_;
    std::map<std::string, size_t, std::less<>> key_index_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace tessel::gguf
