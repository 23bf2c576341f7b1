// `tessel tokenize`: tokenize a prompt with a GGUF file's vocabulary (a vocab-only file is
// enough) and print the tokens, one `id -> 'piece'` per line, or only the ids.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "gguf/reader.hpp"
#include "vocab/detokenize.hpp"
#include "vocab/tokenizer.hpp"
#include "vocab/utf8.hpp"

namespace tessel::cli {
namespace {

/// A piece for the terminal: quotes, backslashes, control bytes and bytes that are not valid
/// UTF-8 (a character split across tokens) are escaped.
std::string escaped_piece(const std::string& piece) {
    std::string out;
    for (size_t i = 0; i < piece.size();) {
        const auto c = static_cast<unsigned char>(piece[i]);
        const size_t n = vocab::utf8_valid_length(std::string_view(piece).substr(i));
        if (c == '\'' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (n == 0 || c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out.append(piece, i, n);
            i += n;
            continue;
        }
        ++i;
    }
    return out;
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
    struct Options {
        std::string model;
        std::string prompt;
        bool ids = false;
        bool no_bos = false;
        bool special = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("tokenize", "Tokenize a prompt with a GGUF file's vocabulary");
    cmd->add_option("-m,--model", opts->model, "GGUF file with tokenizer.ggml.* metadata (vocab-only is enough)")->required();
    cmd->add_option("-p,--prompt", opts->prompt, "Text to tokenize")->required();
    cmd->add_flag("--ids", opts->ids, "Print only the ids, as [1, 2, 3]");
    cmd->add_flag("--no-bos", opts->no_bos, "Do not add BOS even when the vocabulary asks for it");
    cmd->add_flag("--special", opts->special, "Parse special (control) token texts in the prompt as those tokens");
    cmd->callback([opts] {
        const gguf::File file = gguf::File::open(opts->model);
        const vocab::Tokenizer tok(vocab::Vocab::load(file));
        vocab::TokenizeOptions to;
        to.add_bos = !opts->no_bos;
        to.parse_special = opts->special;
        const std::vector<vocab::TokenId> ids = tok.tokenize(opts->prompt, to);
        if (opts->ids) {
            std::string line = "[";
            for (size_t i = 0; i < ids.size(); ++i) {
                if (i) line += ", ";
                line += std::to_string(ids[i]);
            }
            std::printf("%s]\n", line.c_str());
            return;
        }
        for (const vocab::TokenId id : ids)
            std::printf("%6d -> '%s'\n", id, escaped_piece(vocab::token_to_piece(tok.vocab(), id, true)).c_str());
    });
}

}  // namespace tessel::cli
