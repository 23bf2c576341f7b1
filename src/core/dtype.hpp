// GGUF / GGML tensor element types: ids, names, block geometry.
//
// Ids and block sizes are the GGML type ids written in GGUF files (ggml.h `enum ggml_type`,
// and gguf-py `GGMLQuantizationType` / `GGML_QUANT_SIZES`). Gaps in the id range (4, 5,
// 31..33, 36..38) are types removed from the format; files using them are rejected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessel {

enum class DType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3,
    Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
    IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41,
};

/// One past the largest type id tessel knows.
inline constexpr uint32_t kDTypeIdEnd = 42;

/// Static facts about one dtype.
struct DTypeInfo {
    DType type;
    const char* name;     ///< GGUF name, e.g. "Q4_K"
    uint32_t block_size;  ///< elements per block (1 for plain types)
    uint32_t block_bytes; ///< bytes per block
    bool quantized;       ///< block-quantized (block_size > 1)
    bool supported;       ///< tessel can dequantize/compute with it
};

/// Info for a raw id read from a file, or nullptr when the id is not a known type.
const DTypeInfo* dtype_info_from_id(uint32_t id);

/// Info for a known dtype.
const DTypeInfo& dtype_info(DType t);

/// GGUF name of a dtype, e.g. "Q8_0".
inline const char* dtype_name(DType t) { return dtype_info(t).name; }

/// Look up a dtype by its GGUF name (case-insensitive); nullopt when unknown.
std::optional<DType> dtype_from_name(std::string_view name);

/// Bytes taken by a row of `n` elements (ne[0]) of type t.
/// Throws tessel::Error(InvalidArgument) when n is negative or not a multiple of the block size.
uint64_t dtype_row_bytes(DType t, int64_t n);

/// Throws tessel::Error(Unsupported) "unsupported type X for tensor Y" when t has no compute
/// support in tessel. `tensor` names the tensor being used.
void require_supported(DType t, const std::string& tensor);

}  // namespace tessel
