// The default model (SmolLM2-135M-Instruct Q4_1) in tests: where the cached model is, and the
// guard of tests that need it. Its reference data, tests/data/smollm2/, is read with
// support/reference.hpp.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>

#include "support/reference.hpp"
#include "support/test_paths.hpp"

namespace tessel::test {

/// The default model in tessel's cache (tools::model_cache_dir()); it may not exist.
std::filesystem::path smollm2_path();

/// Use in a test's SetUp when smollm2_path() does not exist: fails under CI (the model must have
/// been fetched), otherwise skips saying the test did not run.
#define TESSEL_REQUIRE_SMOLLM2()                                                                   \
    do {                                                                                           \
        if (!std::filesystem::exists(::tessel::test::smollm2_path())) {                            \
            if (::tessel::test::in_ci()) FAIL() << "default model missing from the cache (run tessel once to fetch it)"; \
            GTEST_SKIP() << "NOT RUN: default model not in the cache (run `tessel run -p hi` once to fetch it)"; \
        }                                                                                          \
    } while (0)

}  // namespace tessel::test
