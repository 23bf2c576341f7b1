// Reads a fuzzer's input as a stream of choices: small integers, picks from a list and byte
// strings, taken from the front. An exhausted input reads as zeros (empty strings), so every
// input, however short, is a complete program of choices and libFuzzer's mutations of a byte
// change one choice without shifting the meaning of the ones before it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessel::fuzz {

class Input {
public:
    Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

    bool empty() const { return pos_ >= size_; }
    size_t remaining() const { return empty() ? 0 : size_ - pos_; }

    uint8_t u8() { return empty() ? 0 : data_[pos_++]; }
    // Little-endian; each byte read in its own statement (operands of | are unsequenced).
    uint16_t u16() {
        const uint16_t lo = u8();
        return static_cast<uint16_t>(lo | (u8() << 8));
    }
    uint32_t u32() {
        const uint32_t lo = u16();
        return lo | (static_cast<uint32_t>(u16()) << 16);
    }
    uint64_t u64() {
        const uint64_t lo = u32();
        return lo | (static_cast<uint64_t>(u32()) << 32);
    }
    bool flag() { return (u8() & 1) != 0; }

    /// A number in [0, n) (n >= 1), from one byte when n <= 256.
    size_t below(size_t n) { return n <= 256 ? u8() % n : u16() % n; }

    /// One of the items of a C array.
    template <typename T, size_t N>
    const T& pick(const T (&items)[N]) {
        return items[below(N)];
    }

    /// A length-prefixed byte string of at most `max_len` bytes (one length byte).
    std::string bytes(size_t max_len) {
        const size_t len = u8() % (max_len + 1);  // read before remaining(): argument order is unspecified
        const size_t n = std::min(len, remaining());
        std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
        pos_ += n;
        return s;
    }

    /// Everything not read yet.
    std::string_view rest() {
        const std::string_view s = empty() ? std::string_view() : std::string_view(reinterpret_cast<const char*>(data_ + pos_), size_ - pos_);
        pos_ = size_;
        return s;
    }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

}  // namespace tessel::fuzz
