// The public C++ API from an outside project (installed headers, libtessel.so): the version is the
// installed one, a vocab-only load of MODEL tokenizes a text and detokenizes it back unchanged,
// and a missing file throws tessel::Error with the file named (the exception type crosses the
// shared library).   usage: cpp_api MODEL   (exit 0: passed, 1: a check failed)
#include <cstdio>
#include <string>
#include <vector>

#include "tessel/engine.hpp"
#include "tessel/errors.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: cpp_api MODEL\n");
        return 2;
    }
    int failures = 0;
    auto check = [&](bool ok, const std::string& what) {
        if (!ok) {
            std::fprintf(stderr, "cpp_api: check failed: %s\n", what.c_str());
            ++failures;
        }
    };
    check(std::string(tessel::version()) == TESSEL_TEST_VERSION,
          std::string("version ") + tessel::version() + " != " + TESSEL_TEST_VERSION);

    tessel::ModelParams params;
    params.vocab_only = true;
    auto model = tessel::Model::load(argv[1], params);
    const std::string text = "Hello, world! Layers as build targets.";
    std::vector<int32_t> ids = model->tokenize(text, /*add_special=*/false, /*parse_special=*/false);
    check(ids.size() > 4 && ids.size() < text.size(), "token count " + std::to_string(ids.size()));
    check(model->detokenize(ids) == text, "detokenize(tokenize(text)) == text");

    try {
        tessel::Model::load("/nonexistent/model.gguf", params);
        check(false, "loading a missing file throws");
    } catch (const tessel::Error& e) {
        check(std::string(e.what()).find("/nonexistent/model.gguf") != std::string::npos,
              std::string("the error names the file: ") + e.what());
    }
    std::printf("cpp_api: %s\n", failures == 0 ? "passed" : "FAILED");
    return failures == 0 ? 0 : 1;
}
