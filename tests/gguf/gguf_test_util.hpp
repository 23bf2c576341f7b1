// Helpers for GGUF tests: locate fields of a serialized file by key / tensor name and patch them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/reader.hpp"
#include "gguf/writer.hpp"
#include "tessel/errors.hpp"

namespace tessel::gguf::testing {

using Bytes = std::vector<uint8_t>;

/// Offset of the only occurrence of `needle` in `buf`; fails the test when absent or repeated.
inline size_t find_unique(const Bytes& buf, std::string_view needle) {
    size_t found = SIZE_MAX;
    for (size_t i = 0; i + needle.size() <= buf.size(); ++i) {
        if (std::memcmp(buf.data() + i, needle.data(), needle.size()) != 0) continue;
        EXPECT_EQ(found, SIZE_MAX) << "'" << needle << "' occurs more than once";
        found = i;
    }
    EXPECT_NE(found, SIZE_MAX) << "'" << needle << "' not found";
    return found;
}

template <class T>
void poke(Bytes& buf, size_t offset, T value) {
    ASSERT_LE(offset + sizeof(T), buf.size());
    std::memcpy(buf.data() + offset, &value, sizeof(T));
}

template <class T>
T peek(const Bytes& buf, size_t offset) {
    T value{};
    EXPECT_LE(offset + sizeof(T), buf.size());
    if (offset + sizeof(T) <= buf.size()) std::memcpy(&value, buf.data() + offset, sizeof(T));
    return value;
}

/// Offsets of the fields of a metadata entry whose key is `key` (key string, value type, value).
struct KeyFields {
    size_t key;    ///< first byte of the key text
    size_t type;   ///< uint32 value type
    size_t value;  ///< first byte of the value
};
inline KeyFields key_fields(const Bytes& buf, std::string_view key) {
    size_t k = find_unique(buf, key);
    return {k, k + key.size(), k + key.size() + 4};
}

/// Offsets of the fields of the tensor info for `name`.
struct TensorFields {
    size_t name;    ///< first byte of the name text
    size_t n_dims;  ///< uint32
    size_t ne;      ///< uint64 ne[0]; ne[d] at ne + 8*d
    size_t type;    ///< uint32 type id
    size_t offset;  ///< uint64 data offset
};
inline TensorFields tensor_fields(const Bytes& buf, std::string_view name) {
    size_t n = find_unique(buf, name);
    size_t dims_at = n + name.size();
    uint32_t n_dims = peek<uint32_t>(buf, dims_at);
    size_t type_at = dims_at + 4 + 8 * size_t{n_dims};
    return {n, dims_at, dims_at + 4, type_at, type_at + 4};
}

/// The error parsing `buf` raises, or nullopt when it parses. Any exception other than
/// tessel::Error propagates (and fails the calling test).
inline std::optional<tessel::Error> parse_error(const Bytes& buf, const std::string& name = "test.gguf") {
    try {
        File::from_memory(buf.data(), buf.size(), name);
    } catch (const tessel::Error& e) {
        return e;
    }
    return std::nullopt;
}

}  // namespace tessel::gguf::testing
