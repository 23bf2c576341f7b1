#include "common/sha256.hpp"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "tessel/errors.hpp"

namespace tessel::tools {

namespace {

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
struct DigestCtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

std::string sha256_file_hex(const std::filesystem::path& path) {
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
    if (!f) throw Error(ErrorCode::Io, path.string() + ": cannot open: " + std::strerror(errno));
    std::unique_ptr<EVP_MD_CTX, DigestCtxFree> ctx(EVP_MD_CTX_new());
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
        throw Error(ErrorCode::Io, path.string() + ": libcrypto cannot start a SHA-256 digest");

    std::vector<unsigned char> buf(1 << 20);
    for (;;) {
        const size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
        if (n > 0 && EVP_DigestUpdate(ctx.get(), buf.data(), n) != 1)
            throw Error(ErrorCode::Io, path.string() + ": libcrypto SHA-256 update failed");
        if (n < buf.size()) break;
    }
    if (std::ferror(f.get())) throw Error(ErrorCode::Io, path.string() + ": read failed: " + std::strerror(errno));

    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx.get(), digest, &len) != 1)
        throw Error(ErrorCode::Io, path.string() + ": libcrypto SHA-256 final failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * len);
    for (unsigned int i = 0; i < len; ++i) {
        hex.push_back(kHex[digest[i] >> 4]);
        hex.push_back(kHex[digest[i] & 15]);
    }
    return hex;
}

}  // namespace tessel::tools
