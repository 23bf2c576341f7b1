// Hostile and careless input to the tessel binary: files whose metadata is large, and bad values of
// TESSEL_* variables. Memory and time bounds are asserted in builds without sanitizers only.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "gguf/value.hpp"
#include "gguf/writer.hpp"

namespace tessel {
namespace {

using test::CliOptions;
using test::CliResult;
using test::run_tessel;

constexpr uint64_t kMiB = 1u << 20;

/// A metadata-only GGUF with `arrays` UINT8 arrays of 2^26 items and, if `strings`, a STRING
/// array of 2^22 eight-byte items (the shapes that cost 3 GiB per 64 MiB before values were packed).
std::filesystem::path big_metadata_file(const std::string& name, int arrays, bool strings) {
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::string("llama"));
    for (int i = 0; i < arrays; ++i)
        w.set("hostile.bytes" + std::to_string(i), gguf::Value::packed_array(gguf::ValueType::UINT8, std::vector<uint8_t>(1u << 26, 7)));
    if (strings) {
        constexpr uint32_t n = 1u << 22;
        std::string chars;
        std::vector<uint32_t> ends;
        for (uint32_t i = 0; i < n; ++i) chars += "abcdefgh", ends.push_back((i + 1) * 8);
        w.set("hostile.strings", gguf::Value::string_array(std::move(chars), std::move(ends)));
    }
    const auto path = std::filesystem::temp_directory_path() / ("tessel-hostile-" + name + ".gguf");
    w.write_file(path.string());
    return path;
}

struct BigMetadata : ::testing::TestWithParam<std::tuple<const char*, int, bool>> {};

TEST_P(BigMetadata, InfoMemoryFollowsTheFileSize) {
    const auto [name, arrays, strings] = GetParam();
    const auto path = big_metadata_file(name, arrays, strings);
    const uint64_t file_bytes = std::filesystem::file_size(path);
    const CliResult r = run_tessel({"info", path.string()});
    std::filesystem::remove(path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(arrays ? "arr[UINT8,67108864]" : "arr[STRING,4194304]"), std::string::npos) << r.out;
    if (test::kSanitized) GTEST_SKIP() << "memory and time bounds hold in builds without sanitizers";
    EXPECT_LT(static_cast<uint64_t>(r.max_rss_kib) * 1024, file_bytes + 64 * kMiB)
        << "peak RSS " << r.max_rss_kib << " KiB for a file of " << file_bytes << " bytes";
    EXPECT_LT(r.seconds, 10.0);
}

INSTANTIATE_TEST_SUITE_P(Files, BigMetadata,
                         ::testing::Values(std::make_tuple("one_u8_array", 1, false), std::make_tuple("two_u8_arrays", 2, false),
                                           std::make_tuple("string_array", 0, true)),
                         [](const auto& info) { return std::string(std::get<0>(info.param)); });

TEST(MetadataBudget, PastTheBudgetIsAnErrorNamingTheKeyAndTheVariable) {
    const auto path = big_metadata_file("budget", 1, false);
    CliOptions o;
    o.env = {"TESSEL_GGUF_MAX_METADATA=1000000"};
    const CliResult r = run_tessel({"info", path.string()}, o);
    std::filesystem::remove(path);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("tessel: error: " + path.string() + ": key 'hostile.bytes0': "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("budget of 1000000 bytes in memory (TESSEL_GGUF_MAX_METADATA)"), std::string::npos) << r.err;
}

// test-ops selections that select nothing, and out-of-range numbers, are usage errors (exit 2).
TEST(TestOpsUsage, EmptySelectionAndBadSeedExit2) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"test-ops", "-o", "SOFT_MAX", "-t", "Q4_0"}, {"test-ops", "perf", "-o", "SOFT_MAX", "-t", "Q4_0"}, {"test-ops", "--seed", "-1", "-o", "ADD"}}) {
        const CliResult r = run_tessel(args);
        EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
        ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
        EXPECT_TRUE(r.err_lines()[0].starts_with("tessel: error: ")) << r.err;
    }
}

}  // namespace
}  // namespace tessel
