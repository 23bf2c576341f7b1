#include "support/test_paths.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace tessel::test {

std::filesystem::path data_dir() { return std::filesystem::path(TESSEL_SOURCE_DIR) / "tests" / "data"; }

std::filesystem::path shared_dir() {
    std::filesystem::path p;
    if (const char* env = std::getenv("TESSEL_SHARED_DIR"); env && *env)
        p = env;
    else
        p = std::filesystem::path(TESSEL_SOURCE_DIR) / ".." / "shared";
    std::error_code ec;
    return std::filesystem::is_directory(p, ec) ? std::filesystem::canonical(p) : std::filesystem::path();
}

std::filesystem::path peer_sdist_dir() {
    std::filesystem::path root;
    if (const char* env = std::getenv("TESSEL_PEER_DIR"); env && *env)
        root = env;
    else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        root = std::filesystem::path(xdg) / "tessel" / "peer";
    else if (const char* home = std::getenv("HOME"); home && *home)
        root = std::filesystem::path(home) / ".cache" / "tessel" / "peer";
    else
        return {};
    const std::filesystem::path p = root / "llama-cpp-python";
    std::error_code ec;
    return std::filesystem::is_directory(p, ec) ? std::filesystem::canonical(p) : std::filesystem::path();
}

bool in_ci() {
    const char* ci = std::getenv("CI");
    return ci && std::string_view(ci) == "true";
}

namespace {

// Removes the folders temp_dir() made when the test process ends, unless a test failed (then
// they are kept for a look and their paths are printed).
struct TempDirs {
    std::vector<std::filesystem::path> dirs;
    ~TempDirs() {
        const bool failed = ::testing::UnitTest::GetInstance()->Failed();
        for (const auto& d : dirs) {
            std::error_code ec;
            if (failed)
                std::fprintf(stderr, "kept %s\n", d.string().c_str());
            else
                std::filesystem::remove_all(d, ec);
        }
    }
};

TempDirs& temp_dirs() {
    static TempDirs t;
    return t;
}

}  // namespace

std::filesystem::path temp_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "tessel";
    for (char& c : name)
        if (c == '/') c = '_';
    auto dir = std::filesystem::temp_directory_path() / ("tessel-test-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto& made = temp_dirs().dirs;
    if (std::find(made.begin(), made.end(), dir) == made.end()) made.push_back(dir);
    return dir;
}

}  // namespace tessel::test
