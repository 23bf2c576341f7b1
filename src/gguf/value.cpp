#include "gguf/value.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>

#include "tessel/errors.hpp"

namespace tessel::gguf {
namespace {

[[noreturn]] void wrong_type(ValueType actual, const char* wanted) {
    throw Error(ErrorCode::InvalidArgument,
                std::string("GGUF value is ") + value_type_name(actual) + ", expected " + wanted);
}

bool is_unsigned_int(ValueType t) {
    return t == ValueType::UINT8 || t == ValueType::UINT16 || t == ValueType::UINT32 || t == ValueType::UINT64;
}

bool is_signed_int(ValueType t) {
    return t == ValueType::INT8 || t == ValueType::INT16 || t == ValueType::INT32 || t == ValueType::INT64;
}

void append_quoted(std::string& out, const std::string& s) {
    out += '"';
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += c;  // UTF-8 bytes pass through
        }
    }
    out += '"';
}

std::string float_text(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

}  // namespace

const char* value_type_name(ValueType t) {
    switch (t) {
        case ValueType::UINT8:
            return "UINT8";
        case ValueType::INT8:
            return "INT8";
        case ValueType::UINT16:
            return "UINT16";
        case ValueType::INT16:
            return "INT16";
        case ValueType::UINT32:
            return "UINT32";
        case ValueType::INT32:
            return "INT32";
        case ValueType::FLOAT32:
            return "FLOAT32";
        case ValueType::BOOL:
            return "BOOL";
        case ValueType::STRING:
            return "STRING";
        case ValueType::ARRAY:
            return "ARRAY";
        case ValueType::UINT64:
            return "UINT64";
        case ValueType::INT64:
            return "INT64";
        case ValueType::FLOAT64:
            return "FLOAT64";
    }
    return "UNKNOWN";
}

uint32_t value_type_fixed_size(ValueType t) {
    switch (t) {
        case ValueType::UINT8:
        case ValueType::INT8:
        case ValueType::BOOL:
            return 1;
        case ValueType::UINT16:
        case ValueType::INT16:
            return 2;
        case ValueType::UINT32:
        case ValueType::INT32:
        case ValueType::FLOAT32:
            return 4;
        case ValueType::UINT64:
        case ValueType::INT64:
        case ValueType::FLOAT64:
            return 8;
        case ValueType::STRING:
        case ValueType::ARRAY:
            return 0;
    }
    return 0;
}

Value Value::u8(uint8_t v) {
    return Value(ValueType::UINT8, uint64_t{v});
}
Value Value::i8(int8_t v) {
    return Value(ValueType::INT8, int64_t{v});
}
Value Value::u16(uint16_t v) {
    return Value(ValueType::UINT16, uint64_t{v});
}
Value Value::i16(int16_t v) {
    return Value(ValueType::INT16, int64_t{v});
}
Value Value::u32(uint32_t v) {
    return Value(ValueType::UINT32, uint64_t{v});
}
Value Value::i32(int32_t v) {
    return Value(ValueType::INT32, int64_t{v});
}
Value Value::u64(uint64_t v) {
    return Value(ValueType::UINT64, v);
}
Value Value::i64(int64_t v) {
    return Value(ValueType::INT64, v);
}
Value Value::f32(float v) {
    return Value(ValueType::FLOAT32, v);
}
Value Value::f64(double v) {
    return Value(ValueType::FLOAT64, v);
}
Value Value::boolean(bool v) {
    return Value(ValueType::BOOL, v);
}
Value Value::string(std::string v) {
    return Value(ValueType::STRING, std::move(v));
}

/// An array's items: exactly one of the three forms is used, by element type.
struct Value::Array {
    std::vector<uint8_t> packed;  ///< fixed-size elements, as on disk
    std::string chars;            ///< STRING elements: their bytes back to back
    std::vector<uint32_t> ends;   ///< STRING elements: end offset of each in chars
    std::vector<Value> nested;    ///< ARRAY elements
};

Value Value::array(ValueType element_type, std::vector<Value> items) {
    if (!is_value_type_id(static_cast<uint32_t>(element_type)))
        throw Error(
            ErrorCode::InvalidArgument,
            "GGUF array element type id " + std::to_string(static_cast<uint32_t>(element_type)) + " is unknown");
    for (size_t i = 0; i < items.size(); ++i)
        if (items[i].type() != element_type)
            throw Error(ErrorCode::InvalidArgument, "GGUF array of " + std::string(value_type_name(element_type)) +
                                                        ": item " + std::to_string(i) + " is " +
                                                        value_type_name(items[i].type()));
    auto arr = std::make_shared<Array>();
    const uint32_t size = value_type_fixed_size(element_type);
    if (element_type == ValueType::STRING) {
        std::string chars;
        std::vector<uint32_t> ends;
        for (const Value& item : items) {
            chars += std::get<std::string>(item.data_);
            ends.push_back(static_cast<uint32_t>(std::min<size_t>(chars.size(), UINT32_MAX)));
        }
        return string_array(std::move(chars), std::move(ends));
    } else if (element_type == ValueType::ARRAY) {
        arr->nested = std::move(items);
    } else {
        arr->packed.resize(items.size() * size);
        for (size_t i = 0; i < items.size(); ++i) {
            const Storage& d = items[i].data_;
            uint8_t* out = arr->packed.data() + i * size;
            uint64_t bits = 0;
            if (element_type == ValueType::FLOAT32) bits = std::bit_cast<uint32_t>(std::get<float>(d));
            else if (element_type == ValueType::FLOAT64) bits = std::bit_cast<uint64_t>(std::get<double>(d));
            else if (element_type == ValueType::BOOL) bits = std::get<bool>(d) ? 1 : 0;
            else if (is_unsigned_int(element_type)) bits = std::get<uint64_t>(d);
            else bits = static_cast<uint64_t>(std::get<int64_t>(d));
            std::memcpy(out, &bits, size);  // little-endian host: the low bytes
        }
    }
    Value v(ValueType::ARRAY, std::shared_ptr<const Array>(std::move(arr)));
    v.array_type_ = element_type;
    return v;
}

Value Value::packed_array(ValueType element_type, std::vector<uint8_t> bytes) {
    const uint32_t size = is_value_type_id(static_cast<uint32_t>(element_type)) ? value_type_fixed_size(element_type) : 0;
    if (size == 0)
        throw Error(ErrorCode::InvalidArgument,
                    std::string("GGUF packed array of ") + value_type_name(element_type) + ": not a fixed-size type");
    if (bytes.size() % size != 0)
        throw Error(ErrorCode::InvalidArgument, "GGUF packed array of " + std::string(value_type_name(element_type)) + ": " +
                                                    std::to_string(bytes.size()) + " bytes is not a whole number of items");
    auto arr = std::make_shared<Array>();
    arr->packed = std::move(bytes);
    Value v(ValueType::ARRAY, std::shared_ptr<const Array>(std::move(arr)));
    v.array_type_ = element_type;
    return v;
}

Value Value::string_array(std::string chars, std::vector<uint32_t> ends) {
    uint64_t prev = 0;
    if (chars.size() > UINT32_MAX)
        throw Error(ErrorCode::InvalidArgument, "GGUF string array: " + std::to_string(chars.size()) + " bytes of text, more than 4 GiB");
    for (uint64_t e : ends) {
        if (e < prev || e > chars.size())
            throw Error(ErrorCode::InvalidArgument, "GGUF string array: end offsets decrease or pass the characters");
        prev = e;
    }
    auto arr = std::make_shared<Array>();
    arr->chars = std::move(chars);
    arr->ends = std::move(ends);
    Value v(ValueType::ARRAY, std::shared_ptr<const Array>(std::move(arr)));
    v.array_type_ = ValueType::STRING;
    return v;
}

Value Value::strings(const std::vector<std::string>& items) {
    std::string chars;
    std::vector<uint32_t> ends;
    ends.reserve(items.size());
    for (const auto& s : items) {
        chars += s;
        ends.push_back(static_cast<uint32_t>(std::min<size_t>(chars.size(), UINT32_MAX)));
    }
    return string_array(std::move(chars), std::move(ends));
}

Value Value::f32s(const std::vector<float>& items) {
    std::vector<uint8_t> bytes(items.size() * sizeof(float));
    std::memcpy(bytes.data(), items.data(), bytes.size());
    return packed_array(ValueType::FLOAT32, std::move(bytes));
}

Value Value::i32s(const std::vector<int32_t>& items) {
    std::vector<uint8_t> bytes(items.size() * sizeof(int32_t));
    std::memcpy(bytes.data(), items.data(), bytes.size());
    return packed_array(ValueType::INT32, std::move(bytes));
}

uint64_t Value::as_u64() const {
    if (is_unsigned_int(type_)) return std::get<uint64_t>(data_);
    if (is_signed_int(type_)) {
        int64_t v = std::get<int64_t>(data_);
        if (v < 0)
            throw Error(ErrorCode::InvalidArgument,
                        std::string("GGUF ") + value_type_name(type_) + " value " + std::to_string(v) + " is negative");
        return static_cast<uint64_t>(v);
    }
    wrong_type(type_, "an integer");
}

int64_t Value::as_i64() const {
    if (is_signed_int(type_)) return std::get<int64_t>(data_);
    if (is_unsigned_int(type_)) {
        uint64_t v = std::get<uint64_t>(data_);
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            throw Error(ErrorCode::InvalidArgument,
                        "GGUF UINT64 value " + std::to_string(v) + " does not fit in int64");
        return static_cast<int64_t>(v);
    }
    wrong_type(type_, "an integer");
}

double Value::as_f64() const {
    if (type_ == ValueType::FLOAT32) return std::get<float>(data_);
    if (type_ == ValueType::FLOAT64) return std::get<double>(data_);
    wrong_type(type_, "FLOAT32 or FLOAT64");
}

float Value::as_f32() const {
    if (type_ != ValueType::FLOAT32) wrong_type(type_, "FLOAT32");
    return std::get<float>(data_);
}

bool Value::as_bool() const {
    if (type_ != ValueType::BOOL) wrong_type(type_, "BOOL");
    return std::get<bool>(data_);
}

const std::string& Value::as_string() const {
    if (type_ != ValueType::STRING) wrong_type(type_, "STRING");
    return std::get<std::string>(data_);
}

ValueType Value::array_type() const {
    if (type_ != ValueType::ARRAY) wrong_type(type_, "ARRAY");
    return array_type_;
}

const Value::Array& Value::items() const {
    if (type_ != ValueType::ARRAY) wrong_type(type_, "ARRAY");
    return *std::get<std::shared_ptr<const Array>>(data_);
}

size_t Value::array_size() const {
    const Array& a = items();
    if (array_type_ == ValueType::STRING) return a.ends.size();
    if (array_type_ == ValueType::ARRAY) return a.nested.size();
    return a.packed.size() / value_type_fixed_size(array_type_);
}

Value Value::at(size_t i) const {
    const Array& a = items();
    if (i >= array_size())
        throw Error(ErrorCode::InvalidArgument,
                    "GGUF array item " + std::to_string(i) + " requested, the array has " + std::to_string(array_size()));
    if (array_type_ == ValueType::STRING) return string(std::string(string_at(i)));
    if (array_type_ == ValueType::ARRAY) return a.nested[i];
    const uint32_t size = value_type_fixed_size(array_type_);
    uint64_t bits = 0;
    std::memcpy(&bits, a.packed.data() + i * size, size);
    switch (array_type_) {
        case ValueType::UINT8: return u8(static_cast<uint8_t>(bits));
        case ValueType::INT8: return i8(static_cast<int8_t>(bits));
        case ValueType::UINT16: return u16(static_cast<uint16_t>(bits));
        case ValueType::INT16: return i16(static_cast<int16_t>(bits));
        case ValueType::UINT32: return u32(static_cast<uint32_t>(bits));
        case ValueType::INT32: return i32(static_cast<int32_t>(bits));
        case ValueType::UINT64: return u64(bits);
        case ValueType::INT64: return i64(static_cast<int64_t>(bits));
        case ValueType::FLOAT32: return f32(std::bit_cast<float>(static_cast<uint32_t>(bits)));
        case ValueType::FLOAT64: return f64(std::bit_cast<double>(bits));
        default: return boolean(bits != 0);  // BOOL: any non-zero byte, as the reader reads a BOOL
    }
}

std::string_view Value::string_at(size_t i) const {
    const Array& a = items();
    if (array_type_ != ValueType::STRING) wrong_type(array_type_, "an array of STRING");
    if (i >= a.ends.size())
        throw Error(ErrorCode::InvalidArgument,
                    "GGUF array item " + std::to_string(i) + " requested, the array has " + std::to_string(a.ends.size()));
    const uint64_t begin = i == 0 ? 0 : a.ends[i - 1];
    return std::string_view(a.chars).substr(begin, a.ends[i] - begin);
}

const std::vector<uint8_t>& Value::packed_bytes() const {
    const Array& a = items();
    if (value_type_fixed_size(array_type_) == 0) wrong_type(array_type_, "an array of a fixed-size type");
    return a.packed;
}

size_t Value::memory_bytes() const {
    size_t bytes = sizeof(Value);
    if (type_ == ValueType::STRING) return bytes + std::get<std::string>(data_).capacity();
    if (type_ != ValueType::ARRAY) return bytes;
    const Array& a = items();
    bytes += sizeof(Array) + a.packed.capacity() + a.chars.capacity() + a.ends.capacity() * sizeof(uint32_t);
    for (const Value& v : a.nested) bytes += v.memory_bytes();
    return bytes;
}

bool Value::operator==(const Value& other) const {
    if (type_ != other.type_) return false;
    switch (type_) {
        case ValueType::FLOAT32:
            return std::bit_cast<uint32_t>(std::get<float>(data_)) ==
                   std::bit_cast<uint32_t>(std::get<float>(other.data_));
        case ValueType::FLOAT64:
            return std::bit_cast<uint64_t>(std::get<double>(data_)) ==
                   std::bit_cast<uint64_t>(std::get<double>(other.data_));
        case ValueType::ARRAY: {
            if (array_type_ != other.array_type_) return false;
            const Array& a = items();
            const Array& b = other.items();
            return a.packed == b.packed && a.chars == b.chars && a.ends == b.ends && a.nested == b.nested;
        }
        default:
            return data_ == other.data_;
    }
}

std::string Value::to_string(size_t max_items) const {
    switch (type_) {
        case ValueType::UINT8:
        case ValueType::UINT16:
        case ValueType::UINT32:
        case ValueType::UINT64:
            return std::to_string(std::get<uint64_t>(data_));
        case ValueType::INT8:
        case ValueType::INT16:
        case ValueType::INT32:
        case ValueType::INT64:
            return std::to_string(std::get<int64_t>(data_));
        case ValueType::FLOAT32:
            return float_text(std::get<float>(data_));
        case ValueType::FLOAT64:
            return float_text(std::get<double>(data_));
        case ValueType::BOOL:
            return std::get<bool>(data_) ? "true" : "false";
        case ValueType::STRING: {
            std::string out;
            append_quoted(out, std::get<std::string>(data_));
            return out;
        }
        case ValueType::ARRAY:
            break;
    }
    const size_t n = array_size();
    std::string out = "[";
    for (size_t i = 0; i < n && i < max_items; ++i) {
        if (i) out += ", ";
        out += at(i).to_string(max_items);
    }
    if (n > max_items) out += ", ... (" + std::to_string(n) + " items)";
    out += "]";
    return out;
}

}  // namespace tessel::gguf
