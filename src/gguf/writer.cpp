#include "gguf/writer.hpp"

#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "gguf/format.hpp"
#include "tessel/errors.hpp"

namespace tessel::gguf {

namespace detail {

/// Where serialized bytes go; counts them so padding can be computed.
class ByteSink {
public:
    virtual ~ByteSink() = default;
    void write(const void* data, size_t n) {
        if (n == 0) return;
        put(data, n);
        written_ += n;
    }
    uint64_t written() const { return written_; }

protected:
    virtual void put(const void* data, size_t n) = 0;

private:
    uint64_t written_ = 0;
};

}  // namespace detail

namespace {

using detail::ByteSink;

class VectorSink final : public ByteSink {
public:
    explicit VectorSink(std::vector<uint8_t>& out) : out_(out) {}

protected:
    void put(const void* data, size_t n) override {
        const auto* p = static_cast<const uint8_t*>(data);
        out_.insert(out_.end(), p, p + n);
    }

private:
    std::vector<uint8_t>& out_;
};

/// Discards bytes; used to measure the file size.
class CountingSink final : public ByteSink {
protected:
    void put(const void*, size_t) override {}
};

class FileSink final : public ByteSink {
public:
    FileSink(std::FILE* f, const std::string& path) : f_(f), path_(path) {}

protected:
    void put(const void* data, size_t n) override {
        if (std::fwrite(data, 1, n, f_) != n)
            throw Error(ErrorCode::Io, path_ + ": cannot write: " + std::strerror(errno));
    }

private:
    std::FILE* f_;
    const std::string& path_;
};

template <class T>
void put_scalar(ByteSink& s, T v) {
    s.write(&v, sizeof v);
}

void put_string(ByteSink& s, const std::string& str) {
    put_scalar<uint64_t>(s, str.size());
    s.write(str.data(), str.size());
}

void put_padding(ByteSink& s, uint64_t alignment) {
    static const uint8_t zeros[256] = {};
    uint64_t pad = align_up(s.written(), alignment) - s.written();
    while (pad > 0) {
        uint64_t n = pad < sizeof zeros ? pad : sizeof zeros;
        s.write(zeros, n);
        pad -= n;
    }
}

void put_value(ByteSink& s, const Value& v) {
    switch (v.type()) {
        case ValueType::UINT8:
            put_scalar(s, static_cast<uint8_t>(v.as_u64()));
            break;
        case ValueType::INT8:
            put_scalar(s, static_cast<int8_t>(v.as_i64()));
            break;
        case ValueType::UINT16:
            put_scalar(s, static_cast<uint16_t>(v.as_u64()));
            break;
        case ValueType::INT16:
            put_scalar(s, static_cast<int16_t>(v.as_i64()));
            break;
        case ValueType::UINT32:
            put_scalar(s, static_cast<uint32_t>(v.as_u64()));
            break;
        case ValueType::INT32:
            put_scalar(s, static_cast<int32_t>(v.as_i64()));
            break;
        case ValueType::UINT64:
            put_scalar(s, v.as_u64());
            break;
        case ValueType::INT64:
            put_scalar(s, v.as_i64());
            break;
        case ValueType::FLOAT32:
            put_scalar(s, v.as_f32());
            break;
        case ValueType::FLOAT64:
            put_scalar(s, v.as_f64());
            break;
        case ValueType::BOOL:
            put_scalar<uint8_t>(s, v.as_bool() ? 1 : 0);
            break;
        case ValueType::STRING:
            put_string(s, v.as_string());
            break;
        case ValueType::ARRAY:
            put_scalar(s, static_cast<uint32_t>(v.array_type()));
            put_scalar<uint64_t>(s, v.array_size());
            if (value_type_fixed_size(v.array_type()) != 0) {
                const std::vector<uint8_t>& bytes = v.packed_bytes();  // the items as a file stores them
                s.write(bytes.data(), bytes.size());
            } else {
                for (size_t i = 0; i < v.array_size(); ++i) put_value(s, v.at(i));
            }
            break;
    }
}

void check_version(uint32_t version) {
    if (version < kMinVersion || version > kMaxVersion)
        throw Error(ErrorCode::InvalidArgument,
                    "GGUF writer: version " + std::to_string(version) + " is not supported (expected 2 or 3)");
}

}  // namespace

void Writer::set(std::string key, Value v) {
    if (auto expected = well_known_key_mismatch(key, v))
        throw Error(ErrorCode::InvalidArgument,
                    "GGUF writer: key '" + key + "' must be " + *expected + ", got " + value_type_name(v.type()));
    if (key == kAlignmentKey) {
        uint64_t a = v.as_u64();
        if (!valid_alignment(a))
            throw Error(ErrorCode::InvalidArgument, "GGUF writer: alignment " + std::to_string(a) +
                                                        " is not a power of two in [1, " +
                                                        std::to_string(kMaxAlignment) + "]");
        alignment_ = static_cast<uint32_t>(a);
    }
    for (KeyValue& kv : metadata_) {
        if (kv.key == key) {
            kv.value = std::move(v);
            return;
        }
    }
    metadata_.push_back(KeyValue{std::move(key), std::move(v)});
}

void Writer::set_alignment(uint32_t alignment) {
    set(std::string(kAlignmentKey), Value::u32(alignment));
}

const Value* Writer::find(std::string_view key) const {
    for (const KeyValue& kv : metadata_)
        if (kv.key == key) return &kv.value;
    return nullptr;
}

void Writer::add_tensor(std::string name, DType type, std::vector<int64_t> ne, const void* data, size_t bytes) {
    auto bad = [&](const std::string& what) {
        return Error(ErrorCode::InvalidArgument, "GGUF writer: tensor '" + name + "': " + what);
    };
    for (const PendingTensor& t : tensors_)
        if (t.name == name) throw bad("name already added");
    if (ne.empty() || ne.size() > kMaxDims)
        throw bad(std::to_string(ne.size()) + " dimensions, expected 1.." + std::to_string(kMaxDims));
    for (int64_t n : ne)
        if (n <= 0) throw bad("dimension " + std::to_string(n) + " is not positive");
    const DTypeInfo& info = dtype_info(type);
    if (ne[0] % info.block_size != 0)
        throw bad("ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the " + info.name + " block size " +
                  std::to_string(info.block_size));
    uint64_t expected = dtype_row_bytes(type, ne[0]);
    for (size_t d = 1; d < ne.size(); ++d)
        if (__builtin_mul_overflow(expected, static_cast<uint64_t>(ne[d]), &expected))
            throw bad("size overflows 64 bits");
    if (expected != bytes)
        throw bad(std::to_string(bytes) + " bytes given, the shape needs " + std::to_string(expected));
    if (data == nullptr && bytes > 0) throw bad("null data");
    const auto* p = static_cast<const uint8_t*>(data);
    tensors_.push_back(PendingTensor{std::move(name), type, std::move(ne), std::vector<uint8_t>(p, p + bytes)});
}

void Writer::serialize(ByteSink& s, uint32_t version) const {
    s.write(kMagic, sizeof kMagic);
    put_scalar<uint32_t>(s, version);
    put_scalar<uint64_t>(s, tensors_.size());
    put_scalar<uint64_t>(s, metadata_.size());
    for (const KeyValue& kv : metadata_) {
        put_string(s, kv.key);
        put_scalar(s, static_cast<uint32_t>(kv.value.type()));
        put_value(s, kv.value);
    }
    uint64_t offset = 0;
    for (const PendingTensor& t : tensors_) {
        put_string(s, t.name);
        put_scalar<uint32_t>(s, static_cast<uint32_t>(t.ne.size()));
        for (int64_t n : t.ne) put_scalar<uint64_t>(s, static_cast<uint64_t>(n));
        put_scalar(s, static_cast<uint32_t>(t.type));
        put_scalar<uint64_t>(s, offset);
        offset = align_up(offset + t.data.size(), alignment_);
    }
    put_padding(s, alignment_);
    for (const PendingTensor& t : tensors_) {
        s.write(t.data.data(), t.data.size());
        put_padding(s, alignment_);  // data section starts aligned, so file alignment = data alignment
    }
}

uint64_t Writer::file_size() const {
    CountingSink sink;
    serialize(sink, kMaxVersion);
    return sink.written();
}

std::vector<uint8_t> Writer::to_bytes(uint32_t version) const {
    check_version(version);
    std::vector<uint8_t> out;
    out.reserve(file_size());
    VectorSink sink(out);
    serialize(sink, version);
    return out;
}

void Writer::write_file(const std::string& path, uint32_t version) const {
    check_version(version);
    // rename() would replace a device, FIFO or symlink at `path` with the new file.
    std::error_code ec;
    const auto st = std::filesystem::symlink_status(path, ec);
    if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
        throw Error(ErrorCode::InvalidArgument, path + ": not a regular file (refusing to replace it)");
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error(ErrorCode::Io, tmp + ": cannot create: " + std::strerror(errno));
    try {
        FileSink sink(f, tmp);
        serialize(sink, version);
        if (std::fflush(f) != 0 || ::fsync(fileno(f)) != 0)
            throw Error(ErrorCode::Io, tmp + ": cannot flush: " + std::strerror(errno));
    } catch (...) {
        std::fclose(f);
        std::remove(tmp.c_str());
        throw;
    }
    if (std::fclose(f) != 0) {
        int err = errno;
        std::remove(tmp.c_str());
        throw Error(ErrorCode::Io, tmp + ": cannot close: " + std::strerror(err));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        std::remove(tmp.c_str());
        throw Error(ErrorCode::Io, path + ": cannot rename " + tmp + " into place: " + std::strerror(err));
    }
}

}  // namespace tessel::gguf
