// Shared memory for the NPU link (DESIGN.md, "The npu offload path"): a memfd mapping identified
// by its fd, the analogue of an rpcmem allocation the DSP maps by fd. The size is rounded up to
// whole 4 KiB pages and one PROT_NONE guard page follows the data, so an overrun on the host faults
// instead of corrupting the next buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessel::npu {

class ShmBuffer {
public:
    /// Creates and maps a memfd of `size` bytes rounded up to pages (zero-filled). `name` shows in
    /// /proc/<pid>/maps. Throws tessel::Error(Io) naming the buffer and errno when the kernel refuses.
    ShmBuffer(const std::string& name, size_t size);
    ~ShmBuffer();
    ShmBuffer(const ShmBuffer&) = delete;
    ShmBuffer& operator=(const ShmBuffer&) = delete;

    int fd() const { return fd_; }
    /// Usable bytes (page-rounded, without the guard page).
    size_t size() const { return size_; }
    uint8_t* data() const { return data_; }

    /// Bytes `size` occupies once page-rounded (without the guard page).
    static size_t rounded(size_t size);

private:
    int fd_ = -1;
    size_t size_ = 0;
    uint8_t* data_ = nullptr;
};

}  // namespace tessel::npu
