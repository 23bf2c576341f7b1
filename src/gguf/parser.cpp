#include "gguf/parser.hpp"
#include "core/env.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>

#include "gguf/format.hpp"
#include "tessel/errors.hpp"

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace tessel::gguf::detail {
namespace {

/// Largest vector capacity reserved up front from a declared count (items); larger collections
/// grow as their items are actually read, so memory follows the bytes consumed.
constexpr uint64_t kMaxReserve = 1u << 16;
/// Bytes read between two reports to the ConsumedFn while copying a large array.
constexpr uint64_t kConsumedStep = 8u << 20;

std::string num(uint64_t v) {
    return std::to_string(v);
}

class Parser {
public:
    Parser(const uint8_t* data, size_t size, const std::string& name, uint64_t budget, const ConsumedFn& consumed)
        : data_(data), size_(size), name_(name), budget_(budget), consumed_(consumed) {}

    ParsedFile run() {
        context_ = "header";
        read_magic_and_version();
        uint64_t tensor_count = read<uint64_t>("the tensor count");
        uint64_t kv_count = read<uint64_t>("the metadata count");
        check_count(kv_count, kMinKeyValueBytes, kMaxKeyValues, "metadata count");
        check_count(tensor_count, kMinTensorInfoBytes, kMaxTensors, "tensor count");

        read_metadata(kv_count);
        read_alignment();
        read_tensor_infos(tensor_count);
        place_data_section();
        check_tensor_ranges();
        check_overlaps();
        return std::move(out_);
    }

private:
    // ---- errors and primitive reads ------------------------------------------------------

    [[noreturn]] void fail(ErrorCode code, const std::string& what) const {
        throw Error(code, name_ + ": " + context_ + ": " + what);
    }

    uint64_t remaining() const { return size_ - pos_; }
    std::string at() const { return " at offset " + num(pos_); }

    /// Fails with GgufTruncated unless n more bytes exist.
    void need(uint64_t n, const char* field) const {
        if (n > remaining())
            fail(ErrorCode::GgufTruncated, std::string("file ends inside ") + field + at() + " (needs " + num(n) +
                                               " bytes, " + num(remaining()) + " remain)");
    }

    template <class T>
    T read(const char* field) {
        need(sizeof(T), field);
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    /// A declared count of items, each at least min_bytes long, must fit in the bytes that
    /// remain (GgufLengthPastEnd) and stay within `limit` (GgufLimit). Runs before allocating.
    void check_count(uint64_t count, uint64_t min_bytes, uint64_t limit, const char* what) const {
        if (min_bytes == 1 && count > remaining())
            fail(ErrorCode::GgufLengthPastEnd, std::string(what) + " " + num(count) +
                                                   " runs past the end of the file: only " + num(remaining()) +
                                                   " bytes remain" + at());
        if (min_bytes > 1 && count > remaining() / min_bytes)
            fail(ErrorCode::GgufLengthPastEnd,
                 std::string(what) + " " + num(count) + " needs at least " +
                     (count > std::numeric_limits<uint64_t>::max() / min_bytes ? std::string("2^64")
                                                                               : num(count * min_bytes)) +
                     " bytes but only " + num(remaining()) + " remain" + at());
        if (count > limit)
            fail(ErrorCode::GgufLimit,
                 std::string(what) + " " + num(count) + " exceeds tessel's limit of " + num(limit));
    }

    std::string read_string(const char* field, uint64_t max_bytes) {
        uint64_t len = read<uint64_t>(field);
        check_count(len, 1, max_bytes, field);
        std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
        pos_ += len;
        return s;
    }

    // ---- header ---------------------------------------------------------------------------

    void read_magic_and_version() {
        need(sizeof kMagic, "the magic");
        if (std::memcmp(data_, kMagic, sizeof kMagic) != 0)
            fail(ErrorCode::GgufBadMagic, "not a GGUF file: first bytes are " +
                                              quote_for_message({reinterpret_cast<const char*>(data_), 4}) +
                                              ", expected \"GGUF\"");
        pos_ = sizeof kMagic;
        uint32_t version = read<uint32_t>("the version");
        if (version == 1) fail(ErrorCode::GgufUnsupportedVersion, "GGUF version 1 is not supported (expected 2 or 3)");
        if (version >= 0x10000 && (version & 0xffff) == 0)
            fail(ErrorCode::GgufUnsupportedVersion,
                 "version field " + num(version) + " looks byte-swapped: big-endian GGUF files are not supported");
        if (version < kMinVersion || version > kMaxVersion)
            fail(ErrorCode::GgufUnsupportedVersion, "unsupported GGUF version " + num(version) + " (expected 2 or 3)");
        out_.version = version;
    }

    // ---- metadata -------------------------------------------------------------------------

    ValueType read_value_type(const char* field) {
        uint32_t id = read<uint32_t>(field);
        if (!is_value_type_id(id))
            fail(ErrorCode::GgufUnknownValueType,
                 std::string(field) + " has unknown id " + num(id) + " (expected a value type id 0..12)" + at());
        return static_cast<ValueType>(id);
    }

    Value read_value(ValueType type, uint32_t depth) {
        switch (type) {
            case ValueType::UINT8:
                return Value::u8(read<uint8_t>("a UINT8 value"));
            case ValueType::INT8:
                return Value::i8(read<int8_t>("an INT8 value"));
            case ValueType::UINT16:
                return Value::u16(read<uint16_t>("a UINT16 value"));
            case ValueType::INT16:
                return Value::i16(read<int16_t>("an INT16 value"));
            case ValueType::UINT32:
                return Value::u32(read<uint32_t>("a UINT32 value"));
            case ValueType::INT32:
                return Value::i32(read<int32_t>("an INT32 value"));
            case ValueType::UINT64:
                return Value::u64(read<uint64_t>("a UINT64 value"));
            case ValueType::INT64:
                return Value::i64(read<int64_t>("an INT64 value"));
            case ValueType::FLOAT32:
                return Value::f32(read<float>("a FLOAT32 value"));
            case ValueType::FLOAT64:
                return Value::f64(read<double>("a FLOAT64 value"));
            case ValueType::BOOL:
                return Value::boolean(read<uint8_t>("a BOOL value") != 0);
            case ValueType::STRING: {
                Value v = Value::string(read_string("a string length", kMaxStringBytes));
                charge(v.as_string().size());
                return v;
            }
            case ValueType::ARRAY:
                return read_array(depth + 1);
        }
        fail(ErrorCode::GgufUnknownValueType, "unknown value type " + num(static_cast<uint32_t>(type)));
    }

    /// Tells the file's owner that the bytes before the current offset were read (and copied).
    void report_consumed() {
        if (consumed_) consumed_(pos_);
        reported_ = pos_;
    }

    /// Counts `bytes` of metadata memory against the budget (TESSEL_GGUF_MAX_METADATA), before
    /// they are allocated.
    void charge(uint64_t bytes) {
        used_ += bytes;
        if (used_ > budget_)
            fail(ErrorCode::GgufLimit, "the metadata needs more than tessel's budget of " + num(budget_) +
                                           " bytes in memory (TESSEL_GGUF_MAX_METADATA)" + at());
    }

    Value read_array(uint32_t depth) {
        if (depth > kMaxArrayDepth)
            fail(ErrorCode::GgufLimit, "arrays nested more than " + num(kMaxArrayDepth) + " deep" + at());
        ValueType element = read_value_type("an array element type");
        uint64_t count = read<uint64_t>("an array length");
        check_count(count, min_element_bytes(element), kMaxArrayItems, "array length");
        if (const uint32_t size = value_type_fixed_size(element)) {  // the items' bytes, as stored
            charge(count * size);
            std::vector<uint8_t> bytes;
            bytes.reserve(count * size);
            for (uint64_t done = 0; done < count * size;) {  // in steps, telling the owner what was read
                const uint64_t step = std::min<uint64_t>(count * size - done, kConsumedStep);
                bytes.insert(bytes.end(), data_ + pos_, data_ + pos_ + step);
                pos_ += step, done += step;
                report_consumed();
            }
            return Value::packed_array(element, std::move(bytes));
        }
        if (element == ValueType::STRING) {
            charge(count * sizeof(uint32_t));
            std::string chars;
            std::vector<uint32_t> ends;
            ends.reserve(count);
            for (uint64_t i = 0; i < count; ++i) {
                const uint64_t len = read<uint64_t>("a string length");
                check_count(len, 1, kMaxStringBytes, "a string length");
                if (chars.size() + len > UINT32_MAX)
                    fail(ErrorCode::GgufLimit, "a string array holds more than 4 GiB of text" + at());
                charge(len);
                chars.append(reinterpret_cast<const char*>(data_ + pos_), len);
                pos_ += len;
                ends.push_back(static_cast<uint32_t>(chars.size()));
                if (pos_ - reported_ >= kConsumedStep) report_consumed();
            }
            return Value::string_array(std::move(chars), std::move(ends));
        }
        charge(count * sizeof(Value));
        std::vector<Value> items;
        items.reserve(std::min(count, kMaxReserve));
        for (uint64_t i = 0; i < count; ++i) items.push_back(read_value(element, depth));
        return Value::array(element, std::move(items));
    }

    void read_metadata(uint64_t count) {
        out_.metadata.reserve(std::min(count, kMaxReserve));
        for (uint64_t i = 0; i < count; ++i) {
            context_ = "metadata entry #" + num(i);
            std::string key = read_string("a key length", kMaxKeyBytes);
            context_ = "key " + quote_for_message(key);
            charge(sizeof(KeyValue) + key.size());
            ValueType type = read_value_type("the value type");
            Value value = read_value(type, 0);
            if (auto expected = well_known_key_mismatch(key, value))
                fail(ErrorCode::GgufWrongValueType, "expected " + *expected + ", found " + describe_type(value));
            auto [it, inserted] = out_.key_index.emplace(key, out_.metadata.size());
            if (!inserted)
                fail(ErrorCode::GgufDuplicateKey,
                     "duplicate key (entries #" + num(it->second) + " and #" + num(i) + ")");
            out_.metadata.push_back(KeyValue{std::move(key), std::move(value)});
        }
    }

    static std::string describe_type(const Value& v) {
        if (v.type() == ValueType::ARRAY) return std::string("ARRAY of ") + value_type_name(v.array_type());
        return value_type_name(v.type());
    }

    void read_alignment() {
        out_.alignment = kDefaultAlignment;
        auto it = out_.key_index.find(kAlignmentKey);
        if (it == out_.key_index.end()) return;
        context_ = "key " + quote_for_message(kAlignmentKey);
        uint64_t a = out_.metadata[it->second].value.as_u64();  // type checked as UINT32 above
        if (!valid_alignment(a))
            fail(ErrorCode::GgufBadAlignment,
                 "alignment " + num(a) + " is invalid: expected a power of two in [1, " + num(kMaxAlignment) + "]");
        out_.alignment = a;
    }

    // ---- tensor infos -----------------------------------------------------------------------

    void read_tensor_infos(uint64_t count) {
        out_.tensors.reserve(std::min(count, kMaxReserve));
        for (uint64_t i = 0; i < count; ++i) {
            context_ = "tensor #" + num(i);
            TensorInfo t = read_tensor_info();
            auto [it, inserted] = out_.tensor_index.emplace(t.name, out_.tensors.size());
            if (!inserted)
                fail(ErrorCode::GgufDuplicateTensor,
                     "duplicate tensor name (tensors #" + num(it->second) + " and #" + num(i) + ")");
            out_.tensors.push_back(std::move(t));
        }
    }

    TensorInfo read_tensor_info() {
        TensorInfo t{};
        t.name = read_string("a tensor name length", kMaxTensorNameBytes);
        context_ = "tensor " + quote_for_message(t.name);
        t.n_dims = read<uint32_t>("n_dims");
        if (t.n_dims > kMaxDims)
            fail(ErrorCode::GgufTooManyDims, "has " + num(t.n_dims) + " dimensions, expected at most " + num(kMaxDims));
        if (t.n_dims == 0) fail(ErrorCode::GgufBadDimension, "has 0 dimensions, expected 1.." + num(kMaxDims));
        for (uint32_t d = 0; d < kMaxDims; ++d) t.ne[d] = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            auto ne = static_cast<int64_t>(read<uint64_t>("a dimension"));
            if (ne <= 0)
                fail(ErrorCode::GgufBadDimension,
                     "ne[" + num(d) + "] = " + std::to_string(ne) + ", expected a positive dimension");
            t.ne[d] = ne;
        }
        uint32_t type_id = read<uint32_t>("the tensor type");
        const DTypeInfo* info = dtype_info_from_id(type_id);
        if (!info)
            fail(ErrorCode::GgufUnknownTensorType,
                 "unknown tensor type id " + num(type_id) + " (not in the GGML type table)");
        t.type = info->type;
        if (t.ne[0] % info->block_size != 0)
            fail(ErrorCode::GgufBadDimension, "ne[0] = " + std::to_string(t.ne[0]) + " is not a multiple of the " +
                                                  info->name + " block size " + num(info->block_size));
        t.size = tensor_bytes(t, *info);
        t.offset = read<uint64_t>("the data offset");
        if (t.offset % out_.alignment != 0)
            fail(ErrorCode::GgufMisalignedOffset,
                 "data offset " + num(t.offset) + " is not a multiple of the alignment " + num(out_.alignment));
        return t;
    }

    /// Bytes of data for t; fails with GgufSizeOverflow when the element count exceeds int64 or
    /// the byte count exceeds uint64.
    uint64_t tensor_bytes(const TensorInfo& t, const DTypeInfo& info) const {
        int64_t elements = 1;
        for (int64_t ne : t.ne)
            if (__builtin_mul_overflow(elements, ne, &elements))
                fail(ErrorCode::GgufSizeOverflow, "element count " + shape_text(t) + " overflows 64 bits");
        uint64_t bytes = static_cast<uint64_t>(t.ne[0] / info.block_size);
        bool overflow = __builtin_mul_overflow(bytes, uint64_t{info.block_bytes}, &bytes);
        for (int d = 1; d < 4; ++d)
            overflow = overflow || __builtin_mul_overflow(bytes, static_cast<uint64_t>(t.ne[d]), &bytes);
        if (overflow)
            fail(ErrorCode::GgufSizeOverflow,
                 "byte size of " + std::string(info.name) + " " + shape_text(t) + " overflows 64 bits");
        return bytes;
    }

    static std::string shape_text(const TensorInfo& t) {
        std::string s = "[";
        for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
        return s + "]";
    }

    // ---- data section -----------------------------------------------------------------------

    void place_data_section() {
        out_.data_offset = align_up(pos_, out_.alignment);
        context_ = "data section";
        if (!out_.tensors.empty() && out_.data_offset > size_)
            fail(ErrorCode::GgufTruncated,
                 "file ends at " + num(size_) + " before the data section at offset " + num(out_.data_offset));
    }

    void check_tensor_ranges() {
        uint64_t data_bytes = out_.data_offset <= size_ ? size_ - out_.data_offset : 0;
        for (const TensorInfo& t : out_.tensors) {
            if (t.offset > data_bytes || t.size > data_bytes - t.offset) {
                context_ = "tensor " + quote_for_message(t.name);
                fail(ErrorCode::GgufDataOutsideFile,
                     "data at offset " + num(t.offset) + " (+" + num(t.size) +
                         " bytes) in the data section ends past the end of the file (data section holds " +
                         num(data_bytes) + " bytes from file offset " + num(out_.data_offset) + ")");
            }
        }
    }

    void check_overlaps() {
        std::vector<size_t> order(out_.tensors.size());
        std::iota(order.begin(), order.end(), size_t{0});
        const auto& ts = out_.tensors;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ts[a].offset < ts[b].offset; });
        for (size_t i = 1; i < order.size(); ++i) {
            const TensorInfo& a = ts[order[i - 1]];
            const TensorInfo& b = ts[order[i]];
            if (a.offset + a.size > b.offset) {
                context_ = "tensor " + quote_for_message(b.name);
                fail(ErrorCode::GgufOverlappingTensors, "data [" + num(b.offset) + ", " + num(b.offset + b.size) +
                                                            ") overlaps tensor " + quote_for_message(a.name) + " [" +
                                                            num(a.offset) + ", " + num(a.offset + a.size) + ")");
            }
        }
    }

    const uint8_t* data_;
    uint64_t size_;
    const std::string& name_;
    uint64_t pos_ = 0;
    uint64_t budget_;
    uint64_t used_ = 0;  // metadata bytes charged so far
    const ConsumedFn& consumed_;
    uint64_t reported_ = 0;  // the last offset given to consumed_
    std::string context_;
    ParsedFile out_;
};


}  // namespace

std::string quote_for_message(std::string_view s) {
    constexpr size_t kMaxShown = 80;
    std::string out = "'";
    for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
        auto u = static_cast<unsigned char>(s[i]);
        if (u < 0x20 || u == 0x7f || u == '\'' || u == '\\') {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += s[i];
        }
    }
    if (s.size() > kMaxShown) out += "...(" + num(s.size()) + " bytes)";
    return out + "'";
}

uint64_t metadata_budget() {
    return env::whole_number("TESSEL_GGUF_MAX_METADATA", 1, UINT64_MAX, kDefaultMetadataBudget);
}

ParsedFile parse_gguf(const uint8_t* data, size_t size, const std::string& name, const ConsumedFn& consumed) {
    return Parser(data, size, name, metadata_budget(), consumed).run();
}

}  // namespace tessel::gguf::detail
