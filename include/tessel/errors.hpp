// tessel public error type.
//
// Every failure caused by input (files, flags, prompts) is reported by throwing tessel::Error.
// The message names the file / tensor / key involved and what was expected; code() gives a
// machine-checkable category so callers and tests need not parse messages.
#pragma once

#include <stdexcept>
#include <string>

#include "tessel/export.h"

namespace tessel {

/// Error categories. The GGUF ones map one-to-one to the reader's validation checks.
/// New codes go before the GGUF group and get a status in include/tessel.h; GgufLimit stays last
/// (the C API's tessel_status_name walks the codes up to it).
enum class ErrorCode {
    Io,                  ///< open/read/mmap/write failed (errno text in the message)
    InvalidArgument,     ///< bad flag, value or API argument
    Unsupported,         ///< valid input that tessel cannot handle (e.g. an unsupported dtype)
    BadModel,            ///< a model file lacks a required key or tensor, or one has the wrong type/shape
    ContextFull,         ///< a batch does not fit in the free cells of the KV cache
    Device,              ///< an accelerator answered an error status, stopped answering or died
    Environment,         ///< a TESSEL_* environment variable is empty or invalid (docs/config.md)
    OutOfMemory,         ///< what was asked for needs more memory than the process may take
    Cancelled,           ///< a caller's callback asked to stop (ModelParams::progress returned false)
    // GGUF validation categories (see src/gguf/reader.hpp)
    GgufBadMagic,            ///< first 4 bytes are not "GGUF"
    GgufUnsupportedVersion,  ///< version other than 2 or 3
    GgufTruncated,           ///< the file ends inside a header field
    GgufLengthPastEnd,       ///< a declared count/length needs more bytes than remain
    GgufUnknownValueType,    ///< metadata value type id outside 0..12
    GgufWrongValueType,      ///< a known key has the wrong value type (e.g. general.alignment)
    GgufUnknownTensorType,   ///< tensor dtype id not in the GGML type table
    GgufTooManyDims,         ///< n_dims > 4
    GgufBadDimension,        ///< a dimension <= 0, or row not a multiple of the block size
    GgufSizeOverflow,        ///< element/byte count overflows 64 bits
    GgufDataOutsideFile,     ///< tensor data extends past the end of the file
    GgufOverlappingTensors,  ///< two tensors' data ranges overlap
    GgufMisalignedOffset,    ///< tensor offset not a multiple of general.alignment
    GgufDuplicateKey,        ///< a metadata key appears twice
    GgufDuplicateTensor,     ///< a tensor name appears twice
    GgufBadAlignment,        ///< general.alignment not a power of two, zero, or too large
    GgufLimit,               ///< a string/array/count exceeds tessel's sanity limits
};

/// Short stable name of a code, e.g. "gguf-truncated".
TESSEL_API const char* error_code_name(ErrorCode code);

/// The one exception type tessel throws for bad input. what() is a single line.
class TESSEL_API Error : public std::runtime_error {
public:
    Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
    ErrorCode code() const noexcept { return code_; }

private:
    ErrorCode code_;
};

}  // namespace tessel
