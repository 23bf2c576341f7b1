#include "cpu/packed/format.hpp"

#include <cstring>

namespace tessel::cpu::packed {
namespace {

constexpr int64_t kRegBytes = 4 * kGroupRows;

/// Geometry of a block of `block` elements: `scales` fp16 values (d, then dmin / m) and `qs`
/// further bytes, which the format stores as registers (4 bytes of each of the 16 rows). Legacy
/// and IQ4_NL blocks (32 elements) hold the fp16 values first (Q5_0: its 4 high-bit bytes qh are
/// the first register, then the 16 nibble bytes); Q4_K holds d, dmin, then 12 scale bytes and 128
/// nibble bytes (35 registers), Q5_K 12 scale, 32 qh and 128 nibble bytes (43 registers); Q6_K
/// holds ql, qh, scales (52 registers) and its d last. Plain run-time values (one copy of the code
/// for every format).
struct QuantLayout {
    int64_t block, scales, qs;
    bool scales_last = false;

    int64_t block_bytes() const { return 2 * scales + qs; }
    size_t group_bytes(int64_t k) const { return static_cast<size_t>(kGroupRows * (k / block) * block_bytes()); }

    /// Byte of the packed group block (16 blocks) for original block byte `i` of row j.
    int64_t position(int64_t j, int64_t i) const {
        const int64_t q = scales_last ? i : i - 2 * scales;  // byte among the register bytes
        const int64_t s = scales_last ? i - qs : i;          // byte among the fp16 values
        const int64_t reg_base = scales_last ? 0 : 2 * scales * kGroupRows, scale_base = scales_last ? qs * kGroupRows : 0;
        if (s >= 0 && s < 2 * scales) return scale_base + (s / 2) * 2 * kGroupRows + 2 * j + s % 2;  // value s/2 of row j
        return reg_base + (q / 4) * kRegBytes + 4 * j + q % 4;
    }

    void permute(bool to_packed, const uint8_t* src, uint8_t* dst, int64_t n, int64_t k) const {
        const int64_t nb = k / block, bb = block_bytes(), row_bytes = nb * bb;
        const int64_t gb = static_cast<int64_t>(group_bytes(k));
        if (to_packed) std::memset(dst, 0, static_cast<size_t>((n + kGroupRows - 1) / kGroupRows * gb));
        for (int64_t r = 0; r < n; ++r) {
            const int64_t j = r % kGroupRows;
            uint8_t* packed_rows = (to_packed ? dst : const_cast<uint8_t*>(src)) + (r / kGroupRows) * gb;
            uint8_t* plain_row = (to_packed ? const_cast<uint8_t*>(src) : dst) + r * row_bytes;
            for (int64_t b = 0; b < nb; ++b)
                for (int64_t i = 0; i < bb; ++i) {
                    uint8_t& packed = packed_rows[b * kGroupRows * bb + position(j, i)];
                    uint8_t& plain = plain_row[b * bb + i];
                    if (to_packed) packed = plain;
                    else plain = packed;
                }
        }
    }
};

constexpr QuantLayout kQ4_0{32, 1, 16}, kIQ4_NL{32, 1, 16}, kQ4_1{32, 2, 16}, kQ5_0{32, 1, 20}, kQ8_0{32, 1, 32};
constexpr QuantLayout kQ4_K{256, 2, 140}, kQ5_K{256, 2, 172}, kQ6_K{256, 1, 208, true};

size_t q4_0_group_bytes(int64_t k) { return kQ4_0.group_bytes(k); }
size_t q4_1_group_bytes(int64_t k) { return kQ4_1.group_bytes(k); }
size_t q5_0_group_bytes(int64_t k) { return kQ5_0.group_bytes(k); }
size_t q8_0_group_bytes(int64_t k) { return kQ8_0.group_bytes(k); }
void q4_0_pack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ4_0.permute(true, s, d, n, k); }
void q4_1_pack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ4_1.permute(true, s, d, n, k); }
void q5_0_pack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ5_0.permute(true, s, d, n, k); }
void q8_0_pack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ8_0.permute(true, s, d, n, k); }
void q4_0_unpack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ4_0.permute(false, s, d, n, k); }
void q4_1_unpack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ4_1.permute(false, s, d, n, k); }
void q5_0_unpack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ5_0.permute(false, s, d, n, k); }
void q8_0_unpack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ8_0.permute(false, s, d, n, k); }

size_t q4_K_group_bytes(int64_t k) { return kQ4_K.group_bytes(k); }
void q4_K_pack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ4_K.permute(true, s, d, n, k); }
void q4_K_unpack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ4_K.permute(false, s, d, n, k); }
size_t q5_K_group_bytes(int64_t k) { return kQ5_K.group_bytes(k); }
void q5_K_pack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ5_K.permute(true, s, d, n, k); }
void q5_K_unpack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ5_K.permute(false, s, d, n, k); }
size_t iq4_nl_group_bytes(int64_t k) { return kIQ4_NL.group_bytes(k); }
void iq4_nl_pack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kIQ4_NL.permute(true, s, d, n, k); }
void iq4_nl_unpack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kIQ4_NL.permute(false, s, d, n, k); }
size_t q6_K_group_bytes(int64_t k) { return kQ6_K.group_bytes(k); }
void q6_K_pack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ6_K.permute(true, s, d, n, k); }
void q6_K_unpack(const uint8_t* s, uint8_t* d, int64_t n, int64_t k) { kQ6_K.permute(false, s, d, n, k); }

// f16x16: element k of row j at group + (k * 16 + j) * 2.
size_t f16_group_bytes(int64_t k) { return static_cast<size_t>(kGroupRows * k * 2); }

template <bool kPack>
void f16_permute(const uint8_t* src, uint8_t* dst, int64_t n, int64_t k) {
    const int64_t groups = (n + kGroupRows - 1) / kGroupRows;
    if constexpr (kPack) std::memset(dst, 0, static_cast<size_t>(groups) * f16_group_bytes(k));
    for (int64_t r = 0; r < n; ++r) {
        const int64_t gbase = (r / kGroupRows) * static_cast<int64_t>(f16_group_bytes(k)), j = r % kGroupRows;
        for (int64_t e = 0; e < k; ++e) {
            uint8_t* p = kPack ? dst + gbase + (e * kGroupRows + j) * 2 : dst + (r * k + e) * 2;
            const uint8_t* s = kPack ? src + (r * k + e) * 2 : src + gbase + (e * kGroupRows + j) * 2;
            std::memcpy(p, s, 2);
        }
    }
}
void f16_pack(const uint8_t* src, uint8_t* dst, int64_t n, int64_t k) { f16_permute<true>(src, dst, n, k); }
void f16_unpack(const uint8_t* src, uint8_t* dst, int64_t n, int64_t k) { f16_permute<false>(src, dst, n, k); }

constexpr Format kFormats[] = {
    {FormatId::Q4_0x16, "q4_0x16", DType::Q4_0, q4_0_group_bytes, q4_0_pack, q4_0_unpack},
    {FormatId::Q4_1x16, "q4_1x16", DType::Q4_1, q4_1_group_bytes, q4_1_pack, q4_1_unpack},
    {FormatId::Q8_0x16, "q8_0x16", DType::Q8_0, q8_0_group_bytes, q8_0_pack, q8_0_unpack},
    {FormatId::F16x16, "f16x16", DType::F16, f16_group_bytes, f16_pack, f16_unpack},
    {FormatId::Q5_0x16, "q5_0x16", DType::Q5_0, q5_0_group_bytes, q5_0_pack, q5_0_unpack},
    {FormatId::Q4_Kx16, "q4_Kx16", DType::Q4_K, q4_K_group_bytes, q4_K_pack, q4_K_unpack},
    {FormatId::Q6_Kx16, "q6_Kx16", DType::Q6_K, q6_K_group_bytes, q6_K_pack, q6_K_unpack},
    {FormatId::Q5_Kx16, "q5_Kx16", DType::Q5_K, q5_K_group_bytes, q5_K_pack, q5_K_unpack},
    {FormatId::IQ4_NLx16, "iq4_nlx16", DType::IQ4_NL, iq4_nl_group_bytes, iq4_nl_pack, iq4_nl_unpack},
};

}  // namespace

std::span<const Format> formats() { return kFormats; }

const Format* format_for(DType t) {
    for (const Format& f : kFormats)
        if (f.weight == t) return &f;
    return nullptr;
}

const Format* format_by_id(uint32_t id) {
    for (const Format& f : kFormats)
        if (static_cast<uint32_t>(f.id) == id) return &f;
    return nullptr;
}

size_t packed_bytes(const Format& f, int64_t n, int64_t k) {
    return static_cast<size_t>((n + kGroupRows - 1) / kGroupRows) * f.group_bytes(k);
}

size_t group_offset(const Format& f, int64_t n0, int64_t k) { return static_cast<size_t>(n0 / kGroupRows) * f.group_bytes(k); }

bool packable(const Format& f, int64_t k) {
    const int64_t block = static_cast<int64_t>(dtype_info(f.weight).block_size);
    return k > 0 && k % block == 0;
}

}  // namespace tessel::cpu::packed
