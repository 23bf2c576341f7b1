// GGUF container constants shared by the reader and the writer, tessel's sanity limits, and the
// value types expected for well-known metadata keys.
//
// Layout (GGUF v2/v3, little-endian; ggml docs/gguf.md):
//   magic "GGUF" | uint32 version | uint64 tensor_count | uint64 kv_count
//   kv_count x  { string key | uint32 value_type | value }
//   tensor_count x { string name | uint32 n_dims | uint64 ne[n_dims] | uint32 type | uint64 offset }
//   zero padding to general.alignment | tensor data (each tensor at an aligned offset)
// A string is uint64 length + bytes (no terminator); an array is uint32 element type +
// uint64 count + elements. v3 differs from v2 only by allowing big-endian files, which tessel
// does not read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gguf/value.hpp"

namespace tessel::gguf {

inline constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kMinVersion = 2;
inline constexpr uint32_t kMaxVersion = 3;
inline constexpr uint32_t kMaxDims = 4;

inline constexpr std::string_view kAlignmentKey = "general.alignment";
inline constexpr uint32_t kDefaultAlignment = 32;
/// Largest general.alignment tessel accepts (bytes).
inline constexpr uint32_t kMaxAlignment = 1u << 20;

// Sanity limits. Every declared length is first checked against the bytes that remain in the
// file; these limits additionally bound what a large-but-hostile file can make tessel allocate.
inline constexpr uint64_t kMaxKeyBytes = 65535;            ///< metadata key length (GGUF spec)
inline constexpr uint64_t kMaxTensorNameBytes = 1024;      ///< tensor name length
inline constexpr uint64_t kMaxStringBytes = 256ull << 20;  ///< one string value
inline constexpr uint64_t kMaxArrayItems = 1ull << 26;     ///< items of one array
inline constexpr uint32_t kMaxArrayDepth = 8;              ///< array nesting (an array of scalars is depth 1)
inline constexpr uint64_t kMaxKeyValues = 1ull << 20;      ///< metadata entries
inline constexpr uint64_t kMaxTensors = 1ull << 20;        ///< tensor infos
/// Metadata memory of one file (keys, values, array items as Value::memory_bytes counts them
/// roughly); TESSEL_GGUF_MAX_METADATA overrides it.
inline constexpr uint64_t kDefaultMetadataBudget = 256ull << 20;

/// Smallest possible on-disk sizes (bytes), used to bound declared counts by the bytes remaining.
inline constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;            // empty key, type, 1-byte value
inline constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim

/// Minimum on-disk size of one array element of type t (bytes): its fixed size, 8 for a
/// string (its length), 12 for a nested array (element type + count).
inline uint64_t min_element_bytes(ValueType t) {
    if (t == ValueType::STRING) return 8;
    if (t == ValueType::ARRAY) return 12;
    return value_type_fixed_size(t);
}

/// x rounded up to a multiple of `alignment` (a power of two); x must not overflow.
inline uint64_t align_up(uint64_t x, uint64_t alignment) {
    return (x + alignment - 1) & ~(alignment - 1);
}

/// True when a is a power of two in [1, kMaxAlignment].
inline bool valid_alignment(uint64_t a) {
    return a != 0 && (a & (a - 1)) == 0 && a <= kMaxAlignment;
}

/// For a well-known key (general.alignment, general.architecture, tokenizer.ggml.tokens, ...)
/// whose value has the wrong type, a description of the expected type (e.g. "ARRAY of STRING");
/// nullopt when the key is not well known or the value matches.
std::optional<std::string> well_known_key_mismatch(std::string_view key, const Value& value);

}  // namespace tessel::gguf
