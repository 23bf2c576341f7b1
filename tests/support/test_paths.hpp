// Where tests find their data.
#pragma once

#include <filesystem>
#include <string>

namespace tessel::test {

/// tests/data in the source tree.
std::filesystem::path data_dir();

/// The shared folder (peer data, seeds): $TESSEL_SHARED_DIR, else ../shared next to the
/// repository. Returns an empty path when it does not exist.
std::filesystem::path shared_dir();

/// The llama-cpp-python sdist extracted by scripts/peer/fetch-sdist.sh:
/// $TESSEL_PEER_DIR/llama-cpp-python, TESSEL_PEER_DIR defaulting to
/// ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/peer. Returns an empty path when it does not exist.
std::filesystem::path peer_sdist_dir();

/// True when running under CI (CI=true): tests that need shared data must fail, not skip.
bool in_ci();

/// A fresh, empty temporary directory unique to the calling test; removed when the test process
/// ends unless a test failed (then kept, and its path printed).
std::filesystem::path temp_dir();

}  // namespace tessel::test

/// Use in a test that needs shared/: fails under CI when missing, otherwise skips saying so.
#define TESSEL_REQUIRE_SHARED_DIR()                                                             \
    do {                                                                                        \
        if (::tessel::test::shared_dir().empty()) {                                             \
            if (::tessel::test::in_ci()) FAIL() << "shared dir missing (set TESSEL_SHARED_DIR)"; \
            GTEST_SKIP() << "NOT RUN: shared dir missing (set TESSEL_SHARED_DIR)";               \
        }                                                                                       \
    } while (0)

/// Use in a test that needs the peer sdist: fails under CI when missing, otherwise skips saying so.
#define TESSEL_REQUIRE_PEER_SDIST()                                                                  \
    do {                                                                                             \
        if (::tessel::test::peer_sdist_dir().empty()) {                                              \
            if (::tessel::test::in_ci()) FAIL() << "peer sdist missing (run scripts/peer/fetch-sdist.sh)"; \
            GTEST_SKIP() << "NOT RUN: peer sdist missing (run scripts/peer/fetch-sdist.sh)";         \
        }                                                                                            \
    } while (0)
