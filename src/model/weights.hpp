// Weight placement and loading.
//
// Placement rule (per tensor, per use): the devices are tried in priority order (accelerators
// first, the CPU last); on each, the buffer types device.extra_weight_buffer_types() (best first)
// then device.buffer_type(). A weight goes to the first type that serves EVERY node reading it:
// the device reads the type (supports_buft), the type serves the node (BufferType::supports_use,
// e.g. an NPU type that stores weights tiled answers whether a device kernel reads its tiles) and
// the device claims the node (supports_op). The last device's plain buffer type is the fallback.
// So a tied `token_embd` read by GET_ROWS and by the output MUL_MAT lands in a packed type only
// if that type serves both ops; a norm weight read by a MUL the NPU claims lands in the NPU's
// memory, a matmul weight the NPU does not multiply stays on the CPU. Weights must be flagged
// kFlagWeight before the choice, so a type can tell which sources of a use are weights.
//
// Allocation honours BufferType::max_size(): tensors are packed in order into as many buffers
// as needed, a new buffer starting whenever the next tensor would not fit.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "gguf/reader.hpp"

namespace tessel {

/// The buffer type for weight `w` on `devices` (priority order, non-empty), given the nodes that
/// read it (rule above). Throws tessel::Error(InvalidArgument) when `devices` is empty.
BufferType& choose_weight_buffer_type(const std::vector<Device*>& devices, const Tensor& w,
                                      const std::vector<const Tensor*>& uses);

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
