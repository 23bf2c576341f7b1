// The C API's error plumbing (src/runtime/c_api.hpp): every tessel::ErrorCode has its own status
// whose name is the code's name, and guard() turns every kind of exception into a status and a
// last-error message instead of letting it cross the C boundary.
#include <gtest/gtest.h>

#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime/c_api.hpp"

namespace tessel {
namespace {

TEST(CApiStatus, EveryErrorCodeHasItsOwnStatusNamedAsTheCode) {
    std::set<int> seen;
    const int last = static_cast<int>(ErrorCode::GgufLimit);
    for (int c = 0; c <= last; ++c) {
        const auto code = static_cast<ErrorCode>(c);
        const tessel_status st = capi::status_of(code);
        EXPECT_NE(st, TESSEL_OK) << error_code_name(code);
        EXPECT_NE(st, TESSEL_ERROR_INTERNAL) << error_code_name(code) << " has no status of its own";
        EXPECT_TRUE(seen.insert(st).second) << error_code_name(code) << " shares status " << st;
        EXPECT_STREQ(tessel_status_name(st), error_code_name(code));
    }
    EXPECT_STREQ(error_code_name(static_cast<ErrorCode>(last + 1)), "unknown") << "GgufLimit is no longer the last code";
    EXPECT_STREQ(tessel_status_name(TESSEL_OK), "ok");
    EXPECT_STREQ(tessel_status_name(TESSEL_ERROR_BUFFER_TOO_SMALL), "buffer-too-small");
    EXPECT_STREQ(tessel_status_name(TESSEL_ERROR_INTERNAL), "internal");
    EXPECT_STREQ(tessel_status_name(static_cast<tessel_status>(55)), "unknown");
}

TEST(CApiStatus, GuardTurnsEveryExceptionIntoAStatusAndAMessage) {
    EXPECT_EQ(capi::guard("f", [] {}), TESSEL_OK);
    EXPECT_EQ(capi::guard("f", [] { throw Error(ErrorCode::BadModel, "m.gguf: missing tensor 'x'"); }), TESSEL_ERROR_BAD_MODEL);
    EXPECT_STREQ(tessel_last_error(), "m.gguf: missing tensor 'x'");
    EXPECT_EQ(capi::guard("f", [] { throw std::bad_alloc(); }), TESSEL_ERROR_OUT_OF_MEMORY);
    EXPECT_STREQ(tessel_last_error(), "f: out of memory");
    EXPECT_EQ(capi::guard("f", [] { capi::require(static_cast<const int*>(nullptr), "ctx"); }), TESSEL_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(tessel_last_error(), "f: ctx is NULL");
    EXPECT_EQ(capi::guard("f", [] { throw std::logic_error("broken invariant"); }), TESSEL_ERROR_INTERNAL);
    EXPECT_STREQ(tessel_last_error(), "f: broken invariant");
    EXPECT_EQ(capi::guard("f", [] { throw 42; }), TESSEL_ERROR_INTERNAL);
    EXPECT_STREQ(tessel_last_error(), "f: an unknown exception");
    // A success leaves the last error as it was.
    EXPECT_EQ(capi::guard("f", [] {}), TESSEL_OK);
    EXPECT_STREQ(tessel_last_error(), "f: an unknown exception");
}

TEST(CApiStatus, TextThatDoesNotFitIsNotWrittenAndItsSizeIsReported) {
    char buf[6] = "xxxxx";
    size_t n = 0;
    EXPECT_EQ(capi::guard("f", [&] { capi::write_text("hello", buf, 5, &n); }), TESSEL_ERROR_BUFFER_TOO_SMALL);
    EXPECT_EQ(n, 5u);
    EXPECT_STREQ(buf, "xxxxx");
    EXPECT_STREQ(tessel_last_error(), "f: the result needs 6 bytes (with the terminating NUL), the buffer holds 5");
    EXPECT_EQ(capi::guard("f", [&] { capi::write_text("hello", buf, 6, &n); }), TESSEL_OK);
    EXPECT_STREQ(buf, "hello");
    EXPECT_EQ(capi::guard("f", [&] { capi::write_text("", nullptr, 0, &n); }), TESSEL_ERROR_BUFFER_TOO_SMALL);
    EXPECT_EQ(n, 0u);
}

// The last error is per thread.
TEST(CApiStatus, LastErrorIsPerThread) {
    capi::guard("main", [] { throw Error(ErrorCode::Io, "main thread"); });
    std::string other;
    std::thread([&] {
        capi::guard("t", [] { throw Error(ErrorCode::Io, "other thread"); });
        other = tessel_last_error();
    }).join();
    EXPECT_EQ(other, "other thread");
    EXPECT_STREQ(tessel_last_error(), "main thread");
}

}  // namespace
}  // namespace tessel
