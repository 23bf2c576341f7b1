#include "quant/quant.hpp"

#include <string>

#include "tessel/errors.hpp"

namespace tessel::quant {
namespace {

const Kernels& kernels() {
    static const Kernels k = [] {
        Kernels t;
        register_plain(t);
        register_legacy(t);
        register_kquants(t);
        register_nonlinear(t);
        return t;
    }();
    return k;
}

}  // namespace

bool has_dequantize(DType t) { return kernels().dequant[static_cast<uint32_t>(t)] != nullptr; }
bool has_quantize(DType t) { return kernels().quant[static_cast<uint32_t>(t)] != nullptr; }

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
    DequantFn fn = kernels().dequant[static_cast<uint32_t>(t)];
    if (!fn) throw Error(ErrorCode::Unsupported, std::string("no dequantize for type ") + dtype_name(t));
    dtype_row_bytes(t, n);  // validates n
    fn(src, dst, n);
}

uint64_t quantize_row(DType t, const float* src, void* dst, int64_t n) {
    QuantFn fn = kernels().quant[static_cast<uint32_t>(t)];
    if (!fn) throw Error(ErrorCode::Unsupported, std::string("no quantize for type ") + dtype_name(t));
    const uint64_t bytes = dtype_row_bytes(t, n);
    fn(src, dst, n);
    return bytes;
}

uint64_t quantize_rows(DType t, const float* src, void* dst, int64_t n_rows, int64_t n_per_row) {
    uint64_t written = 0;
    for (int64_t r = 0; r < n_rows; ++r)
        written += quantize_row(t, src + r * n_per_row, static_cast<uint8_t*>(dst) + written, n_per_row);
    return written;
}

}  // namespace tessel::quant
