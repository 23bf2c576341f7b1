// Tokenizer conformance: token ids identical to llama.cpp's for the test strings of its vocab-only
// GGUF files (format: shared/peer-data/README.md). Sources: the shared peer data (gpt-2,
// llama-spm, phi-3) and the models/ folder of the pinned llama-cpp-python sdist
// (scripts/peer/fetch-sdist.sh), of which every byte-level BPE file whose pre-tokenizer tessel
// supports, every SentencePiece file and gemma-4 (BPE on raw UTF-8 with U+2581 spaces) is run.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/reader.hpp"
#include "support/test_paths.hpp"
#include "tessel/errors.hpp"
#include "vocab/detokenize.hpp"
#include "vocab/tokenizer.hpp"

namespace tessel::vocab {
namespace {

namespace fs = std::filesystem;

struct Case {
    std::string text;
    std::vector<TokenId> ids;
};

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + p.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// The cases of NAME.gguf: inputs from NAME.gguf.inp, expected ids from NAME.gguf.out.
std::vector<Case> read_cases(const fs::path& gguf) {
    const std::string inp = read_file(gguf.string() + ".inp");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<Case> cases;
    for (size_t at = 0; at < inp.size();) {
        const size_t end = inp.find(sep, at);
        const size_t stop = end == std::string::npos ? inp.size() : end;
        cases.push_back({inp.substr(at, stop - at), {}});
        at = end == std::string::npos ? inp.size() : end + sep.size();
    }
    std::istringstream out(read_file(gguf.string() + ".out"));
    std::string line;
    size_t i = 0;
    for (; std::getline(out, line); ++i) {
        if (i >= cases.size()) throw std::runtime_error(gguf.string() + ".out has more lines than .inp has cases");
        std::istringstream ids(line);
        for (TokenId id; ids >> id;) cases[i].ids.push_back(id);
    }
    if (i != cases.size()) throw std::runtime_error(gguf.string() + ".out has fewer lines than .inp has cases");
    return cases;
}

std::string ids_text(const std::vector<TokenId>& ids) {
    std::string s;
    for (TokenId id : ids) {
        if (!s.empty()) s += ' ';
        s += std::to_string(id);
    }
    return s;
}

/// Runs every case of one file with no BOS/EOS and special tokens not parsed; returns the count.
/// Every case also round-trips exactly: for SentencePiece, detokenize drops the one leading space
/// tokenize added (add_space_prefix), as llama.cpp's llama_detokenize does.
size_t run_cases(const fs::path& gguf, const Tokenizer& tok) {
    const std::vector<Case> cases = read_cases(gguf);
    EXPECT_FALSE(cases.empty()) << gguf;
    const TokenizeOptions plain{false, false, false};
    for (const Case& c : cases) {
        const std::vector<TokenId> got = tok.tokenize(c.text, plain);
        EXPECT_EQ(ids_text(got), ids_text(c.ids)) << gguf.filename().string() << ": text '" << c.text << "'";
        EXPECT_EQ(detokenize(tok.vocab(), got, false), c.text) << gguf.filename().string() << ": round trip";
    }
    return cases.size();
}

/// Runs the cases of shared/peer-data/tokenizer/NAME.gguf; returns the tokenizer's model.
VocabModel run_shared(const std::string& name) {
    const fs::path gguf = test::shared_dir() / "peer-data" / "tokenizer" / (name + ".gguf");
    const gguf::File file = gguf::File::open(gguf.string());
    const Tokenizer tok(Vocab::load(file));
    EXPECT_GT(run_cases(gguf, tok), 0u) << name;
    return tok.vocab().model();
}

TEST(VocabConformance, Gpt2FromSharedPeerData) {
    TESSEL_REQUIRE_SHARED_DIR();
    EXPECT_EQ(run_shared("ggml-vocab-gpt-2"), VocabModel::Bpe);
}

TEST(VocabConformance, SentencePieceFromSharedPeerData) {
    TESSEL_REQUIRE_SHARED_DIR();
    EXPECT_EQ(run_shared("ggml-vocab-llama-spm"), VocabModel::Spm);
    EXPECT_EQ(run_shared("ggml-vocab-phi-3"), VocabModel::Spm);
}

TEST(VocabConformance, VocabsFromPeerSdist) {
    TESSEL_REQUIRE_PEER_SDIST();
    const fs::path models = test::peer_sdist_dir() / "vendor" / "llama.cpp" / "models";
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(models)) {
        const fs::path& p = entry.path();
        const std::string name = p.filename().string();
        if (name.starts_with("ggml-vocab-") && p.extension() == ".gguf" && fs::exists(p.string() + ".inp") &&
            fs::exists(p.string() + ".out"))
            files.push_back(p);
    }
    std::sort(files.begin(), files.end());
    std::set<std::string> ran;
    for (const fs::path& p : files) {
        const gguf::File file = gguf::File::open(p.string());
        std::unique_ptr<Tokenizer> tok;
        try {
            tok = std::make_unique<Tokenizer>(Vocab::load(file));
        } catch (const Error& e) {
            ASSERT_EQ(e.code(), ErrorCode::Unsupported) << e.what();  // WordPiece, Unigram, other pre-tokenizers
            std::printf("[ NOT RUN  ] %s: %s\n", p.filename().c_str(), e.what());
            continue;
        }
        const size_t n = run_cases(p, *tok);
        const std::string how =
            tok->vocab().model() == VocabModel::Spm ? "SentencePiece" : "pre-tokenizer " + tok->vocab().pre();
        std::printf("[ RAN      ] %s: %zu cases (%s)\n", p.filename().c_str(), n, how.c_str());
        ran.insert(p.stem().string());
    }
    // The pre-tokenizers and models the issues ask for must have run (smollm shares starcoder's
    // regexes; llama-spm and phi-3 are SentencePiece, gemma-4 SentencePiece-style BPE).
    for (const char* required : {"ggml-vocab-gpt-2", "ggml-vocab-llama-bpe", "ggml-vocab-qwen2", "ggml-vocab-starcoder",
                                 "ggml-vocab-llama-spm", "ggml-vocab-phi-3", "ggml-vocab-gemma-4"})
        EXPECT_TRUE(ran.count(required)) << required << " did not run";
}

}  // namespace
}  // namespace tessel::vocab
