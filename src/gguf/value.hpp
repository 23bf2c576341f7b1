// GGUF metadata values: the thirteen value types of the format and a Value that holds any of
// them, including nested arrays.
//
// Format source: the GGUF specification (ggml docs/gguf.md, "Standardized key-value pairs" and
// `gguf_metadata_value_type`). Type ids are the ones written in files.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tessel::gguf {

/// Metadata value type ids as stored in a GGUF file (uint32 on disk).
enum class ValueType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};

/// One past the largest value type id.
inline constexpr uint32_t kValueTypeIdEnd = 13;

/// Name of a value type, e.g. "UINT32"; "UNKNOWN" for ids outside the enum.
const char* value_type_name(ValueType t);

/// True when `id` (read from a file) names one of the thirteen value types.
inline bool is_value_type_id(uint32_t id) {
    return id < kValueTypeIdEnd;
}

/// On-disk size in bytes of a fixed-size (scalar) value type; 0 for STRING and ARRAY.
uint32_t value_type_fixed_size(ValueType t);

/// Any GGUF metadata value. Scalars keep their exact type (a UINT16 stays a UINT16); an array has
/// one element type and keeps its items about as compactly as the file does: fixed-size items
/// packed (their bytes as on disk, little-endian), strings in one buffer with their end offsets,
/// nested arrays as Values. So a value's memory follows its bytes in the file (memory_bytes()).
/// Copies of an array share its (immutable) items.
class Value {
public:
    // Factories, one per value type.
    static Value u8(uint8_t v);
    static Value i8(int8_t v);
    static Value u16(uint16_t v);
    static Value i16(int16_t v);
    static Value u32(uint32_t v);
    static Value i32(int32_t v);
    static Value u64(uint64_t v);
    static Value i64(int64_t v);
    static Value f32(float v);
    static Value f64(double v);
    static Value boolean(bool v);
    static Value string(std::string v);
    /// An array of `element_type`. Throws tessel::Error(InvalidArgument) when an item's type
    /// differs from element_type.
    static Value array(ValueType element_type, std::vector<Value> items);
    /// An array of a fixed-size element type from its items' bytes as a file stores them
    /// (value_type_fixed_size(element_type) bytes each). Throws InvalidArgument for STRING / ARRAY
    /// elements or a byte count that is not a whole number of items.
    static Value packed_array(ValueType element_type, std::vector<uint8_t> bytes);
    /// A STRING array: item i is chars[ends[i - 1], ends[i]) (ends[-1] = 0). Throws InvalidArgument
    /// when ends decrease or pass the end of chars (so one array holds less than 4 GiB of text).
    static Value string_array(std::string chars, std::vector<uint32_t> ends);
    /// Convenience arrays: STRING, FLOAT32 and INT32 elements (tokenizer vocabularies).
    static Value strings(const std::vector<std::string>& items);
    static Value f32s(const std::vector<float>& items);
    static Value i32s(const std::vector<int32_t>& items);

    ValueType type() const { return type_; }

    /// Any integer type whose value is >= 0, widened to 64 bits.
    /// Throws tessel::Error(InvalidArgument) for non-integers and negative values.
    uint64_t as_u64() const;
    /// Any integer type whose value fits in int64. Throws tessel::Error(InvalidArgument) otherwise.
    int64_t as_i64() const;
    /// FLOAT32 or FLOAT64, widened to double. Throws tessel::Error(InvalidArgument) otherwise.
    double as_f64() const;
    /// FLOAT32 only, bit-exact. Throws tessel::Error(InvalidArgument) otherwise.
    float as_f32() const;
    /// BOOL only. Throws tessel::Error(InvalidArgument) otherwise.
    bool as_bool() const;
    /// STRING only (bytes as stored; GGUF strings are UTF-8). Throws InvalidArgument otherwise.
    const std::string& as_string() const;
    /// Element type of an ARRAY. Throws tessel::Error(InvalidArgument) for non-arrays.
    ValueType array_type() const;
    /// Number of items of an ARRAY. Throws tessel::Error(InvalidArgument) for non-arrays.
    size_t array_size() const;
    /// Item i of an ARRAY, as a Value of the element type (a nested array shares its items).
    /// Throws tessel::Error(InvalidArgument) for non-arrays and i >= array_size().
    Value at(size_t i) const;
    /// Item i of a STRING array, without a copy (valid while this value lives). Throws
    /// InvalidArgument for other values and i >= array_size().
    std::string_view string_at(size_t i) const;
    /// The items of an array of a fixed-size type, packed as a file stores them. Throws
    /// InvalidArgument for other values.
    const std::vector<uint8_t>& packed_bytes() const;

    /// Bytes this value takes in memory, its shared array items included: what the reader's
    /// metadata budget counts.
    size_t memory_bytes() const;

    /// Same type and same contents; floats compare by bit pattern (a NaN equals itself).
    bool operator==(const Value& other) const;

    /// Short human-readable rendering for diagnostics: strings quoted, arrays as
    /// `[a, b, ... (N items)]` showing at most `max_items` items.
    std::string to_string(size_t max_items = 8) const;

private:
    struct Array;  // value.cpp
    using Storage = std::variant<uint64_t, int64_t, float, double, bool, std::string, std::shared_ptr<const Array>>;
    Value(ValueType type, Storage data) : type_(type), data_(std::move(data)) {}
    const Array& items() const;

    ValueType type_;
    ValueType array_type_ = ValueType::UINT8;  ///< element type when type_ == ARRAY
    Storage data_;
};

/// One metadata entry, in file order.
struct KeyValue {
    std::string key;
    Value value;
};

}  // namespace tessel::gguf
