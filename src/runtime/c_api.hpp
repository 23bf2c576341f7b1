// The C API's shared machinery (include/tessel.h): the handles behind its opaque types, and
// guard(), which runs a call's body and turns every exception into a status and a thread-local
// message, so none crosses the C boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tessel.h"
#include "tessel/engine.hpp"
#include "tessel/errors.hpp"
#include "tessel/sampling.hpp"

struct tessel_model {
    std::shared_ptr<const tessel::Model> model;
    std::string chat_template;  // tessel_model_chat_template's storage
};

struct tessel_context {
    tessel::Context ctx;
};

struct tessel_sampler {
    tessel::Sampler sampler;
};

struct tessel_detokenizer {
    tessel::Detokenizer detok;
    std::string ready;  // text pushed but not yet delivered (a buffer was too small)
};

namespace tessel::capi {

/// The status for an ErrorCode.
tessel_status status_of(ErrorCode code);

/// Makes `message` this thread's last error (tessel_last_error).
void set_last_error(std::string&& message) noexcept;
/// Makes a fixed text this thread's last error: building the real message ran out of memory.
void set_last_error_oom() noexcept;

/// Records the message make() builds as this thread's last error and returns `status`. Never
/// throws: when building the message runs out of memory, the last error says so instead.
template <typename M>
tessel_status fail(tessel_status status, M&& make) noexcept {
    try {
        set_last_error(make());
    } catch (...) {
        set_last_error_oom();
    }
    return status;
}

/// INVALID_ARGUMENT "NAME: NULL ..." unless `p` is set.
struct NullArgument {
    const char* name;
};
template <typename T>
void require(const T* p, const char* name) {
    if (!p) throw NullArgument{name};
}

/// Thrown for BUFFER_TOO_SMALL: the result needs `needed` units, the caller gave `capacity`.
struct BufferTooSmall {
    size_t needed, capacity;
    const char* unit;  // "bytes" or "tokens"
};

/// Copies `text` and a NUL into buf[0..size) when they fit, else throws BufferTooSmall (buf may
/// be NULL when size is 0); *n_needed = text.size() either way.
void write_text(std::string_view text, char* buf, size_t size, size_t* n_needed);

/// Runs body() (which returns nothing and throws on failure): TESSEL_OK, or the status and
/// message of what it threw: tessel::Error by its code with its message as is (it names the
/// file, tensor or key); a NULL argument as INVALID_ARGUMENT, BufferTooSmall as
/// BUFFER_TOO_SMALL, std::bad_alloc as OUT_OF_MEMORY and anything else as INTERNAL, with
/// messages that start with the C function's name.
template <typename F>
tessel_status guard(const char* function, F&& body) noexcept {
    try {
        body();
        return TESSEL_OK;
    } catch (const Error& e) {
        return fail(status_of(e.code()), [&] { return std::string(e.what()); });
    } catch (const NullArgument& n) {
        return fail(TESSEL_ERROR_INVALID_ARGUMENT, [&] { return std::string(function) + ": " + n.name + " is NULL"; });
    } catch (const BufferTooSmall& b) {
        return fail(TESSEL_ERROR_BUFFER_TOO_SMALL, [&] {
            return std::string(function) + ": the result needs " + std::to_string(b.needed) + " " + b.unit + ", the buffer holds " +
                   std::to_string(b.capacity);
        });
    } catch (const std::bad_alloc&) {
        return fail(TESSEL_ERROR_OUT_OF_MEMORY, [&] { return std::string(function) + ": out of memory"; });
    } catch (const std::exception& e) {
        return fail(TESSEL_ERROR_INTERNAL, [&] { return std::string(function) + ": " + e.what(); });
    } catch (...) {
        return fail(TESSEL_ERROR_INTERNAL, [&] { return std::string(function) + ": an unknown exception"; });
    }
}

}  // namespace tessel::capi
