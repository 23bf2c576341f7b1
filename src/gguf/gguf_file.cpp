// The public GGUF inspection API (include/tessel/gguf_file.hpp) over the validating reader.
#include "tessel/gguf_file.hpp"

#include <map>

#include "core/dtype.hpp"
#include "gguf/reader.hpp"

namespace tessel {

struct GgufValue::Impl {
    gguf::Value value;
};

struct GgufFile::Impl {
    std::string path;
    uint32_t version = 0;
    uint64_t alignment = 0, data_offset = 0, file_size = 0;
    std::vector<GgufKeyValue> metadata;
    std::map<std::string, size_t, std::less<>> index;  // key -> metadata entry
    std::vector<GgufTensorInfo> tensors;
};

const char* gguf_type_name(GgufType type) { return gguf::value_type_name(static_cast<gguf::ValueType>(type)); }

GgufValue::GgufValue(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

GgufType GgufValue::type() const { return static_cast<GgufType>(impl_->value.type()); }
uint64_t GgufValue::as_u64() const { return impl_->value.as_u64(); }
int64_t GgufValue::as_i64() const { return impl_->value.as_i64(); }
double GgufValue::as_f64() const { return impl_->value.as_f64(); }
bool GgufValue::as_bool() const { return impl_->value.as_bool(); }
const std::string& GgufValue::as_string() const { return impl_->value.as_string(); }
GgufType GgufValue::array_type() const { return static_cast<GgufType>(impl_->value.array_type()); }
size_t GgufValue::array_size() const { return impl_->value.array_size(); }
GgufValue GgufValue::at(size_t i) const { return GgufValue(std::make_shared<const Impl>(Impl{impl_->value.at(i)})); }

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&& other) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&& other) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::string& path) {
    const gguf::File f = gguf::File::open(path);
    auto impl = std::make_unique<Impl>();
    impl->path = f.name();
    impl->version = f.version();
    impl->alignment = f.alignment();
    impl->data_offset = f.data_offset();
    impl->file_size = f.file_size();
    impl->metadata.reserve(f.metadata().size());
    for (const gguf::KeyValue& kv : f.metadata()) {
        impl->index.emplace(kv.key, impl->metadata.size());
        impl->metadata.push_back({kv.key, GgufValue(std::make_shared<const GgufValue::Impl>(GgufValue::Impl{kv.value}))});
    }
    impl->tensors.reserve(f.tensors().size());
    for (const gguf::TensorInfo& t : f.tensors()) {
        const DTypeInfo& info = dtype_info(t.type);
        impl->tensors.push_back({t.name, info.name, info.supported, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.offset, t.size});
    }
    return GgufFile(std::move(impl));
}

const std::string& GgufFile::path() const { return impl_->path; }
uint32_t GgufFile::version() const { return impl_->version; }
uint64_t GgufFile::alignment() const { return impl_->alignment; }
uint64_t GgufFile::data_offset() const { return impl_->data_offset; }
uint64_t GgufFile::file_size() const { return impl_->file_size; }
const std::vector<GgufKeyValue>& GgufFile::metadata() const { return impl_->metadata; }
const std::vector<GgufTensorInfo>& GgufFile::tensors() const { return impl_->tensors; }

const GgufValue* GgufFile::find(std::string_view key) const {
    const auto it = impl_->index.find(key);
    return it == impl_->index.end() ? nullptr : &impl_->metadata[it->second].value;
}

}  // namespace tessel
