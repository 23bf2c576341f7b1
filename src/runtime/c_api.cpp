// The C API (include/tessel.h): statuses and the last error, the library version, devices and
// the log callback. Models, contexts and samplers are in c_api_model.cpp, c_api_context.cpp and
// c_api_sampler.cpp.
#include "runtime/c_api.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "tessel/device.hpp"
#include "tessel/log.hpp"

namespace tessel::capi {
namespace {

thread_local std::string t_last_error;
thread_local const char* t_fixed_error = nullptr;  // set instead of t_last_error when that failed

}  // namespace

void set_last_error(std::string&& message) noexcept {
    t_last_error = std::move(message);
    t_fixed_error = nullptr;
}

void set_last_error_oom() noexcept { t_fixed_error = "out of memory while reporting an error"; }

tessel_status status_of(ErrorCode code) {
    switch (code) {
        case ErrorCode::Io: return TESSEL_ERROR_IO;
        case ErrorCode::InvalidArgument: return TESSEL_ERROR_INVALID_ARGUMENT;
        case ErrorCode::Unsupported: return TESSEL_ERROR_UNSUPPORTED;
        case ErrorCode::BadModel: return TESSEL_ERROR_BAD_MODEL;
        case ErrorCode::ContextFull: return TESSEL_ERROR_CONTEXT_FULL;
        case ErrorCode::Device: return TESSEL_ERROR_DEVICE;
        case ErrorCode::Environment: return TESSEL_ERROR_ENVIRONMENT;
        case ErrorCode::OutOfMemory: return TESSEL_ERROR_OUT_OF_MEMORY;
        case ErrorCode::Cancelled: return TESSEL_ERROR_CANCELLED;
        case ErrorCode::GgufBadMagic: return TESSEL_ERROR_GGUF_BAD_MAGIC;
        case ErrorCode::GgufUnsupportedVersion: return TESSEL_ERROR_GGUF_UNSUPPORTED_VERSION;
        case ErrorCode::GgufTruncated: return TESSEL_ERROR_GGUF_TRUNCATED;
        case ErrorCode::GgufLengthPastEnd: return TESSEL_ERROR_GGUF_LENGTH_PAST_END;
        case ErrorCode::GgufUnknownValueType: return TESSEL_ERROR_GGUF_UNKNOWN_VALUE_TYPE;
        case ErrorCode::GgufWrongValueType: return TESSEL_ERROR_GGUF_WRONG_VALUE_TYPE;
        case ErrorCode::GgufUnknownTensorType: return TESSEL_ERROR_GGUF_UNKNOWN_TENSOR_TYPE;
        case ErrorCode::GgufTooManyDims: return TESSEL_ERROR_GGUF_TOO_MANY_DIMS;
        case ErrorCode::GgufBadDimension: return TESSEL_ERROR_GGUF_BAD_DIMENSION;
        case ErrorCode::GgufSizeOverflow: return TESSEL_ERROR_GGUF_SIZE_OVERFLOW;
        case ErrorCode::GgufDataOutsideFile: return TESSEL_ERROR_GGUF_DATA_OUTSIDE_FILE;
        case ErrorCode::GgufOverlappingTensors: return TESSEL_ERROR_GGUF_OVERLAPPING_TENSORS;
        case ErrorCode::GgufMisalignedOffset: return TESSEL_ERROR_GGUF_MISALIGNED_OFFSET;
        case ErrorCode::GgufDuplicateKey: return TESSEL_ERROR_GGUF_DUPLICATE_KEY;
        case ErrorCode::GgufDuplicateTensor: return TESSEL_ERROR_GGUF_DUPLICATE_TENSOR;
        case ErrorCode::GgufBadAlignment: return TESSEL_ERROR_GGUF_BAD_ALIGNMENT;
        case ErrorCode::GgufLimit: return TESSEL_ERROR_GGUF_LIMIT;
    }
    return TESSEL_ERROR_INTERNAL;
}

void write_text(std::string_view text, char* buf, size_t size, size_t* n_needed) {
    require(n_needed, "n_needed");
    *n_needed = text.size();
    if (text.size() >= size) throw BufferTooSmall{text.size() + 1, size, "bytes (with the terminating NUL)"};
    require(buf, "buf");
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';
}

}  // namespace tessel::capi

using namespace tessel;
using capi::guard;
using capi::require;

extern "C" {

const char* tessel_last_error(void) { return capi::t_fixed_error ? capi::t_fixed_error : capi::t_last_error.c_str(); }

const char* tessel_status_name(tessel_status status) {
    switch (status) {
        case TESSEL_OK: return "ok";
        case TESSEL_ERROR_BUFFER_TOO_SMALL: return "buffer-too-small";
        case TESSEL_ERROR_INTERNAL: return "internal";
        default: break;
    }
    for (int c = 0; c <= static_cast<int>(ErrorCode::GgufLimit); ++c)
        if (capi::status_of(static_cast<ErrorCode>(c)) == status) return error_code_name(static_cast<ErrorCode>(c));
    return "unknown";
}

const char* tessel_version(void) { return version(); }

static_assert(TESSEL_LOG_DEBUG == static_cast<int>(LogLevel::Debug) && TESSEL_LOG_INFO == static_cast<int>(LogLevel::Info) &&
              TESSEL_LOG_WARN == static_cast<int>(LogLevel::Warn) && TESSEL_LOG_ERROR == static_cast<int>(LogLevel::Error));

void tessel_set_log_callback(tessel_log_callback callback, void* user_data) {
    if (!callback) {
        set_log_callback(nullptr);
        return;
    }
    try {
        set_log_callback([callback, user_data](LogLevel level, std::string_view text) {
            const std::string line(text);  // NUL-terminated for C
            callback(static_cast<tessel_log_level>(level), line.c_str(), user_data);
        });
    } catch (...) {
        // a std::function holding two pointers does not allocate: there is no failure to report
    }
}

size_t tessel_device_count(void) {
    try {
        return devices().size();
    } catch (...) {
        return 0;
    }
}

tessel_status tessel_device_get(size_t index, tessel_device_info* info) {
    return guard(__func__, [&] {
        require(info, "info");
        const std::vector<DeviceInfo> all = devices();
        if (index >= all.size())
            throw Error(ErrorCode::InvalidArgument, "tessel_device_get: device " + std::to_string(index) + " of " +
                                                        std::to_string(all.size()));
        const DeviceInfo& d = all[index];
        tessel_device_info out{};
        std::strncpy(out.name, d.name.c_str(), sizeof(out.name) - 1);
        std::strncpy(out.description, d.description.c_str(), sizeof(out.description) - 1);
        out.kind = d.kind == DeviceKind::Cpu ? TESSEL_DEVICE_CPU : TESSEL_DEVICE_ACCEL;
        out.memory_free = d.memory_free;
        out.memory_total = d.memory_total;
        *info = out;
    });
}

}  // extern "C"
