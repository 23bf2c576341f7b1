// Weight placement and loading.
//
// Placement rule (per tensor, per use): a weight goes to the first buffer type, in the order
// device.extra_weight_buffer_types() (best first) then device.buffer_type(), that serves EVERY
// node reading it (BufferType::supports_use). So a tied `token_embd` read by GET_ROWS and by
// the output MUL_MAT lands in a packed type only if that type serves both ops; otherwise it
// stays in the plain type, where every op the device supports can read it.
//
// Allocation honours BufferType::max_size(): tensors are packed in order into as many buffers
// as needed, a new buffer starting whenever the next tensor would not fit.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "gguf/reader.hpp"

namespace tessel {

/// The buffer type for weight `w` on `dev`, given the nodes that read it (rule above).
BufferType& choose_weight_buffer_type(Device& dev, const Tensor& w, const std::vector<const Tensor*>& uses);

/// Flags `tensors` kFlagWeight (before sizing them: alloc_size may depend on it), allocates
/// buffers of type `bt` (usage Weights) and places the tensors in them, in order,
/// starting a new buffer whenever the next tensor would push one past bt.max_size().
/// Throws tessel::Error(InvalidArgument) naming a tensor larger than max_size() on its own.
std::vector<std::unique_ptr<Buffer>> allocate_weights(BufferType& bt, const std::vector<Tensor*>& tensors);

/// Copies tensor `t`'s data from the GGUF file (the tensor of the same name) into its buffer.
/// Throws tessel::Error(InvalidArgument) naming the file and tensor when the file lacks it or
/// its type or shape differ from t's, and when t has no buffer yet.
void load_weight(const gguf::File& file, Tensor& t);

}  // namespace tessel
