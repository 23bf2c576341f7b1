// `tessel quantize`: writes a copy of a GGUF model whose tensors are converted to the types of a
// quantization plan (model/quant_plan.hpp). Each converted tensor is dequantized row by row to
// f32 and quantized with tessel's reference quantizers (quant/quant.hpp), as llama.cpp's
// quantizer does without an importance matrix; tensors whose type does not change are copied
// byte for byte. All metadata is kept, except split.* keys; general.file_type is set to the
// target's LLAMA_FTYPE_* value and general.quantization_version to 2 (ggml's GGML_QNT_VERSION).
// Tensors keep the input's order (llama-quantize writes them sorted by layer, then name). The
// output is assembled in memory (gguf::Writer) before it is written: peak memory is about the
// output's size plus the mapped input.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/quant_plan.hpp"

namespace tessel::model {

/// Converts the data of tensor `t` (ne[1]·ne[2]·ne[3] rows of ne[0] elements of t.type at `src`)
/// to `to`, splitting rows over `n_threads` (>= 1) threads. Returns the converted bytes
/// (dtype_row_bytes(to, ne[0]) per row). Throws tessel::Error(Unsupported) when either type has
/// no reference kernel.
std::vector<uint8_t> convert_tensor(const uint8_t* src, const gguf::TensorInfo& t, DType to, int n_threads);

struct QuantizeStats {
    uint64_t bytes_in = 0;   ///< tensor data bytes of the input
    uint64_t bytes_out = 0;  ///< tensor data bytes of the output
    uint64_t file_bytes = 0; ///< size of the written file
    double seconds = 0;      ///< wall time from opening the input to the renamed output
};

/// Called once per tensor, in file order, after it was converted or copied.
using TensorDone = std::function<void(const TensorPlan&)>;

/// Quantizes the model at `in_path` into `out_path` (written to out_path.tmp, then renamed:
/// no partial file is left under out_path on error). `n_threads` >= 1 threads convert rows.
/// Throws tessel::Error: InvalidArgument when in_path and out_path name the same file or
/// n_threads < 1; Io naming the path when the input cannot be read or out_path's folder does not
/// exist or the file cannot be written; the errors of gguf::File::open and plan_quantization.
QuantizeStats quantize_model(const std::string& in_path, const std::string& out_path, const QuantTarget& target,
                             const QuantOptions& opt, int n_threads, const TensorDone& on_tensor = {});

}  // namespace tessel::model
