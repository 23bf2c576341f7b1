// Writer -> reader round trips: every value type, every tensor type, v2/v3, alignments, files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "gguf/format.hpp"
#include "gguf_test_util.hpp"
#include "support/test_paths.hpp"

using namespace tessel;
using namespace tessel::gguf;
using namespace tessel::gguf::testing;

namespace {

// One value of every type, with edge cases: extremes, NaN/inf/-0, empty and UTF-8 strings,
// empty arrays, arrays of every element type, nested arrays.
std::vector<KeyValue> all_value_kinds() {
    std::vector<KeyValue> kvs = {
        {"t.u8", Value::u8(255)},
        {"t.i8", Value::i8(-128)},
        {"t.u16", Value::u16(65535)},
        {"t.i16", Value::i16(-32768)},
        {"t.u32", Value::u32(4000000000u)},
        {"t.i32", Value::i32(-2000000000)},
        {"t.u64", Value::u64(std::numeric_limits<uint64_t>::max())},
        {"t.i64", Value::i64(std::numeric_limits<int64_t>::min())},
        {"t.f32", Value::f32(3.25f)},
        {"t.f32_nan", Value::f32(std::numeric_limits<float>::quiet_NaN())},
        {"t.f32_neg_zero", Value::f32(-0.0f)},
        {"t.f32_inf", Value::f32(-std::numeric_limits<float>::infinity())},
        {"t.f64", Value::f64(1.0 / 3.0)},
        {"t.bool_true", Value::boolean(true)},
        {"t.bool_false", Value::boolean(false)},
        {"t.str_empty", Value::string("")},
        {"t.str_utf8", Value::string("h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\xA6\x99")},
        {"t.str_nul", Value::string(std::string("a\0b", 3))},
        {"t.arr_empty", Value::array(ValueType::UINT8, {})},
        {"t.arr_empty_str", Value::array(ValueType::STRING, {})},
        {"t.arr_u8", Value::array(ValueType::UINT8, {Value::u8(0), Value::u8(7), Value::u8(255)})},
        {"t.arr_i8", Value::array(ValueType::INT8, {Value::i8(-1), Value::i8(127)})},
        {"t.arr_u16", Value::array(ValueType::UINT16, {Value::u16(1), Value::u16(65535)})},
        {"t.arr_i16", Value::array(ValueType::INT16, {Value::i16(-300)})},
        {"t.arr_u32", Value::array(ValueType::UINT32, {Value::u32(1), Value::u32(2), Value::u32(3)})},
        {"t.arr_i32", Value::i32s({-5, 0, 5})},
        {"t.arr_u64", Value::array(ValueType::UINT64, {Value::u64(1ull << 63)})},
        {"t.arr_i64", Value::array(ValueType::INT64, {Value::i64(-(1ll << 62))})},
        {"t.arr_f32", Value::f32s({0.5f, -1.5f, 1e-30f})},
        {"t.arr_f64", Value::array(ValueType::FLOAT64, {Value::f64(2.5e300)})},
        {"t.arr_bool", Value::array(ValueType::BOOL, {Value::boolean(true), Value::boolean(false)})},
        {"t.arr_str", Value::strings({"", "a", "\xE2\x96\x81the", "<|im_start|>"})},
        {"t.nested",
         Value::array(ValueType::ARRAY,
                      {Value::array(ValueType::UINT32, {Value::u32(1)}), Value::array(ValueType::STRING, {}),
                       Value::array(ValueType::ARRAY, {Value::array(ValueType::FLOAT32, {Value::f32(2.0f)})})})},
        {"general.architecture", Value::string("llama")},
    };
    return kvs;
}

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 131 + seed * 17 + (i >> 8)) & 0xff);
    return v;
}

}  // namespace

class RoundTripVersion : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RoundTripVersion, EveryValueTypeReadsBackEqual) {
    Writer w;
    const auto kvs = all_value_kinds();
    for (const auto& kv : kvs) w.set(kv.key, kv.value);
    Bytes bytes = w.to_bytes(GetParam());
    File f = File::from_memory(bytes.data(), bytes.size(), "values.gguf");

    EXPECT_EQ(f.version(), GetParam());
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_TRUE(f.tensors().empty());
    ASSERT_EQ(f.metadata().size(), kvs.size());
    for (size_t i = 0; i < kvs.size(); ++i) {
        EXPECT_EQ(f.metadata()[i].key, kvs[i].key);
        EXPECT_TRUE(f.metadata()[i].value == kvs[i].value) << kvs[i].key << ": " << f.metadata()[i].value.to_string();
    }
    // Spot checks through the typed accessors.
    EXPECT_EQ(f.find("t.u8")->as_u64(), 255u);
    EXPECT_EQ(f.find("t.i64")->as_i64(), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(f.find("t.u64")->as_u64(), std::numeric_limits<uint64_t>::max());
    EXPECT_TRUE(std::isnan(f.find("t.f32_nan")->as_f64()));
    EXPECT_TRUE(std::signbit(f.find("t.f32_neg_zero")->as_f32()));
    EXPECT_DOUBLE_EQ(f.find("t.f64")->as_f64(), 1.0 / 3.0);
    EXPECT_EQ(f.find("t.str_utf8")->as_string(), "h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\xA6\x99");
    EXPECT_EQ(f.find("t.str_nul")->as_string().size(), 3u);
    EXPECT_EQ(f.find("t.arr_str")->at(2).as_string(), "\xE2\x96\x81the");
    const Value& nested = *f.find("t.nested");
    EXPECT_EQ(nested.array_type(), ValueType::ARRAY);
    EXPECT_EQ(nested.at(2).at(0).at(0).as_f32(), 2.0f);
    EXPECT_EQ(nested.at(1).array_type(), ValueType::STRING);
    EXPECT_EQ(f.find("general.architecture")->as_string(), "llama");
    EXPECT_EQ(f.find("missing.key"), nullptr);
}

TEST_P(RoundTripVersion, EveryTensorTypeWithItsByteSize) {
    Writer w;
    w.set("general.architecture", Value::string("test"));
    struct Added {
        std::string name;
        DType type;
        uint64_t bytes;
        std::vector<uint8_t> data;
    };
    std::vector<Added> added;
    for (uint32_t id = 0; id < kDTypeIdEnd; ++id) {
        const DTypeInfo* info = dtype_info_from_id(id);
        if (!info) continue;
        // Two blocks per row, three rows: 6 blocks.
        uint64_t bytes = 6ull * info->block_bytes;
        std::string name = std::string("w.") + info->name;
        auto data = pattern(bytes, id);
        w.add_tensor(name, info->type, {2 * int64_t{info->block_size}, 3}, data.data(), data.size());
        added.push_back({name, info->type, bytes, std::move(data)});
    }
    ASSERT_EQ(added.size(), 34u);  // every entry of the dtype table
    Bytes bytes = w.to_bytes(GetParam());
    File f = File::from_memory(bytes.data(), bytes.size(), "tensors.gguf");
    ASSERT_EQ(f.tensors().size(), added.size());
    EXPECT_EQ(f.data_offset() % 32, 0u);
    for (size_t i = 0; i < added.size(); ++i) {
        const TensorInfo& t = f.tensors()[i];
        EXPECT_EQ(t.name, added[i].name);
        EXPECT_EQ(t.type, added[i].type);
        EXPECT_EQ(t.n_dims, 2u);
        EXPECT_EQ(t.ne[0], 2 * int64_t{dtype_info(t.type).block_size});
        EXPECT_EQ(t.ne[1], 3);
        EXPECT_EQ(t.ne[2], 1);
        EXPECT_EQ(t.ne[3], 1);
        EXPECT_EQ(t.size, added[i].bytes) << t.name;
        EXPECT_EQ(t.offset % 32, 0u);
        EXPECT_EQ(f.find_tensor(t.name), &t);
        const uint8_t* p = f.tensor_data(t);
        EXPECT_EQ(p, bytes.data() + f.data_offset() + t.offset);
        EXPECT_TRUE(std::equal(p, p + t.size, added[i].data.begin())) << t.name;
    }
    // Independent byte sizes (GGUF block layouts) for a few types: 6 blocks each.
    EXPECT_EQ(f.find_tensor("w.Q4_K")->size, 6u * 144);
    EXPECT_EQ(f.find_tensor("w.Q8_0")->size, 6u * 34);
    EXPECT_EQ(f.find_tensor("w.IQ2_XXS")->size, 6u * 66);  // unsupported for compute, loads fine
    EXPECT_EQ(f.find_tensor("w.F16")->size, 6u * 2);
    EXPECT_EQ(f.find_tensor("w.MXFP4")->size, 6u * 17);
}

INSTANTIATE_TEST_SUITE_P(Gguf, RoundTripVersion, ::testing::Values(2u, 3u));

class RoundTripAlignment : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RoundTripAlignment, OffsetsFollowTheAlignment) {
    const uint32_t a = GetParam();
    Writer w;
    w.set_alignment(a);
    auto x = pattern(4 * 5, 1), y = pattern(2 * 7, 2), z = pattern(34, 3);
    w.add_tensor("x", DType::F32, {5}, x.data(), x.size());
    w.add_tensor("y", DType::F16, {7}, y.data(), y.size());
    w.add_tensor("z", DType::Q8_0, {32}, z.data(), z.size());
    Bytes bytes = w.to_bytes();
    EXPECT_EQ(bytes.size(), w.file_size());
    File f = File::from_memory(bytes.data(), bytes.size(), "aligned.gguf");
    EXPECT_EQ(f.alignment(), a);
    EXPECT_EQ(f.find("general.alignment")->type(), ValueType::UINT32);
    EXPECT_EQ(f.find("general.alignment")->as_u64(), a);
    EXPECT_EQ(f.data_offset() % a, 0u);
    uint64_t expect_offset = 0;
    for (const TensorInfo& t : f.tensors()) {
        EXPECT_EQ(t.offset, expect_offset) << t.name;
        expect_offset = align_up(t.offset + t.size, a);
    }
    EXPECT_EQ(f.file_size(), f.data_offset() + expect_offset);
    const uint8_t* zp = f.tensor_data(*f.find_tensor("z"));
    EXPECT_TRUE(std::equal(zp, zp + 34, z.begin()));
}

INSTANTIATE_TEST_SUITE_P(Gguf, RoundTripAlignment, ::testing::Values(1u, 8u, 64u, 4096u));

TEST(GgufWriter, SetReplacesInPlaceAndKeepsOrder) {
    Writer w;
    w.set("a", Value::u32(1));
    w.set("b", Value::string("x"));
    w.set("a", Value::f32(2.0f));
    Bytes bytes = w.to_bytes();
    File f = File::from_memory(bytes.data(), bytes.size(), "order.gguf");
    ASSERT_EQ(f.metadata().size(), 2u);
    EXPECT_EQ(f.metadata()[0].key, "a");
    EXPECT_EQ(f.metadata()[0].value.as_f32(), 2.0f);
    EXPECT_EQ(f.metadata()[1].key, "b");
}

TEST(GgufWriter, RejectsInvalidInput) {
    Writer w;
    float data[4] = {};
    auto code_of = [](auto&& fn) {
        try {
            fn();
        } catch (const Error& e) {
            return e.code();
        }
        return ErrorCode::Io;  // "no error" marker distinct from the expected code
    };
    EXPECT_EQ(code_of([&] { w.set_alignment(48); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { w.set_alignment(0); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { w.set("general.alignment", Value::i32(32)); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { w.set("general.architecture", Value::u32(1)); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { w.set("tokenizer.ggml.tokens", Value::f32s({1.0f})); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { w.add_tensor("t", DType::F32, {4}, data, 12); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { w.add_tensor("t", DType::F32, {0}, data, 0); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { w.add_tensor("t", DType::F32, {1, 1, 1, 1, 1}, data, 4); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { w.add_tensor("t", DType::Q8_0, {16}, data, 16); }), ErrorCode::InvalidArgument);
    w.add_tensor("t", DType::F32, {4}, data, 16);
    EXPECT_EQ(code_of([&] { w.add_tensor("t", DType::F32, {4}, data, 16); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { w.to_bytes(1); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(w.alignment(), 32u);
}

TEST(GgufFile, WriteFileThenOpenMapsTheData) {
    auto dir = tessel::test::temp_dir();
    auto path = (dir / "model.gguf").string();
    Writer w;
    w.set("general.architecture", Value::string("llama"));
    w.set_alignment(64);
    auto data = pattern(4 * 16 * 3, 9);
    w.add_tensor("blk.0.attn_q.weight", DType::F32, {16, 3}, data.data(), data.size());
    w.write_file(path);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    EXPECT_EQ(std::filesystem::file_size(path), w.file_size());

    File f = File::open(path);
    EXPECT_EQ(f.name(), path);
    EXPECT_EQ(f.file_size(), w.file_size());
    EXPECT_EQ(f.alignment(), 64u);
    const TensorInfo* t = f.find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_TRUE(std::equal(f.tensor_data(*t), f.tensor_data(*t) + t->size, data.begin()));

    // Moving keeps the mapping alive and the pointers valid.
    const uint8_t* before = f.tensor_data(*t);
    File moved = std::move(f);
    EXPECT_EQ(moved.tensor_data(*moved.find_tensor("blk.0.attn_q.weight")), before);
    EXPECT_EQ(moved.tensor_data(*moved.find_tensor("blk.0.attn_q.weight"))[5], data[5]);
}

TEST(GgufFile, IoErrorsNameThePath) {
    auto dir = tessel::test::temp_dir();
    try {
        File::open((dir / "absent.gguf").string());
        FAIL() << "opening a missing file succeeded";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Io);
        EXPECT_NE(std::string(e.what()).find("absent.gguf"), std::string::npos) << e.what();
    }
    try {
        File::open(dir.string());
        FAIL() << "opening a directory succeeded";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Io);
    }
    // An empty file is malformed, not an I/O failure.
    auto empty = (dir / "empty.gguf").string();
    std::ofstream(empty).close();
    try {
        File::open(empty);
        FAIL() << "opening an empty file succeeded";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::GgufTruncated);
        EXPECT_NE(std::string(e.what()).find("empty.gguf"), std::string::npos) << e.what();
    }
    // write_file into a missing directory fails without leaving anything behind.
    Writer w;
    auto bad = (dir / "no-such-dir" / "out.gguf").string();
    try {
        w.write_file(bad);
        FAIL() << "writing into a missing directory succeeded";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Io);
        EXPECT_NE(std::string(e.what()).find("out.gguf.tmp"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(bad));
}
