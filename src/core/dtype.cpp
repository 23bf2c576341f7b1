#include "core/dtype.hpp"

#include <array>
#include <cctype>

#include "tessel/errors.hpp"

namespace tessel {
namespace {

// name, block size, bytes per block, supported for compute.
// Byte counts: ggml block structs (the block_* layouts in src/quant/blocks.hpp).
struct Row {
    DType type;
    const char* name;
    uint32_t block_size;
    uint32_t block_bytes;
    bool supported;
};

constexpr Row kRows[] = {
    {DType::F32, "F32", 1, 4, true},
    {DType::F16, "F16", 1, 2, true},
    {DType::Q4_0, "Q4_0", 32, 18, true},
    {DType::Q4_1, "Q4_1", 32, 20, true},
    {DType::Q5_0, "Q5_0", 32, 22, true},
    {DType::Q5_1, "Q5_1", 32, 24, true},
    {DType::Q8_0, "Q8_0", 32, 34, true},
    {DType::Q8_1, "Q8_1", 32, 36, true},
    {DType::Q2_K, "Q2_K", 256, 84, true},
    {DType::Q3_K, "Q3_K", 256, 110, true},
    {DType::Q4_K, "Q4_K", 256, 144, true},
    {DType::Q5_K, "Q5_K", 256, 176, true},
    {DType::Q6_K, "Q6_K", 256, 210, true},
    {DType::Q8_K, "Q8_K", 256, 292, true},
    {DType::IQ2_XXS, "IQ2_XXS", 256, 66, false},
    {DType::IQ2_XS, "IQ2_XS", 256, 74, false},
    {DType::IQ3_XXS, "IQ3_XXS", 256, 98, false},
    {DType::IQ1_S, "IQ1_S", 256, 50, false},
    {DType::IQ4_NL, "IQ4_NL", 32, 18, true},
    {DType::IQ3_S, "IQ3_S", 256, 110, false},
    {DType::IQ2_S, "IQ2_S", 256, 82, false},
    {DType::IQ4_XS, "IQ4_XS", 256, 136, true},
    {DType::I8, "I8", 1, 1, true},
    {DType::I16, "I16", 1, 2, true},
    {DType::I32, "I32", 1, 4, true},
    {DType::I64, "I64", 1, 8, true},
    {DType::F64, "F64", 1, 8, true},
    {DType::IQ1_M, "IQ1_M", 256, 56, false},
    {DType::BF16, "BF16", 1, 2, true},
    {DType::TQ1_0, "TQ1_0", 256, 54, false},
    {DType::TQ2_0, "TQ2_0", 256, 66, false},
    {DType::MXFP4, "MXFP4", 32, 17, true},
    {DType::NVFP4, "NVFP4", 64, 36, false},
    {DType::Q1_0, "Q1_0", 128, 18, false},
};

struct Table {
    std::array<DTypeInfo, kDTypeIdEnd> info{};
    std::array<bool, kDTypeIdEnd> present{};
    constexpr Table() {
        for (const Row& r : kRows) {
            auto id = static_cast<uint32_t>(r.type);
            info[id] = DTypeInfo{r.type, r.name, r.block_size, r.block_bytes, r.block_size > 1, r.supported};
            present[id] = true;
        }
    }
};

constexpr Table kTable{};

}  // namespace

const DTypeInfo* dtype_info_from_id(uint32_t id) {
    if (id >= kDTypeIdEnd || !kTable.present[id]) return nullptr;
    return &kTable.info[id];
}

const DTypeInfo& dtype_info(DType t) {
    const DTypeInfo* info = dtype_info_from_id(static_cast<uint32_t>(t));
    if (!info) throw Error(ErrorCode::InvalidArgument, "unknown tensor type id " + std::to_string(static_cast<uint32_t>(t)));
    return *info;
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (const Row& r : kRows) {
        std::string_view rn = r.name;
        if (rn.size() != name.size()) continue;
        bool eq = true;
        for (size_t i = 0; i < rn.size() && eq; ++i)
            eq = std::toupper(static_cast<unsigned char>(name[i])) == rn[i];
        if (eq) return r.type;
    }
    return std::nullopt;
}

uint64_t dtype_row_bytes(DType t, int64_t n) {
    const DTypeInfo& info = dtype_info(t);
    if (n < 0 || n % info.block_size != 0)
        throw Error(ErrorCode::InvalidArgument, std::string("row of ") + std::to_string(n) + " elements is not a multiple of the " +
                                                    info.name + " block size " + std::to_string(info.block_size));
    return static_cast<uint64_t>(n / info.block_size) * info.block_bytes;
}

void require_supported(DType t, const std::string& tensor) {
    const DTypeInfo& info = dtype_info(t);
    if (!info.supported)
        throw Error(ErrorCode::Unsupported, std::string("unsupported type ") + info.name + " for tensor '" + tensor + "'");
}

}  // namespace tessel
