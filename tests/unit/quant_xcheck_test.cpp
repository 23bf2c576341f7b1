// Cross-check of tessel's reference quantizers against independent implementations.
//
// The data in tests/data/quant/ is produced by scripts/xcheck_quant.py from gguf-py and from the
// ggml library built by llama-cpp-python (versions and the exact source of every file are in
// each file's header text and in tests/data/quant/MANIFEST.txt). Three checks, one test per type:
//
//   QuantXcheck/QuantXcheckDequant.MatchesReference/<T>  dequantize_row on random valid blocks
//       equals gguf-py's output (ggml's for Q8_K; the format definition for Q8_1, which neither
//       gguf-py nor ggml can decode) bit for bit. Only on targets where the compiler may fuse
//       d*q + m into an FMA (__FP_FAST_FMAF) do the affine types Q4_1, Q5_1, Q2_K, Q4_K, Q5_K
//       get a tolerance: 1 ulp at twice the block's largest magnitude. Elsewhere (x86-64
//       baseline, where these tests normally run) every type must be bit-exact.
//   QuantXcheck/QuantXcheckQuantExact.MatchesLlamaCpp/<T>  quantize_row output bytes equal
//       llama.cpp's (ggml_quantize_chunk; Q8_1 through its from_float_ref) for Q4_0, Q4_1,
//       Q5_0, Q5_1, Q8_0, Q8_1, MXFP4 on N(0,1) and adversarial rows.
//   QuantXcheck/QuantXcheckQuantRmse.WithinLlamaCpp/<T>  for Q2_K..Q6_K, Q8_K, IQ4_NL, IQ4_XS the
//       RMSE of dequantize(quantize(x)) over 16 N(0,1) rows of 4096 is <= 1.02x llama.cpp's.
//
// File format (little-endian; also documented in scripts/xcheck_quant.py):
//   char[4] "TQXC", u32 version = 1, u32 kind, u32 ggml type id, u32 nrows, u32 n_per_row,
//   u32 text_len + text (provenance), then by kind:
//     0 rows:    f32[nrows * n_per_row]
//     1 dequant: u8[nrows * row_bytes] raw blocks, f32[nrows * n_per_row] expected
//     2 qexact:  u32 len + name of the rows file, u8[nrows * row_bytes] expected bytes
//     3 qrmse:   u32 len + name of the rows file, f64 reference RMSE, f64[nrows] per-row RMSE
// A missing or malformed data file is a test failure, never a skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "quant/quant.hpp"
#include "support/test_paths.hpp"
#include "tessel/errors.hpp"

namespace {

using tessel::DType;

constexpr uint32_t kKindRows = 0, kKindDequant = 1, kKindQExact = 2, kKindQRmse = 3;
constexpr double kRmseSlack = 1.02;

#if defined(__FP_FAST_FMAF)
constexpr bool kMayContractFma = true;
#else
constexpr bool kMayContractFma = false;
#endif

struct XcFile {
    std::string path;
    uint32_t kind = 0, type_id = 0, nrows = 0, n_per_row = 0;
    std::string text;
    std::vector<uint8_t> payload;
};

/// Sequential little-endian reader over a payload; throws on overrun.
class Cursor {
public:
    Cursor(const std::vector<uint8_t>& b, std::string what) : b_(b), what_(std::move(what)) {}
    const uint8_t* take(size_t n) {
        if (n > b_.size() - pos_) {
            throw std::runtime_error(what_ + ": truncated (need " + std::to_string(n) + " bytes at offset " +
                                     std::to_string(pos_) + ", have " + std::to_string(b_.size() - pos_) + ")");
        }
        const uint8_t* p = b_.data() + pos_;
        pos_ += n;
        return p;
    }
    uint32_t u32() { uint32_t v; std::memcpy(&v, take(4), 4); return v; }
    double f64() { double v; std::memcpy(&v, take(8), 8); return v; }
    std::string str() { const uint32_t n = u32(); const uint8_t* p = take(n); return {p, p + n}; }
    size_t remaining() const { return b_.size() - pos_; }

private:
    const std::vector<uint8_t>& b_;
    std::string what_;
    size_t pos_ = 0;
};

XcFile read_xc(const std::string& name) {
    XcFile f;
    f.path = (tessel::test::data_dir() / "quant" / name).string();
    std::ifstream in(f.path, std::ios::binary);
    if (!in) {
        throw std::runtime_error("missing data file " + f.path +
                                 " (regenerate with scripts/xcheck_quant.py, see scripts/README.md)");
    }
    std::vector<uint8_t> all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Cursor c(all, f.path);
    if (std::memcmp(c.take(4), "TQXC", 4) != 0) throw std::runtime_error(f.path + ": bad magic");
    if (const uint32_t v = c.u32(); v != 1) throw std::runtime_error(f.path + ": unknown version " + std::to_string(v));
    f.kind = c.u32();
    f.type_id = c.u32();
    f.nrows = c.u32();
    f.n_per_row = c.u32();
    f.text = c.str();
    const size_t rest = c.remaining();
    const uint8_t* p = c.take(rest);
    f.payload.assign(p, p + rest);
    return f;
}

XcFile read_expect(const std::string& name, uint32_t kind, DType t) {
    XcFile f = read_xc(name);
    if (f.kind != kind) throw std::runtime_error(f.path + ": kind " + std::to_string(f.kind) + ", expected " + std::to_string(kind));
    if (f.type_id != static_cast<uint32_t>(t)) {
        throw std::runtime_error(f.path + ": type id " + std::to_string(f.type_id) + ", expected " +
                                 std::to_string(static_cast<uint32_t>(t)));
    }
    if (f.nrows == 0 || f.n_per_row == 0) throw std::runtime_error(f.path + ": empty");
    return f;
}

/// The f32 rows of a kind-0 file, checked against the shape the referring file expects.
std::vector<float> read_rows(const std::string& name, uint32_t nrows, uint32_t n_per_row) {
    XcFile f = read_expect(name, kKindRows, DType::F32);
    if (f.nrows != nrows || f.n_per_row != n_per_row) {
        throw std::runtime_error(f.path + ": shape " + std::to_string(f.nrows) + "x" + std::to_string(f.n_per_row) +
                                 ", expected " + std::to_string(nrows) + "x" + std::to_string(n_per_row));
    }
    const size_t n = size_t{nrows} * n_per_row;
    if (f.payload.size() != n * 4) throw std::runtime_error(f.path + ": payload size mismatch");
    std::vector<float> v(n);
    std::memcpy(v.data(), f.payload.data(), n * 4);
    return v;
}

std::string hex(const uint8_t* p, size_t n) {
    std::string s;
    char buf[4];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(buf, sizeof buf, "%02x", p[i]);
        s += buf;
        if (i + 1 < n && (i + 1) % 32 == 0) s += "\n    ";
    }
    return s;
}

uint32_t bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

std::string fmt_float(float f) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(f), bits(f));
    return buf;
}

/// Distance between adjacent floats at magnitude |x|.
float ulp_at(float x) {
    const float a = std::fabs(x);
    return std::nextafter(a, INFINITY) - a;
}

/// Types whose dequantization is d*q + m (or d*q - m): an FMA-contracting compiler may differ.
bool is_affine(DType t) {
    return t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q2_K || t == DType::Q4_K || t == DType::Q5_K;
}

std::string type_name(const testing::TestParamInfo<DType>& info) { return tessel::dtype_name(info.param); }

// ---------------------------------------------------------------------------------------------

class QuantXcheckDequant : public testing::TestWithParam<DType> {};

TEST_P(QuantXcheckDequant, MatchesReference) {
    const DType t = GetParam();
    const std::string tname = tessel::dtype_name(t);
    XcFile f;
    try {
        f = read_expect("dequant_" + tname + ".bin", kKindDequant, t);
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    const auto& info = tessel::dtype_info(t);
    const size_t rb = tessel::dtype_row_bytes(t, f.n_per_row);
    const size_t n = size_t{f.nrows} * f.n_per_row;
    ASSERT_EQ(f.payload.size(), f.nrows * rb + n * 4) << f.path << ": payload size";
    const uint8_t* raw = f.payload.data();
    std::vector<float> expected(n), got(n);
    std::memcpy(expected.data(), raw + f.nrows * rb, n * 4);

    for (uint32_t r = 0; r < f.nrows; ++r) {
        try {
            tessel::quant::dequantize_row(t, raw + r * rb, got.data() + size_t{r} * f.n_per_row, f.n_per_row);
        } catch (const std::exception& e) {
            FAIL() << "tessel dequantize_row(" << tname << ") threw: " << e.what();
        }
    }

    const bool tolerant = kMayContractFma && is_affine(t);
    const size_t bs = info.block_size;
    size_t bad = 0;
    std::ostringstream report;
    for (size_t b = 0; b < n / bs; ++b) {
        float maxabs = 0.0f;
        for (size_t i = b * bs; i < (b + 1) * bs; ++i) maxabs = std::max(maxabs, std::fabs(expected[i]));
        const float tol = tolerant ? ulp_at(2.0f * maxabs) : 0.0f;
        for (size_t i = b * bs; i < (b + 1) * bs; ++i) {
            const bool ok = tolerant ? std::fabs(got[i] - expected[i]) <= tol : bits(got[i]) == bits(expected[i]);
            if (ok) continue;
            if (++bad <= 8) {
                const size_t row = i / f.n_per_row, blk = (i % f.n_per_row) / bs;
                report << "  element " << i << " (row " << row << ", block " << blk << ", index " << i % bs
                       << "): expected " << fmt_float(expected[i]) << ", tessel " << fmt_float(got[i]) << "\n"
                       << "    block bytes: "
                       << hex(raw + row * rb + blk * info.block_bytes, info.block_bytes) << "\n";
            }
        }
    }
    EXPECT_EQ(bad, 0u) << tname << ": " << bad << " of " << n << " values differ ("
                       << (tolerant ? "tolerance 1 ulp at 2x block max, FMA target" : "bit-exact") << ")\n"
                       << report.str() << "reference:\n" << f.text;
}

INSTANTIATE_TEST_SUITE_P(QuantXcheck, QuantXcheckDequant,
                         testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                                         DType::Q8_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                         DType::Q6_K, DType::Q8_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4,
                                         DType::F16, DType::BF16),
                         type_name);

// ---------------------------------------------------------------------------------------------

class QuantXcheckQuantExact : public testing::TestWithParam<DType> {};

TEST_P(QuantXcheckQuantExact, MatchesLlamaCpp) {
    const DType t = GetParam();
    const std::string tname = tessel::dtype_name(t);
    XcFile f;
    std::vector<float> x;
    std::string rows_name;
    try {
        f = read_expect("qexact_" + tname + ".bin", kKindQExact, t);
        Cursor c(f.payload, f.path);
        rows_name = c.str();
        x = read_rows(rows_name, f.nrows, f.n_per_row);
        f.payload.erase(f.payload.begin(), f.payload.begin() + 4 + static_cast<long>(rows_name.size()));
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    const auto& info = tessel::dtype_info(t);
    const size_t rb = tessel::dtype_row_bytes(t, f.n_per_row);
    ASSERT_EQ(f.payload.size(), f.nrows * rb) << f.path << ": payload size";
    const uint8_t* expected = f.payload.data();
    std::vector<uint8_t> got(f.nrows * rb, 0xAA);

    for (uint32_t r = 0; r < f.nrows; ++r) {
        try {
            const uint64_t w = tessel::quant::quantize_row(t, x.data() + size_t{r} * f.n_per_row, got.data() + r * rb,
                                                           f.n_per_row);
            ASSERT_EQ(w, rb) << "quantize_row returned a wrong byte count";
        } catch (const std::exception& e) {
            FAIL() << "tessel quantize_row(" << tname << ") threw: " << e.what();
        }
    }

    const size_t bpr = f.n_per_row / info.block_size;
    size_t bad = 0;
    std::ostringstream first;
    std::string bad_rows;
    for (uint32_t r = 0; r < f.nrows; ++r) {
        bool row_bad = false;
        for (size_t b = 0; b < bpr; ++b) {
            const size_t off = r * rb + b * info.block_bytes;
            if (std::memcmp(expected + off, got.data() + off, info.block_bytes) == 0) continue;
            row_bad = true;
            if (bad++ == 0) {
                first << "first differing block: row " << r << ", block " << b << "\n  input:";
                for (size_t i = 0; i < info.block_size; ++i) {
                    if (i % 8 == 0) first << "\n   ";
                    char buf[32];
                    std::snprintf(buf, sizeof buf, " %.9g", static_cast<double>(x[r * f.n_per_row + b * info.block_size + i]));
                    first << buf;
                }
                first << "\n  llama.cpp: " << hex(expected + off, info.block_bytes)
                      << "\n  tessel:    " << hex(got.data() + off, info.block_bytes) << "\n";
            }
        }
        if (row_bad) {
            bad_rows += ' ';
            bad_rows += std::to_string(r);
        }
    }
    EXPECT_EQ(bad, 0u) << tname << ": " << bad << " of " << f.nrows * bpr << " blocks differ (rows:" << bad_rows
                       << "; row names in " << rows_name << "'s header)\n" << first.str() << "reference:\n" << f.text;
}

INSTANTIATE_TEST_SUITE_P(QuantXcheck, QuantXcheckQuantExact,
                         testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                                         DType::Q8_1, DType::MXFP4),
                         type_name);

// ---------------------------------------------------------------------------------------------

class QuantXcheckQuantRmse : public testing::TestWithParam<DType> {};

TEST_P(QuantXcheckQuantRmse, WithinLlamaCpp) {
    const DType t = GetParam();
    const std::string tname = tessel::dtype_name(t);
    XcFile f;
    std::vector<float> x;
    double ref_rmse = 0.0;
    std::vector<double> ref_row;
    try {
        f = read_expect("qrmse_" + tname + ".bin", kKindQRmse, t);
        Cursor c(f.payload, f.path);
        const std::string rows_name = c.str();
        x = read_rows(rows_name, f.nrows, f.n_per_row);
        ref_rmse = c.f64();
        for (uint32_t r = 0; r < f.nrows; ++r) ref_row.push_back(c.f64());
        if (c.remaining() != 0) throw std::runtime_error(f.path + ": trailing bytes");
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    ASSERT_TRUE(std::isfinite(ref_rmse) && ref_rmse > 0.0) << f.path << ": reference RMSE " << ref_rmse;

    const size_t rb = tessel::dtype_row_bytes(t, f.n_per_row);
    std::vector<uint8_t> q(rb);
    std::vector<float> y(f.n_per_row);
    double sum = 0.0;
    double worst_ratio = 0.0;
    uint32_t worst_row = 0;
    for (uint32_t r = 0; r < f.nrows; ++r) {
        const float* xr = x.data() + size_t{r} * f.n_per_row;
        try {
            tessel::quant::quantize_row(t, xr, q.data(), f.n_per_row);
            tessel::quant::dequantize_row(t, q.data(), y.data(), f.n_per_row);
        } catch (const std::exception& e) {
            FAIL() << "tessel " << tname << " quantize/dequantize threw: " << e.what();
        }
        double row_sum = 0.0;
        for (uint32_t i = 0; i < f.n_per_row; ++i) {
            const double d = static_cast<double>(xr[i]) - static_cast<double>(y[i]);
            row_sum += d * d;
        }
        sum += row_sum;
        const double ratio = std::sqrt(row_sum / f.n_per_row) / ref_row[r];
        if (ratio > worst_ratio) { worst_ratio = ratio; worst_row = r; }
    }
    const double rmse = std::sqrt(sum / (static_cast<double>(f.nrows) * f.n_per_row));
    ASSERT_TRUE(std::isfinite(rmse)) << tname << ": tessel RMSE is not finite";
    EXPECT_LE(rmse, kRmseSlack * ref_rmse)
        << tname << ": tessel RMSE " << rmse << " vs llama.cpp " << ref_rmse << " (ratio " << rmse / ref_rmse
        << ", limit " << kRmseSlack << "); worst row " << worst_row << " ratio " << worst_ratio << "\nreference:\n"
        << f.text;
    std::printf("[ xcheck  ] %s RMSE tessel %.6g, llama.cpp %.6g, ratio %.4f (worst row %u: %.4f)\n", tname.c_str(),
                rmse, ref_rmse, rmse / ref_rmse, worst_row, worst_ratio);
}

INSTANTIATE_TEST_SUITE_P(QuantXcheck, QuantXcheckQuantRmse,
                         testing::Values(DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                                         DType::Q8_K, DType::IQ4_NL, DType::IQ4_XS),
                         type_name);

}  // namespace
