#include "gguf/value.hpp"

#include <bit>
#include <cstdio>
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
    Value v(ValueType::ARRAY, std::move(items));
    v.array_type_ = element_type;
    return v;
}

Value Value::strings(const std::vector<std::string>& items) {
    std::vector<Value> values;
    values.reserve(items.size());
    for (const auto& s : items) values.push_back(string(s));
    return array(ValueType::STRING, std::move(values));
}

Value Value::f32s(const std::vector<float>& items) {
    std::vector<Value> values;
    values.reserve(items.size());
    for (float f : items) values.push_back(f32(f));
    return array(ValueType::FLOAT32, std::move(values));
}

Value Value::i32s(const std::vector<int32_t>& items) {
    std::vector<Value> values;
    values.reserve(items.size());
    for (int32_t i : items) values.push_back(i32(i));
    return array(ValueType::INT32, std::move(values));
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

const std::vector<Value>& Value::array() const {
    if (type_ != ValueType::ARRAY) wrong_type(type_, "ARRAY");
    return std::get<std::vector<Value>>(data_);
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
        case ValueType::ARRAY:
            return array_type_ == other.array_type_ && array() == other.array();
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
    const auto& items = array();
    std::string out = "[";
    for (size_t i = 0; i < items.size() && i < max_items; ++i) {
        if (i) out += ", ";
        out += items[i].to_string(max_items);
    }
    if (items.size() > max_items) out += ", ... (" + std::to_string(items.size()) + " items)";
    out += "]";
    return out;
}

}  // namespace tessel::gguf
