// An error answered to an HTTP client as OpenAI's error object:
//   {"error": {"message": ..., "type": ..., "param": ... | null, "code": null}}
#pragma once

#include <stdexcept>
#include <string>

namespace tessel::server {

struct ApiError : std::runtime_error {
    /// status: the HTTP status (400, 401, 404, 413, 500, 503); type: OpenAI's error type, e.g.
    /// "invalid_request_error"; param: the request field at fault, "" when none.
    ApiError(int status, std::string type, const std::string& message, std::string param = "")
        : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)) {}
    /// A 400 invalid_request_error naming `param`.
    static ApiError invalid(const std::string& message, const std::string& param = "") {
        return ApiError(400, "invalid_request_error", message, param);
    }
    int status;
    std::string type;
    std::string param;
};

/// The JSON body of an error (OpenAI's shape).
std::string error_body(const std::string& message, const std::string& type, const std::string& param = "");

}  // namespace tessel::server
