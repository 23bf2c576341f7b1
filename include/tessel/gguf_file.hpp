// Inspecting a GGUF file without loading a model: its header, metadata (typed values, nested
// arrays included) and tensor table, as `tessel info FILE` shows them.
//
//   const tessel::GgufFile f = tessel::GgufFile::open("model.gguf");
//   for (const tessel::GgufKeyValue& kv : f.metadata())
//       if (kv.value.type() == tessel::GgufType::String) std::puts(kv.value.as_string().c_str());
//   for (const tessel::GgufTensorInfo& t : f.tensors()) std::printf("%s %s\n", t.name.c_str(), t.type.c_str());
//
// The file is validated completely when opened (the checks Model::load applies to the header,
// metadata and tensor table); a GgufFile keeps no mapping of the file: tensor data is not read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/errors.hpp"
#include "tessel/export.h"

namespace tessel {

/// GGUF metadata value types, with the ids the format stores (ggml docs/gguf.md).
enum class GgufType : uint32_t {
    UInt8 = 0,
    Int8 = 1,
    UInt16 = 2,
    Int16 = 3,
    UInt32 = 4,
    Int32 = 5,
    Float32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    UInt64 = 10,
    Int64 = 11,
    Float64 = 12,
};

/// The format's name of a value type: "UINT8", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY", ...
TESSEL_API const char* gguf_type_name(GgufType type);

/// One metadata value: a scalar of its exact stored type, a string, or an array of one element
/// type (arrays may nest). Copies are cheap: an array's items are shared, not copied.
class TESSEL_API GgufValue {
public:
    GgufType type() const;
    /// Any integer type holding a value >= 0, widened to 64 bits. Throws
    /// tessel::Error(InvalidArgument) for other types and negative values.
    uint64_t as_u64() const;
    /// Any integer type whose value fits in int64. Throws tessel::Error(InvalidArgument) otherwise.
    int64_t as_i64() const;
    /// Float32 or Float64, widened to double. Throws tessel::Error(InvalidArgument) otherwise.
    double as_f64() const;
    /// Bool only. Throws tessel::Error(InvalidArgument) otherwise.
    bool as_bool() const;
    /// String only: the bytes as stored (GGUF strings are meant to be UTF-8, but are not checked).
    /// Throws tessel::Error(InvalidArgument) otherwise.
    const std::string& as_string() const;
    /// The element type of an Array. Throws tessel::Error(InvalidArgument) for other types.
    GgufType array_type() const;
    /// The number of items of an Array. Throws tessel::Error(InvalidArgument) for other types.
    size_t array_size() const;
    /// Item i of an Array, a value of array_type(). Throws tessel::Error(InvalidArgument) for
    /// other types and i >= array_size().
    GgufValue at(size_t i) const;

    struct Impl;  ///< defined by the library

private:
    friend class GgufFile;
    explicit GgufValue(std::shared_ptr<const Impl> impl);
    std::shared_ptr<const Impl> impl_;
};

/// One metadata entry, in file order.
struct GgufKeyValue {
    std::string key;
    GgufValue value;
};

/// One tensor of the file's tensor table.
struct GgufTensorInfo {
    std::string name;
    std::string type;            ///< GGUF type name, e.g. "Q4_1", "F32", "IQ2_XXS"
    bool type_supported = true;  ///< tessel can compute with this type (a model using one it cannot fails to load)
    std::vector<int64_t> shape;  ///< elements per dimension in GGUF order (shape[0] innermost), 1..4 entries
    uint64_t offset = 0;         ///< bytes from the start of the data section (GgufFile::data_offset)
    uint64_t bytes = 0;          ///< size of the tensor's data, bytes

    /// Product of shape: the number of elements.
    int64_t n_elements() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
};

/// A GGUF file's header, metadata and tensor table. Move-only.
class TESSEL_API GgufFile {
public:
    /// Reads and validates `path`. Throws tessel::Error naming the file: Io when it cannot be
    /// opened or read, a Gguf* code for malformed contents (ErrorCode in errors.hpp; the message
    /// names the key or tensor), Environment for a bad TESSEL_GGUF_* limit.
    static GgufFile open(const std::string& path);

    GgufFile(GgufFile&& other) noexcept;
    GgufFile& operator=(GgufFile&& other) noexcept;
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;
    ~GgufFile();

    const std::string& path() const;  ///< as given to open()
    uint32_t version() const;         ///< format version, 2 or 3
    uint64_t alignment() const;       ///< of the data section and of tensor offsets, bytes (general.alignment or 32)
    uint64_t data_offset() const;     ///< bytes from the start of the file to the data section
    uint64_t file_size() const;       ///< bytes

    /// Metadata entries in file order (keys are unique).
    const std::vector<GgufKeyValue>& metadata() const;
    /// The value of `key`, or nullptr when the file has no such key (valid while this file lives).
    const GgufValue* find(std::string_view key) const;
    /// Tensors in file order.
    const std::vector<GgufTensorInfo>& tensors() const;

private:
    struct Impl;
    explicit GgufFile(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace tessel
