// The plan of `tessel quantize`: which type each tensor of a GGUF model gets, and why.
//
// The rules are llama.cpp's quantizer's (src/llama-quant.cpp and tools/quantize/quantize.cpp of
// the pinned llama-cpp-python 0.3.36 sdist), so a plan names the types llama-quantize would pick
// without an importance matrix:
//   - only tensors with 2+ dimensions (trailing 1s ignored) whose name ends in "weight" are
//     quantized; norms ("_norm.weight"), expert gates (ffn_gate_inp), position embeddings and a
//     few small tensors named in llama.cpp's list keep their source type;
//   - a target names a llama.cpp file type (LLAMA_FTYPE_*) and its default tensor type; for a
//     quantized default, the mixture adjusts some tensors: output.weight (or token_embd.weight
//     when the model has no output.weight, i.e. tied) gets Q6_K, or Q8_0 when its rows are not a
//     multiple of the default type's block (or the target is Q8_0 or MXFP4); Q4_K (= Q4_K_M)
//     gives attn_v and ffn_down of layers i with i < n/8, i >= 7n/8 or (i - n/8) % 3 == 2 Q6_K;
//     IQ4_NL gives attn_v Q5_K when n_head / n_head_kv >= 4 and ffn_down of layers i < n/8
//     Q5_K; MXFP4 (llama.cpp's MXFP4_MOE) gives expert tensors (ne[2] > 1) MXFP4 and every
//     other quantized tensor Q8_0; 8-expert models and falcon get llama.cpp's extra rules;
//   - `pure` applies the default type to every quantized tensor, output included;
//   - then rows (ne[0]) that are not a multiple of the chosen type's block fall back:
//     Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, and to F16 when still not a multiple.
// Counters over layers follow llama.cpp's tensor order (by layer number, then by name).
// Not supported: importance matrices, tensor-type overrides, --leave-output-tensor, split files,
// and the arch-specific exclusions llama.cpp makes for glm5-next tensors.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "gguf/reader.hpp"

namespace tessel::model {

/// One TYPE accepted by `tessel quantize`.
struct QuantTarget {
    const char* name;      ///< as on the command line, e.g. "Q4_K" (aliases have their own entry)
    const char* ftype;     ///< llama.cpp's file type name, e.g. "Q4_K_M"
    uint32_t file_type;    ///< LLAMA_FTYPE_* value written as general.file_type
    DType default_type;    ///< type of the tensors the mixture does not adjust
};

/// Every target, in the order they are listed in help and errors.
std::span<const QuantTarget> quant_targets();

/// The target called `name` (case-insensitive). Throws tessel::Error(InvalidArgument)
/// "unknown quantization type X (valid: Q4_0, ...)".
const QuantTarget& find_quant_target(std::string_view name);

struct QuantOptions {
    bool pure = false;              ///< the default type for every quantized tensor (no mixture)
    bool allow_requantize = false;  ///< allow converting tensors that are already quantized
};

/// The decision for one tensor.
struct TensorPlan {
    const gguf::TensorInfo* info;  ///< the source tensor (points into the planned File)
    DType to;                      ///< chosen type (== info->type: bytes are copied unchanged)
    std::string reason;            ///< why `to` was chosen, e.g. "output (tied token_embd)"
    uint64_t bytes_out;            ///< data bytes in the output

    bool converts() const { return to != info->type; }
};

/// The decisions for every tensor of a file, in the file's tensor order.
struct QuantPlan {
    const QuantTarget* target;
    std::vector<TensorPlan> tensors;
};

/// Plans the quantization of `in` to `target`. Throws tessel::Error: InvalidArgument when a
/// tensor that is already quantized would change type and `allow_requantize` is off (naming the
/// tensor and its type); Unsupported when a tensor's type cannot be converted by tessel's
/// reference kernels or the file is one part of a split model; BadModel when a needed
/// hyper-parameter key (<arch>.block_count) is missing or an expert tensor's name has no layer.
QuantPlan plan_quantization(const gguf::File& in, const QuantTarget& target, const QuantOptions& opt);

}  // namespace tessel::model
