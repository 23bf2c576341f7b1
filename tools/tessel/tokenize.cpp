// `tessel tokenize`: tokenize a prompt with a GGUF file's vocabulary (a vocab-only file is
// enough) and print the tokens, one `id -> 'piece'` per line, or only the ids.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "tessel/engine.hpp"

namespace tessel::cli {
namespace {

/// Length in bytes (1..4) of the valid UTF-8 sequence at the start of `s` (RFC 3629: shortest
/// form, no surrogates, nothing above U+10FFFF), or 0 when `s` is empty or starts with none.
size_t utf8_valid_length(std::string_view s) {
    if (s.empty()) return 0;
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char c = byte(0);
    if (c < 0x80) return 1;
    size_t n = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07u;
    else return 0;
    if (s.size() < n) return 0;
    for (size_t i = 1; i < n; ++i) {
        if ((byte(i) & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (byte(i) & 0x3Fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

/// A piece for the terminal: quotes, backslashes, control bytes and bytes that are not valid
/// UTF-8 (a character split across tokens) are escaped.
std::string escaped_piece(const std::string& piece) {
    std::string out;
    for (size_t i = 0; i < piece.size();) {
        const auto c = static_cast<unsigned char>(piece[i]);
        const size_t n = utf8_valid_length(std::string_view(piece).substr(i));
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
        bool parse_special = true;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("tokenize", "Tokenize a prompt with a GGUF file's vocabulary");
    cmd->add_option("-m,--model", opts->model, "GGUF file with tokenizer.ggml.* metadata (vocab-only is enough)")->required();
    cmd->add_option("-p,--prompt", opts->prompt, "Text to tokenize")->required();
    cmd->add_flag("--ids", opts->ids, "Print only the ids, as [1, 2, 3]");
    cmd->add_flag("--no-bos", opts->no_bos, "Do not add BOS even when the vocabulary asks for it");
    cmd->add_flag_callback("--no-parse-special", [opts] { opts->parse_special = false; },
                           "Read special-token text (e.g. <|im_end|>) as plain text; by default it becomes those tokens, as llama-tokenize");
    cmd->callback([opts] {
        ModelParams params;
        params.vocab_only = true;
        const auto model = Model::load(opts->model, params);
        // BOS and EOS as the vocabulary asks, then (--no-bos) the BOS taken off again: EOS stays.
        std::vector<int32_t> ids = model->tokenize(opts->prompt, true, opts->parse_special);
        if (opts->no_bos && model->adds_bos() && !ids.empty() && ids.front() == model->bos()) ids.erase(ids.begin());
        if (opts->ids) {
            std::string line = "[";
            for (size_t i = 0; i < ids.size(); ++i) {
                if (i) line += ", ";
                line += std::to_string(ids[i]);
            }
            std::printf("%s]\n", line.c_str());
            return;
        }
        for (const int32_t id : ids) std::printf("%6d -> '%s'\n", id, escaped_piece(model->token_to_piece(id, true)).c_str());
    });
}

}  // namespace tessel::cli
