#include "tessel/errors.hpp"

namespace tessel {

const char* error_code_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::Io: return "io";
        case ErrorCode::InvalidArgument: return "invalid-argument";
        case ErrorCode::Unsupported: return "unsupported";
        case ErrorCode::GgufBadMagic: return "gguf-bad-magic";
        case ErrorCode::GgufUnsupportedVersion: return "gguf-unsupported-version";
        case ErrorCode::GgufTruncated: return "gguf-truncated";
        case ErrorCode::GgufLengthPastEnd: return "gguf-length-past-end";
        case ErrorCode::GgufUnknownValueType: return "gguf-unknown-value-type";
        case ErrorCode::GgufWrongValueType: return "gguf-wrong-value-type";
        case ErrorCode::GgufUnknownTensorType: return "gguf-unknown-tensor-type";
        case ErrorCode::GgufTooManyDims: return "gguf-too-many-dims";
        case ErrorCode::GgufBadDimension: return "gguf-bad-dimension";
        case ErrorCode::GgufSizeOverflow: return "gguf-size-overflow";
        case ErrorCode::GgufDataOutsideFile: return "gguf-data-outside-file";
        case ErrorCode::GgufOverlappingTensors: return "gguf-overlapping-tensors";
        case ErrorCode::GgufMisalignedOffset: return "gguf-misaligned-offset";
        case ErrorCode::GgufDuplicateKey: return "gguf-duplicate-key";
        case ErrorCode::GgufDuplicateTensor: return "gguf-duplicate-tensor";
        case ErrorCode::GgufBadAlignment: return "gguf-bad-alignment";
        case ErrorCode::GgufLimit: return "gguf-limit";
        case ErrorCode::BadModel: return "bad-model";
        case ErrorCode::ContextFull: return "context-full";
        case ErrorCode::Device: return "device";
        case ErrorCode::Environment: return "environment";
        case ErrorCode::OutOfMemory: return "out-of-memory";
        case ErrorCode::Cancelled: return "cancelled";
    }
    return "unknown";
}

}  // namespace tessel
