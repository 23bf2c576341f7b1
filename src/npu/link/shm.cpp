#include "npu/link/shm.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "npu/proto/proto.h"
#include "tessel/errors.hpp"

namespace tessel::npu {

size_t ShmBuffer::rounded(size_t size) {
    const size_t page = TSL_NPU_PAGE_BYTES;
    return (size + page - 1) / page * page;
}

ShmBuffer::ShmBuffer(const std::string& name, size_t size) {
    size_ = rounded(size == 0 ? 1 : size);
    const size_t mapped = size_ + TSL_NPU_PAGE_BYTES;  // the guard page after the data
    auto fail = [&](const char* what) {
        const std::string msg = "shared buffer '" + name + "' (" + std::to_string(size_) + " bytes): " + what + ": " + std::strerror(errno);
        if (data_) munmap(data_, mapped);
        if (fd_ >= 0) close(fd_);
        throw Error(ErrorCode::Io, msg);
    };
    fd_ = memfd_create(name.c_str(), MFD_CLOEXEC);
    if (fd_ < 0) fail("memfd_create");
    if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) fail("ftruncate");
    void* p = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("reserving the mapping");
    data_ = static_cast<uint8_t*>(p);
    if (mmap(data_, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0) == MAP_FAILED) fail("mmap");
}

ShmBuffer::~ShmBuffer() {
    if (data_) munmap(data_, size_ + TSL_NPU_PAGE_BYTES);
    if (fd_ >= 0) close(fd_);
}

}  // namespace tessel::npu
