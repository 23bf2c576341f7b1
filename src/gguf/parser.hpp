// Internal: the GGUF validation pass behind gguf::File. Reads a byte range, checks every field,
// and returns the parsed tables; it never keeps a pointer into the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gguf/reader.hpp"

namespace tessel::gguf::detail {

struct ParsedFile {
    uint32_t version = 0;
    uint64_t alignment = 0;
    uint64_t data_offset = 0;
    std::vector<KeyValue> metadata;
    std::map<std::string, size_t, std::less<>> key_index;
    std::vector<TensorInfo> tensors;
    std::map<std::string, size_t, std::less<>> tensor_index;
};

/// Called while large arrays are copied with the offset below which every byte has been read:
/// File::open drops those pages of its mapping, so a file's metadata is not in memory twice.
using ConsumedFn = std::function<void(uint64_t offset)>;

/// Parses and validates `size` bytes of a GGUF file called `name` (used in messages). Metadata
/// takes at most TESSEL_GGUF_MAX_METADATA bytes of memory (kDefaultMetadataBudget when unset).
/// Throws tessel::Error with the GGUF ErrorCode of the first defect found (GgufLimit past the
/// budget), and Error(Environment) naming TESSEL_GGUF_MAX_METADATA when its value is not a
/// positive number of bytes.
ParsedFile parse_gguf(const uint8_t* data, size_t size, const std::string& name, const ConsumedFn& consumed = {});

/// TESSEL_GGUF_MAX_METADATA (bytes), else kDefaultMetadataBudget. Throws Error(Environment)
/// when it is empty or not a positive whole number.
uint64_t metadata_budget();

/// `s` quoted and escaped for an error message, cut to at most 80 bytes of content.
std::string quote_for_message(std::string_view s);

}  // namespace tessel::gguf::detail
