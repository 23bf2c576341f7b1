// The models of the golden suite (tests/models/): each a file in tessel's model cache that
// scripts/models.sh fetches or makes (scripts/test.sh runs it before the tests), with llama.cpp's
// reference data in tests/data/<name>/ (scripts/reference/make_reference.py).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <span>
#include <string>

#include "support/reference.hpp"
#include "support/test_paths.hpp"

namespace tessel::test {

struct GoldenModel {
    const char* name;    ///< scripts/models.sh's name, tests/data/<name>/
    const char* file;    ///< path in the model cache folder (tools::model_cache_dir())
    LogitBounds bounds;  ///< how close tessel must be to llama.cpp
};

/// smollm2 (the default model: proof that the harness passes where the architecture exists),
/// gemma3-270m, qwen3-0.6b-shape, qwen2-0.5b-shape, llama-3.2-1b-shape.
std::span<const GoldenModel> golden_models();

/// The model named `name` of golden_models(); throws std::out_of_range for another name.
const GoldenModel& golden_model(const std::string& name);

/// Where the model is cached; the file may not exist.
std::filesystem::path golden_model_path(const GoldenModel& m);

/// tests/data/<name>/reference.gguf
std::filesystem::path golden_reference_path(const GoldenModel& m);

/// The pinned sha256 of the model's file: tools::default_model_source() for smollm2, the pin of
/// scripts/models.sh for gemma3-270m, scripts/models/synthetic.sha256 for the synthetic files.
/// Throws std::runtime_error when that file has no line for it.
std::string golden_model_sha256(const GoldenModel& m);

}  // namespace tessel::test

/// Use in a test that needs golden model `m`: fails under CI when it is not cached (scripts/test.sh
/// fetches and makes every one), otherwise skips saying how to get it.
#define TESSEL_REQUIRE_GOLDEN_MODEL(m)                                                                             \
    do {                                                                                                           \
        if (!std::filesystem::exists(::tessel::test::golden_model_path(m))) {                                      \
            if (::tessel::test::in_ci()) FAIL() << (m).name << " missing from the cache (run scripts/models.sh " << (m).name << ")"; \
            GTEST_SKIP() << "NOT RUN: " << (m).name << " not in the cache (run scripts/models.sh " << (m).name << ")"; \
        }                                                                                                          \
    } while (0)
