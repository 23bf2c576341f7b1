// `tessel run`'s grammar flags: a greedy constrained run on the default model is the arg-max
// over the tokens that keep the text a prefix of the grammar's strings (computed here from the
// logits with plain string prefixes, not tessel's matcher), and bad grammars, schemas and flag
// combinations exit 2 naming the flag and the position.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "support/smollm2.hpp"
#include "tessel/engine.hpp"

namespace tessel {
namespace {

using test::CliResult;
using test::run_tessel;

// Greedy decoding of `prompt` where a token may come next only when the text stays a prefix of
// one of `strings` (end of generation only once the text is one of them).
std::string constrained_argmax_text(const std::string& prompt, const std::vector<std::string>& strings) {
    const auto model = Model::load(test::smollm2_path().string());
    ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 1;
    Context ctx(model, cp);
    const std::vector<int32_t> tokens = model->tokenize(prompt, true, false);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < tokens.size(); ++i)
        batch.push_back({tokens[i], static_cast<int32_t>(i), 0, i + 1 == tokens.size()});
    ctx.decode(batch);
    std::string text;
    for (int step = 0; step < 32; ++step) {
        const auto logits = ctx.logits(0);
        int32_t best = -1;
        for (int32_t t = 0; t < static_cast<int32_t>(logits.size()); ++t) {
            bool ok = false;
            if (model->is_eog(t)) {
                for (const std::string& s : strings) ok = ok || s == text;
            } else if (const std::string piece = model->token_to_piece(t); !piece.empty() && !model->token_to_piece(t, true).empty()) {
                for (const std::string& s : strings) ok = ok || s.starts_with(text + piece);
            }
            if (ok && (best < 0 || logits[static_cast<size_t>(t)] > logits[static_cast<size_t>(best)])) best = t;
        }
        if (model->is_eog(best)) break;
        text += model->token_to_piece(best);
        const BatchToken next{best, static_cast<int32_t>(tokens.size()) + step, 0, true};
        ctx.decode({&next, 1});
    }
    return text;
}

CliResult run(std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "-m", test::smollm2_path().string(), "-p", "The capital of France is",
                                     "-n", "32", "--temp", "0", "-t", "1", "--no-chat"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_tessel(args);
}

TEST(CliGrammar, GreedyRunIsTheArgmaxOverAllowedTokens) {
    TESSEL_REQUIRE_SMOLLM2();
    // Strings the model would not write unprompted, so the grammar, not the model, decides.
    const std::vector<std::string> strings = {"Lyon, then Marseille", "a city: Nice", "42"};
    const std::string expected = constrained_argmax_text("The capital of France is", strings);
    const CliResult r = run({"--grammar", "root ::= \"Lyon, then Marseille\" | \"a city: \" [N] \"ice\" | [0-9]{2}"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, expected + "\n");
    // The same language from a file, and as a JSON schema (an enum of strings with quotes).
    const auto dir = std::filesystem::temp_directory_path() / ("tessel-grammar-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "g.gbnf") << "# three strings\nroot ::= \"Lyon, then Marseille\"\n  | \"a city: Nice\" | \"42\"\n";
    const CliResult f = run({"--grammar-file", (dir / "g.gbnf").string()});
    EXPECT_EQ(f.out, expected + "\n") << f.err;
    std::ofstream(dir / "s.json") << R"({"enum": ["Lyon, then Marseille", "a city: Nice", "42"]})";
    const CliResult j = run({"-jf", (dir / "s.json").string()});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_EQ(j.out, constrained_argmax_text("The capital of France is", {"\"Lyon, then Marseille\"", "\"a city: Nice\"", "42"}) + "\n");
    std::filesystem::remove_all(dir);
}

TEST(CliGrammar, BadGrammarsAndSchemasExit2NamingTheFlagAndPosition) {
    const auto expect_error = [](const std::vector<std::string>& args, const std::string& message) {
        const CliResult r = run_tessel(args);
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    };
    expect_error({"run", "-p", "x", "--grammar", "root ::= \"a\"\nitem ::= [0-9"},
                 "--grammar: grammar:2:10: unclosed character class: expected ']' before the end of the line");
    expect_error({"run", "-p", "x", "--grammar", "root ::= num\n"}, "--grammar: grammar:1:10: undefined rule 'num'");
    expect_error({"run", "-p", "x", "--grammar", "root ::= root \"x\" | \"y\""},
                 "--grammar: grammar:1:1: rule 'root' is left-recursive (root -> root)");
    expect_error({"run", "-p", "x", "-j", "{\"type\": \"object\", \"properties\": {\"a\": }}"},
                 "--json-schema: json schema: parse error at line 1, column 40");
    expect_error({"run", "-p", "x", "--json-schema", "{\"type\": \"string\", \"format\": \"email\"}"},
                 "--json-schema: json schema: keyword 'format' at '/format' is not supported");
    expect_error({"run", "-p", "x", "-jf", "/nonexistent/schema.json"}, "--json-schema-file: /nonexistent/schema.json: cannot read");
    expect_error({"run", "-p", "x", "--grammar-file", "/nonexistent/g.gbnf"}, "--grammar-file: /nonexistent/g.gbnf: cannot read");
    expect_error({"run", "-p", "x", "--grammar", "root ::= \"a\"", "-j", "{}"}, "--grammar excludes --json-schema");
    expect_error({"chat", "-j", "{}", "--grammar", "root ::= \"a\""}, "--grammar excludes --json-schema");
}

}  // namespace
}  // namespace tessel
