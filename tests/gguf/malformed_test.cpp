// Malformed GGUF files: one or more per error category, made by the writer and corrupted by byte
// edits; truncation at every offset; single-byte corruption everywhere.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "gguf/format.hpp"
#include "gguf_test_util.hpp"

using namespace tessel;
using namespace tessel::gguf;
using namespace tessel::gguf::testing;

namespace {

// A small valid file. Tensors: tensor_a F32 [8,2] (64 B at 0), tensor_b Q8_0 [32,2] (68 B at 64),
// tensor_c F16 [16] (32 B at 160): the last one ends on the alignment, so the file has no
// trailing padding and every proper prefix is invalid.
Bytes base_file() {
    Writer w;
    w.set("general.architecture", Value::string("llama"));
    w.set_alignment(32);
    w.set("general.architecturX", Value::u32(7));  // renamed by a test into a wrongly typed known key
    w.set("test.key_a", Value::u32(1));
    w.set("test.key_b", Value::u32(2));
    w.set("test.str", Value::string("hello"));
    w.set("test.arr", Value::array(ValueType::UINT32, {Value::u32(1), Value::u32(2), Value::u32(3)}));
    w.set("test.nested", Value::array(ValueType::ARRAY, {Value::strings({"x", "yz"})}));
    std::vector<uint8_t> a(64, 0x11), b(68, 0x22), c(32, 0x33);
    w.add_tensor("tensor_a", DType::F32, {8, 2}, a.data(), a.size());
    w.add_tensor("tensor_b", DType::Q8_0, {32, 2}, b.data(), b.size());
    w.add_tensor("tensor_c", DType::F16, {16}, c.data(), c.size());
    return w.to_bytes();
}

struct Case {
    const char* name;
    std::function<Bytes()> make;
    ErrorCode code;
    std::vector<std::string> message_parts;  ///< each must appear in what()
};

/// Test names print the case name only (not a byte dump of the struct).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

/// base_file() with `edit` applied.
std::function<Bytes()> edited(std::function<void(Bytes&)> edit) {
    return [edit] {
        Bytes b = base_file();
        edit(b);
        return b;
    };
}

template <class T>
std::function<Bytes()> poked_at_key(const char* key, size_t KeyFields::*field, size_t extra, T value) {
    return edited([=](Bytes& b) { poke<T>(b, key_fields(b, key).*field + extra, value); });
}

template <class T>
std::function<Bytes()> poked_at_tensor(const char* name, size_t TensorFields::*field, size_t extra, T value) {
    return edited([=](Bytes& b) { poke<T>(b, tensor_fields(b, name).*field + extra, value); });
}

std::function<Bytes()> renamed(const char* from, const char* to) {
    return edited([=](Bytes& b) {
        size_t at = find_unique(b, from);
        std::memcpy(b.data() + at, to, std::strlen(to));
    });
}

std::function<Bytes()> written(std::function<void(Writer&)> fill) {
    return [fill] {
        Writer w;
        fill(w);
        return w.to_bytes();
    };
}

Value nested_arrays(int depth) {
    Value v = Value::array(ValueType::UINT8, {Value::u8(1)});
    for (int d = 1; d < depth; ++d) v = Value::array(ValueType::ARRAY, {v});
    return v;
}

std::vector<Case> malformed_cases() {
    const uint64_t huge = 1ull << 40;
    return {
        {"bad_magic", edited([](Bytes& b) { b[0] = 'X'; }), ErrorCode::GgufBadMagic, {"not a GGUF file", "GGUF"}},
        {"version_1",
         edited([](Bytes& b) { poke<uint32_t>(b, 4, 1); }),
         ErrorCode::GgufUnsupportedVersion,
         {"version 1", "expected 2 or 3"}},
        {"version_4",
         edited([](Bytes& b) { poke<uint32_t>(b, 4, 4); }),
         ErrorCode::GgufUnsupportedVersion,
         {"version 4"}},
        {"big_endian",
         edited([](Bytes& b) { poke<uint32_t>(b, 4, 0x03000000u); }),
         ErrorCode::GgufUnsupportedVersion,
         {"big-endian"}},
        {"truncated_header",
         edited([](Bytes& b) { b.resize(20); }),
         ErrorCode::GgufTruncated,
         {"header", "metadata count"}},
        {"truncated_value_type",
         edited([](Bytes& b) { b.resize(key_fields(b, "test.key_a").type + 2); }),
         ErrorCode::GgufTruncated,
         {"test.key_a", "value type"}},
        {"truncated_before_data",
         edited([](Bytes& b) { b.resize(tensor_fields(b, "tensor_c").offset + 9); }),
         ErrorCode::GgufTruncated,
         {"data section"}},
        {"kv_count_huge",
         edited([=](Bytes& b) { poke<uint64_t>(b, 16, huge); }),
         ErrorCode::GgufLengthPastEnd,
         {"metadata count 1099511627776"}},
        {"tensor_count_huge",
         edited([=](Bytes& b) { poke<uint64_t>(b, 8, huge); }),
         ErrorCode::GgufLengthPastEnd,
         {"tensor count"}},
        {"string_length_huge",
         poked_at_key<uint64_t>("test.str", &KeyFields::value, 0, 1ull << 60),
         ErrorCode::GgufLengthPastEnd,
         {"key 'test.str'", "string length"}},
        {"key_length_past_end",
         edited([](Bytes& b) { poke<uint64_t>(b, key_fields(b, "test.key_a").key - 8, 1u << 30); }),
         ErrorCode::GgufLengthPastEnd,
         {"metadata entry #3", "key length"}},
        {"array_length_huge",
         poked_at_key<uint64_t>("test.arr", &KeyFields::value, 4, huge),
         ErrorCode::GgufLengthPastEnd,
         {"key 'test.arr'", "array length 1099511627776"}},
        {"tensor_name_past_end",
         edited([](Bytes& b) { poke<uint64_t>(b, tensor_fields(b, "tensor_b").name - 8, 5000); }),
         ErrorCode::GgufLengthPastEnd,
         {"tensor #1", "tensor name length"}},
        {"unknown_value_type",
         poked_at_key<uint32_t>("test.key_a", &KeyFields::type, 0, 13),
         ErrorCode::GgufUnknownValueType,
         {"key 'test.key_a'", "id 13"}},
        {"unknown_array_element_type",
         poked_at_key<uint32_t>("test.arr", &KeyFields::value, 0, 99),
         ErrorCode::GgufUnknownValueType,
         {"key 'test.arr'", "id 99", "array element type"}},
        {"alignment_not_uint32",
         poked_at_key<uint32_t>("general.alignment", &KeyFields::type, 0, 5),
         ErrorCode::GgufWrongValueType,
         {"key 'general.alignment'", "expected UINT32, found INT32"}},
        {"architecture_not_string",
         renamed("general.architecturX", "general.architecture"),
         ErrorCode::GgufWrongValueType,
         {"key 'general.architecture'", "expected STRING, found UINT32"}},
        {"unknown_tensor_type",
         poked_at_tensor<uint32_t>("tensor_a", &TensorFields::type, 0, 99),
         ErrorCode::GgufUnknownTensorType,
         {"tensor 'tensor_a'", "type id 99"}},
        {"removed_tensor_type",
         poked_at_tensor<uint32_t>("tensor_c", &TensorFields::type, 0, 4),
         ErrorCode::GgufUnknownTensorType,
         {"tensor 'tensor_c'", "type id 4"}},
        {"too_many_dims",
         poked_at_tensor<uint32_t>("tensor_a", &TensorFields::n_dims, 0, 5),
         ErrorCode::GgufTooManyDims,
         {"tensor 'tensor_a'", "5 dimensions", "at most 4"}},
        {"zero_dims",
         poked_at_tensor<uint32_t>("tensor_a", &TensorFields::n_dims, 0, 0),
         ErrorCode::GgufBadDimension,
         {"tensor 'tensor_a'", "0 dimensions"}},
        {"zero_dimension",
         poked_at_tensor<int64_t>("tensor_a", &TensorFields::ne, 8, 0),
         ErrorCode::GgufBadDimension,
         {"tensor 'tensor_a'", "ne[1] = 0"}},
        {"negative_dimension",
         poked_at_tensor<int64_t>("tensor_a", &TensorFields::ne, 0, -8),
         ErrorCode::GgufBadDimension,
         {"tensor 'tensor_a'", "ne[0] = -8"}},
        {"row_not_block_multiple",
         poked_at_tensor<int64_t>("tensor_b", &TensorFields::ne, 0, 48),
         ErrorCode::GgufBadDimension,
         {"tensor 'tensor_b'", "ne[0] = 48", "Q8_0 block size 32"}},
        {"element_count_overflow",
         edited([=](Bytes& b) {
             TensorFields f = tensor_fields(b, "tensor_a");
             poke<int64_t>(b, f.ne, int64_t{1} << 40);
             poke<int64_t>(b, f.ne + 8, int64_t{1} << 40);
         }),
         ErrorCode::GgufSizeOverflow,
         {"tensor 'tensor_a'", "overflows"}},
        {"byte_size_overflow",
         poked_at_tensor<int64_t>("tensor_a", &TensorFields::ne, 0, int64_t{1} << 61),
         ErrorCode::GgufSizeOverflow,
         {"tensor 'tensor_a'", "byte size of F32"}},
        {"data_past_end",
         poked_at_tensor<uint64_t>("tensor_c", &TensorFields::offset, 0, 1u << 20),
         ErrorCode::GgufDataOutsideFile,
         {"tensor 'tensor_c'", "past the end of the file"}},
        {"data_offset_wraps",
         poked_at_tensor<uint64_t>("tensor_c", &TensorFields::offset, 0, ~uint64_t{31}),
         ErrorCode::GgufDataOutsideFile,
         {"tensor 'tensor_c'"}},
        {"file_cut_in_data",
         edited([](Bytes& b) { b.resize(b.size() - 1); }),
         ErrorCode::GgufDataOutsideFile,
         {"tensor 'tensor_c'"}},
        {"overlapping",
         poked_at_tensor<uint64_t>("tensor_c", &TensorFields::offset, 0, 64),
         ErrorCode::GgufOverlappingTensors,
         {"tensor_b", "tensor_c", "overlaps"}},
        {"misaligned",
         poked_at_tensor<uint64_t>("tensor_c", &TensorFields::offset, 0, 161),
         ErrorCode::GgufMisalignedOffset,
         {"tensor 'tensor_c'", "161", "alignment 32"}},
        {"duplicate_key",
         renamed("test.key_b", "test.key_a"),
         ErrorCode::GgufDuplicateKey,
         {"key 'test.key_a'", "duplicate"}},
        {"duplicate_tensor",
         renamed("tensor_b", "tensor_a"),
         ErrorCode::GgufDuplicateTensor,
         {"tensor 'tensor_a'", "duplicate"}},
        {"alignment_not_power_of_two",
         poked_at_key<uint32_t>("general.alignment", &KeyFields::value, 0, 48),
         ErrorCode::GgufBadAlignment,
         {"key 'general.alignment'", "48", "power of two"}},
        {"alignment_zero",
         poked_at_key<uint32_t>("general.alignment", &KeyFields::value, 0, 0),
         ErrorCode::GgufBadAlignment,
         {"general.alignment", "alignment 0"}},
        {"alignment_too_large",
         poked_at_key<uint32_t>("general.alignment", &KeyFields::value, 0, 1u << 21),
         ErrorCode::GgufBadAlignment,
         {"general.alignment", "2097152"}},
        {"nesting_too_deep",
         written([](Writer& w) { w.set("deep", nested_arrays(kMaxArrayDepth + 1)); }),
         ErrorCode::GgufLimit,
         {"key 'deep'", "nested more than 8"}},
        {"key_too_long",
         written([](Writer& w) { w.set(std::string(kMaxKeyBytes + 1, 'k'), Value::u8(0)); }),
         ErrorCode::GgufLimit,
         {"metadata entry #0", "65536", "limit"}},
        {"tensor_name_too_long",
         written([](Writer& w) {
             float x = 0;
             w.add_tensor(std::string(kMaxTensorNameBytes + 1, 'n'), DType::F32, {1}, &x, 4);
         }),
         ErrorCode::GgufLimit,
         {"tensor #0", "1025"}},
    };
}

}  // namespace

class Malformed : public ::testing::TestWithParam<Case> {};

TEST_P(Malformed, GivesItsErrorCodeAndAHelpfulMessage) {
    const Case& c = GetParam();
    Bytes bytes = c.make();
    ASSERT_FALSE(::testing::Test::HasFailure()) << "could not build the file";
    // An exact-size heap copy lets ASan catch any read past the end.
    std::unique_ptr<uint8_t[]> exact(new uint8_t[bytes.size()]);
    std::memcpy(exact.get(), bytes.data(), bytes.size());
    try {
        File::from_memory(exact.get(), bytes.size(), "bad-model.gguf");
        FAIL() << c.name << ": parsed without error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.code(), c.code) << c.name << ": got " << error_code_name(e.code()) << ": " << msg;
        EXPECT_EQ(msg.rfind("bad-model.gguf: ", 0), 0u) << "message must start with the file name: " << msg;
        for (const std::string& part : c.message_parts)
            EXPECT_NE(msg.find(part), std::string::npos) << c.name << ": '" << part << "' missing from: " << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << "message must be one line: " << msg;
    }
}

INSTANTIATE_TEST_SUITE_P(Gguf, Malformed, ::testing::ValuesIn(malformed_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(GgufMalformed, EveryErrorCategoryIsCovered) {
    std::vector<bool> seen(static_cast<size_t>(ErrorCode::GgufLimit) + 1, false);
    for (const Case& c : malformed_cases()) seen[static_cast<size_t>(c.code)] = true;
    for (auto code = static_cast<size_t>(ErrorCode::GgufBadMagic); code < seen.size(); ++code)
        EXPECT_TRUE(seen[code]) << "no malformed case for " << error_code_name(static_cast<ErrorCode>(code));
}

TEST(GgufMalformed, BaseFileIsValid) {
    Bytes b = base_file();
    File f = File::from_memory(b.data(), b.size(), "base.gguf");
    ASSERT_EQ(f.tensors().size(), 3u);
    EXPECT_EQ(f.find_tensor("tensor_b")->offset, 64u);
    EXPECT_EQ(f.find_tensor("tensor_c")->offset, 160u);
    EXPECT_EQ(f.data_offset() + 192, b.size());  // no trailing padding
    // The header needs padding before the data section (used by truncated_before_data).
    EXPECT_NE((tensor_fields(b, "tensor_c").offset + 8) % 32, 0u);
    EXPECT_EQ(f.tensor_data(*f.find_tensor("tensor_c"))[31], 0x33);
}

TEST(GgufMalformed, TruncationAtEveryOffsetIsAnError) {
    const Bytes full = base_file();
    for (size_t n = 0; n < full.size(); ++n) {
        std::unique_ptr<uint8_t[]> exact(new uint8_t[n]);  // exact size: ASan flags any over-read
        std::memcpy(exact.get(), full.data(), n);
        try {
            File::from_memory(exact.get(), n, "cut.gguf");
            ADD_FAILURE() << "prefix of " << n << " bytes parsed";
        } catch (const Error& e) {
            ErrorCode c = e.code();
            EXPECT_TRUE(c == ErrorCode::GgufTruncated || c == ErrorCode::GgufLengthPastEnd ||
                        c == ErrorCode::GgufDataOutsideFile)
                << "prefix " << n << ": " << error_code_name(c) << ": " << e.what();
        }
    }
}

TEST(GgufMalformed, CorruptingAnySingleByteNeverCrashes) {
    const Bytes full = base_file();
    size_t rejected = 0, accepted = 0;
    for (size_t i = 0; i < full.size(); ++i) {
        for (uint8_t mask : {0x01, 0x80, 0xff}) {
            Bytes b = full;
            b[i] ^= mask;
            try {
                File f = File::from_memory(b.data(), b.size(), "flip.gguf");
                ++accepted;
                for (const TensorInfo& t : f.tensors())  // whatever was accepted lies inside the buffer
                    EXPECT_LE(f.data_offset() + t.offset + t.size, b.size()) << "byte " << i;
            } catch (const Error&) {
                ++rejected;
            }
        }
    }
    // Flips inside tensor data (192 bytes x 3 masks) are always accepted; header flips mostly not.
    EXPECT_GE(accepted, 192u * 3);
    EXPECT_GT(rejected, 100u);
}
