#include "gguf/reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "gguf/parser.hpp"
#include "tessel/errors.hpp"

namespace tessel::gguf {
namespace {

[[noreturn]] void throw_io(const std::string& path, const char* action, int err) {
    throw Error(ErrorCode::Io, path + ": cannot " + action + ": " + std::strerror(err));
}

/// Closes a file descriptor when leaving scope.
struct FdGuard {
    int fd;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};

void (*g_after_parse)(const std::string&) = nullptr;

}  // namespace

void detail::set_after_parse_hook(void (*hook)(const std::string& path)) { g_after_parse = hook; }

File::File(const uint8_t* data, size_t size, bool owns_mapping, std::string name)
    : name_(std::move(name)), data_(data), size_(size), owns_mapping_(owns_mapping) {}

File File::open(const std::string& path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected as not regular below.
    FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (fd.fd < 0) throw_io(path, "open", errno);
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0) throw_io(path, "stat", errno);
    if (!S_ISREG(st.st_mode)) throw Error(ErrorCode::Io, path + ": not a regular file");
    auto size = static_cast<size_t>(st.st_size);
    const uint8_t* data = nullptr;
    if (size > 0) {
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
        if (p == MAP_FAILED) throw_io(path, "mmap", errno);
        data = static_cast<const uint8_t*>(p);
    }
    File file(data, size, size > 0, path);  // owns the mapping from here on, even if parsing throws
    // Metadata is copied out while parsing; the pages of the mapping it was read from are dropped
    // as the copy proceeds (they come back from the page cache if ever touched again), so a file
    // of large arrays is not held in memory twice.
    const long page = ::sysconf(_SC_PAGESIZE);
    file.adopt(detail::parse_gguf(data, size, file.name_, [&](uint64_t offset) {
        const uint64_t end = offset / static_cast<uint64_t>(page) * static_cast<uint64_t>(page);
        if (end > 0) ::madvise(const_cast<uint8_t*>(data), end, MADV_DONTNEED);
    }));
    file.fd_ = fd.fd;
    fd.fd = -1;
    if (g_after_parse) g_after_parse(path);
    return file;
}

File File::from_memory(const void* data, size_t size, std::string name) {
    if (data == nullptr && size != 0)
        throw Error(ErrorCode::InvalidArgument, name + ": null data pointer with size " + std::to_string(size));
    File file(static_cast<const uint8_t*>(data), size, false, std::move(name));
    file.adopt(detail::parse_gguf(file.data_, size, file.name_));
    return file;
}

void File::adopt(detail::ParsedFile&& parsed) {
    version_ = parsed.version;
    alignment_ = parsed.alignment;
    data_offset_ = parsed.data_offset;
    metadata_ = std::move(parsed.metadata);
    key_index_ = std::move(parsed.key_index);
    tensors_ = std::move(parsed.tensors);
    tensor_index_ = std::move(parsed.tensor_index);
}

File::File(File&& other) noexcept
    : name_(std::move(other.name_)),
      data_(other.data_),
      size_(other.size_),
      owns_mapping_(other.owns_mapping_),
      fd_(other.fd_),
      version_(other.version_),
      alignment_(other.alignment_),
      data_offset_(other.data_offset_),
      metadata_(std::move(other.metadata_)),
      key_index_(std::move(other.key_index_)),
      tensors_(std::move(other.tensors_)),
      tensor_index_(std::move(other.tensor_index_)) {
    other.owns_mapping_ = false;
    other.fd_ = -1;
    other.data_ = nullptr;
    other.size_ = 0;
}

File& File::operator=(File&& other) noexcept {
    if (this != &other) {
        release();
        name_ = std::move(other.name_);
        data_ = other.data_;
        size_ = other.size_;
        owns_mapping_ = other.owns_mapping_;
        fd_ = other.fd_;
        version_ = other.version_;
        alignment_ = other.alignment_;
        data_offset_ = other.data_offset_;
        metadata_ = std::move(other.metadata_);
        key_index_ = std::move(other.key_index_);
        tensors_ = std::move(other.tensors_);
        tensor_index_ = std::move(other.tensor_index_);
        other.owns_mapping_ = false;
        other.fd_ = -1;
        other.data_ = nullptr;
        other.size_ = 0;
    }
    return *this;
}

File::~File() {
    release();
}

void File::release() noexcept {
    if (owns_mapping_ && data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    owns_mapping_ = false;
    data_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void File::read_tensor(const TensorInfo& info, std::vector<uint8_t>& out) const {
    out.resize(info.size);
    const uint64_t start = data_offset_ + info.offset;
    if (fd_ < 0) {
        std::memcpy(out.data(), data_ + start, info.size);
        return;
    }
    for (uint64_t done = 0; done < info.size;) {
        const ssize_t n = ::pread(fd_, out.data() + done, info.size - done, static_cast<off_t>(start + done));
        if (n < 0 && errno == EINTR) continue;
        const std::string where = name_ + ": tensor '" + info.name + "'";
        if (n < 0) throw Error(ErrorCode::Io, where + ": cannot read: " + std::strerror(errno));
        if (n == 0) {
            struct stat st {};
            const std::string now = ::fstat(fd_, &st) == 0 ? std::to_string(st.st_size) : std::string("?");
            throw Error(ErrorCode::Io, where + ": the file ends at byte " + now + ", the tensor needs bytes " +
                                           std::to_string(start) + ".." + std::to_string(start + info.size) +
                                           " (the file was truncated or replaced after it was opened)");
        }
        done += static_cast<uint64_t>(n);
    }
}

const Value* File::find(std::string_view key) const {
    auto it = key_index_.find(key);
    return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace tessel::gguf
