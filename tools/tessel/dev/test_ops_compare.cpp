// test-ops comparison: a subject's output against the reference's (docs/test-ops.md, "Comparison"),
// and for an op that quantizes (CPY / SET_ROWS into a lower-precision type) against the values it
// was asked to store.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "quant/quant.hpp"
#include "tessel/errors.hpp"
#include "test_ops.hpp"

namespace tessel::cli::test_ops {
namespace {

/// Element (i0, i1, i2, i3) of a float-typed tensor (F32, F16, BF16) through its strides.
float element(const Tensor& t, const uint8_t* base, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const uint8_t* p = base + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
    float f = 0.0f;
    quant::dequantize_row(t.type, p, &f, 1);
    return f;
}

/// A tensor's bytes from its buffer: the whole storage of its view source (or itself), and the
/// byte offset of t inside them.
std::vector<uint8_t> storage(const Tensor& t, size_t& offset) {
    const Tensor& root = t.view_src ? *t.view_src : t;
    std::vector<uint8_t> bytes(root.n_bytes());
    root.buffer->get_tensor(root, bytes.data(), 0, bytes.size());
    offset = t.view_src ? t.view_offset : 0;
    return bytes;
}

bool float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

double nmse_of(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = static_cast<double>(b[i]) - a[i];
        num += d * d;
        den += static_cast<double>(a[i]) * a[i];
    }
    return den > 0.0 ? num / den : num;
}

}  // namespace

std::vector<float> stored_values(const Tensor& out, const std::vector<uint8_t>& dst_initial) {
    if (out.op == Op::CPY || out.op == Op::CONT || out.op == Op::DUP) {
        const Tensor& src = *out.src[0];
        if (!float_type(src.type))
            throw Error(ErrorCode::Unsupported, "stored_values: a copy from " + std::string(dtype_name(src.type)));
        size_t off = 0;
        const std::vector<uint8_t> bytes = storage(src, off);
        std::vector<float> v;
        v.reserve(static_cast<size_t>(src.n_elements()));
        for (int64_t i3 = 0; i3 < src.ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < src.ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < src.ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < src.ne[0]; ++i0) v.push_back(element(src, bytes.data() + off, i0, i1, i2, i3));
        return v;
    }
    if (out.op == Op::SET_ROWS) {
        // dst's initial rows, then src1's rows where the ids put them (ids broadcast over dims 2, 3)
        const Tensor& dst = *out.view_src;
        const Tensor& rows = *out.src[1];
        const Tensor& ids = *out.src[2];
        std::vector<float> v(static_cast<size_t>(dst.n_elements()));
        const uint64_t rb = dst.row_bytes();
        for (int64_t r = 0; r < dst.n_rows(); ++r)
            quant::dequantize_row(dst.type, dst_initial.data() + static_cast<uint64_t>(r) * rb, v.data() + r * dst.ne[0], dst.ne[0]);
        size_t roff = 0, ioff = 0;
        const std::vector<uint8_t> rbytes = storage(rows, roff), ibytes = storage(ids, ioff);
        for (int64_t i3 = 0; i3 < rows.ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < rows.ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < rows.ne[1]; ++i1) {
                    const uint8_t* ip = ibytes.data() + ioff + i1 * ids.nb[0] + (i2 % ids.ne[1]) * ids.nb[1] + (i3 % ids.ne[2]) * ids.nb[2];
                    int64_t row = 0;
                    if (ids.type == DType::I64) {
                        std::memcpy(&row, ip, 8);
                    } else {
                        int32_t r32;
                        std::memcpy(&r32, ip, 4);
                        row = r32;
                    }
                    float* d = v.data() + ((i3 * dst.ne[2] + i2) * dst.ne[1] + row) * dst.ne[0];
                    for (int64_t i0 = 0; i0 < rows.ne[0]; ++i0) d[i0] = element(rows, rbytes.data() + roff, i0, i1, i2, i3);
                }
        return v;
    }
    throw Error(ErrorCode::Unsupported, std::string("stored_values: ") + op_name(out.op) + " stores no values");
}

Verdict compare_quantized(DType t, const std::vector<float>& input, const std::vector<float>& ref, const std::vector<float>& got) {
    Verdict v;
    if (input.size() != ref.size() || got.size() != ref.size()) {
        v.why = "output size differs from the stored values'";
        return v;
    }
    for (size_t i = 0; i < got.size(); ++i)
        if (!std::isfinite(got[i])) {
            v.why = "non-finite value in the output at element " + std::to_string(i);
            return v;
        }
    v.nmse = nmse_of(input, got);
    v.bound = 2.0 * nmse_of(input, ref);
    if (!(v.nmse <= v.bound)) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "NMSE to the stored values above twice the reference's (%.2e)", v.bound / 2.0);
        v.why = buf;
        return v;
    }
    // per block: no element further from its value than twice the reference's worst in that block
    const size_t bs = static_cast<size_t>(dtype_info(t).block_size);
    for (size_t b = 0; b < input.size(); b += bs) {
        const size_t e = std::min(input.size(), b + bs);
        double ref_err = 0.0, got_err = 0.0, amax = 0.0;
        size_t worst = b;
        for (size_t i = b; i < e; ++i) {
            ref_err = std::max(ref_err, std::fabs(static_cast<double>(ref[i]) - input[i]));
            const double g = std::fabs(static_cast<double>(got[i]) - input[i]);
            if (g > got_err) got_err = g, worst = i;
            amax = std::max(amax, std::fabs(static_cast<double>(input[i])));
        }
        if (got_err > 2.0 * ref_err + 1e-6 * amax) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "element %zu is %.3g from its value, over twice the reference's worst in its block (%.3g)",
                          worst, got_err, ref_err);
            v.why = buf;
            return v;
        }
    }
    v.ok = true;
    return v;
}

Verdict compare(const Case& c, const Output& ref, const Output& got, const std::vector<float>* stored) {
    Verdict v;
    if (ref.values.size() != got.values.size() || ref.type != got.type) {
        v.why = "output shape or type differs from the reference";
        return v;
    }
    if (c.compare == Compare::Quantized) {
        if (!stored) throw Error(ErrorCode::InvalidArgument, "compare: a quantizing case needs its stored values");
        return compare_quantized(got.type, *stored, ref.values, got.values);
    }
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < ref.values.size(); ++i) {
        const double a = ref.values[i], b = got.values[i];
        if (std::isnan(b)) {
            v.why = "NaN in the output at element " + std::to_string(i);
            return v;
        }
        if (std::isnan(a)) {
            v.why = "NaN in the reference at element " + std::to_string(i);
            return v;
        }
        if (std::isinf(a) || std::isinf(b)) {
            if (a != b) {
                v.why = "infinity mismatch at element " + std::to_string(i) + " (ref " + std::to_string(a) + ", got " +
                        std::to_string(b) + ")";
                return v;
            }
            continue;
        }
        num += (a - b) * (a - b);
        den += a * a;
    }
    v.nmse = den > 0.0 ? num / den : num;
    if (c.compare == Compare::Exact) {
        v.ok = ref.bytes == got.bytes;
        if (!v.ok) {
            size_t diff = 0;
            for (size_t i = 0; i < ref.values.size(); ++i) diff += ref.values[i] != got.values[i];
            v.why = "not bit-exact (" + std::to_string(diff) + " of " + std::to_string(ref.values.size()) + " elements differ)";
        }
        return v;
    }
    v.bound = c.max_nmse;
    v.ok = v.nmse <= v.bound;
    if (!v.ok) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "NMSE above the bound %.1e", v.bound);
        v.why = buf;
    }
    return v;
}

}  // namespace tessel::cli::test_ops
