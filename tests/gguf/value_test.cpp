// gguf::Value: factories, accessors and their type errors.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "gguf/format.hpp"
#include "gguf/value.hpp"
#include "tessel/errors.hpp"

using namespace tessel;
using namespace tessel::gguf;

namespace {

template <class Fn>
ErrorCode error_code(Fn&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.code();
    }
    ADD_FAILURE() << "no tessel::Error thrown";
    return ErrorCode::Io;
}

}  // namespace

TEST(GgufValue, TypeNamesAndSizes) {
    EXPECT_STREQ(value_type_name(ValueType::UINT8), "UINT8");
    EXPECT_STREQ(value_type_name(ValueType::FLOAT64), "FLOAT64");
    EXPECT_STREQ(value_type_name(static_cast<ValueType>(13)), "UNKNOWN");
    EXPECT_EQ(value_type_fixed_size(ValueType::BOOL), 1u);
    EXPECT_EQ(value_type_fixed_size(ValueType::INT16), 2u);
    EXPECT_EQ(value_type_fixed_size(ValueType::FLOAT32), 4u);
    EXPECT_EQ(value_type_fixed_size(ValueType::INT64), 8u);
    EXPECT_EQ(value_type_fixed_size(ValueType::STRING), 0u);
    EXPECT_EQ(min_element_bytes(ValueType::STRING), 8u);
    EXPECT_EQ(min_element_bytes(ValueType::ARRAY), 12u);
}

TEST(GgufValue, IntegerAccessorsWidenAndCheckRange) {
    EXPECT_EQ(Value::u16(65535).as_u64(), 65535u);
    EXPECT_EQ(Value::u16(65535).as_i64(), 65535);
    EXPECT_EQ(Value::i8(-3).as_i64(), -3);
    EXPECT_EQ(Value::i32(7).as_u64(), 7u);
    EXPECT_EQ(error_code([] { Value::i32(-1).as_u64(); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::u64(std::numeric_limits<uint64_t>::max()).as_i64(); }),
              ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::f32(1.0f).as_u64(); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::boolean(true).as_i64(); }), ErrorCode::InvalidArgument);
}

TEST(GgufValue, OtherAccessorsRejectWrongTypes) {
    EXPECT_DOUBLE_EQ(Value::f32(0.25f).as_f64(), 0.25);
    EXPECT_EQ(Value::f32(0.25f).as_f32(), 0.25f);
    EXPECT_EQ(error_code([] { Value::f64(1.0).as_f32(); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::u32(1).as_f64(); }), ErrorCode::InvalidArgument);
    EXPECT_TRUE(Value::boolean(true).as_bool());
    EXPECT_EQ(error_code([] { Value::u8(1).as_bool(); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(Value::string("abc").as_string(), "abc");
    EXPECT_EQ(error_code([] { Value::u8(1).as_string(); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::string("x").array_size(); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::string("x").at(0); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::string("x").array_type(); }), ErrorCode::InvalidArgument);
    try {
        Value::string("x").as_u64();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("STRING"), std::string::npos) << e.what();
    }
}

TEST(GgufValue, ArraysCheckTheirItems) {
    Value a = Value::array(ValueType::INT16, {Value::i16(1), Value::i16(-2)});
    EXPECT_EQ(a.type(), ValueType::ARRAY);
    EXPECT_EQ(a.array_type(), ValueType::INT16);
    ASSERT_EQ(a.array_size(), 2u);
    EXPECT_EQ(a.at(1).as_i64(), -2);
    EXPECT_EQ(error_code([&] { a.at(2); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::array(ValueType::INT16, {Value::i32(1)}); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::array(static_cast<ValueType>(42), {}); }), ErrorCode::InvalidArgument);
}

TEST(GgufValue, EqualityComparesTypeAndBits) {
    EXPECT_TRUE(Value::u32(5) == Value::u32(5));
    EXPECT_FALSE(Value::u32(5) == Value::u64(5));
    EXPECT_FALSE(Value::f32(0.0f) == Value::f32(-0.0f));
    float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(Value::f32(nan) == Value::f32(nan));
    EXPECT_FALSE(Value::array(ValueType::UINT8, {}) == Value::array(ValueType::INT8, {}));
    EXPECT_TRUE(Value::strings({"a", "b"}) == Value::strings({"a", "b"}));
    EXPECT_FALSE(Value::strings({"a", "b"}) == Value::strings({"a", "c"}));
}

TEST(GgufValue, ToStringForDiagnostics) {
    EXPECT_EQ(Value::i8(-4).to_string(), "-4");
    EXPECT_EQ(Value::boolean(false).to_string(), "false");
    EXPECT_EQ(Value::f32(0.5f).to_string(), "0.5");
    EXPECT_EQ(Value::string("a\"b\n").to_string(), "\"a\\\"b\\x0a\"");
    EXPECT_EQ(Value::i32s({1, 2, 3}).to_string(2), "[1, 2, ... (3 items)]");
    EXPECT_EQ(Value::array(ValueType::ARRAY, {Value::strings({"x"})}).to_string(), "[[\"x\"]]");
}

// Arrays keep their items compactly (packed as on disk, strings in one buffer), whatever built them.
TEST(GgufValue, ArraysAreCompactAndEqualAcrossForms) {
    const Value built = Value::array(ValueType::FLOAT32, {Value::f32(1.5f), Value::f32(-0.0f)});
    std::vector<uint8_t> bytes(8);
    const float f[2] = {1.5f, -0.0f};
    std::memcpy(bytes.data(), f, 8);
    const Value packed = Value::packed_array(ValueType::FLOAT32, bytes);
    EXPECT_EQ(built, packed);
    EXPECT_EQ(packed.at(1).as_f32(), -0.0f);
    EXPECT_EQ(packed.packed_bytes(), bytes);
    EXPECT_EQ(error_code([] { Value::packed_array(ValueType::FLOAT32, std::vector<uint8_t>(6)); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(error_code([] { Value::packed_array(ValueType::STRING, {}); }), ErrorCode::InvalidArgument);

    const Value strs = Value::strings({"a", "", "bcd"});
    EXPECT_EQ(strs, Value::array(ValueType::STRING, {Value::string("a"), Value::string(""), Value::string("bcd")}));
    EXPECT_EQ(strs.array_size(), 3u);
    EXPECT_EQ(strs.string_at(2), "bcd");
    EXPECT_EQ(strs.at(1).as_string(), "");
    EXPECT_EQ(error_code([] { Value::string_array("ab", {2, 1}); }), ErrorCode::InvalidArgument);

    // 2^20 UINT8 items take about their own bytes, not a Value each
    const Value big = Value::packed_array(ValueType::UINT8, std::vector<uint8_t>(1 << 20, 7));
    EXPECT_LT(big.memory_bytes(), (1u << 20) + 4096);
    EXPECT_EQ(big.at(12345).as_u64(), 7u);
}
