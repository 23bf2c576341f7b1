// SHA-256 of files, for verifying downloaded models against pinned digests.
// Computed with OpenSSL's libcrypto EVP interface (FIPS 180-4 SHA-256).
#pragma once

#include <filesystem>
#include <string>

namespace tessel::tools {

/// SHA-256 of the whole file at `path` as 64 lowercase hex digits.
/// Throws tessel::Error(Io) naming the path when the file cannot be opened or read, and
/// tessel::Error(Io) when libcrypto reports a failure.
std::string sha256_file_hex(const std::filesystem::path& path);

}  // namespace tessel::tools
