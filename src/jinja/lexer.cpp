#include "jinja/lexer.hpp"

#include <algorithm>
#include <array>

#include "jinja/value.hpp"

namespace tessel::jinja {
namespace {

bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

std::string normalise(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string src) : src_(std::move(src)) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < src_.size(); ++i)
            if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }

    std::vector<Piece> run() {
        std::vector<Piece> pieces;
        size_t pos = 0;
        while (pos < src_.size()) {
            const size_t at = next_tag(pos);
            std::string text = src_.substr(pos, (at == std::string::npos ? src_.size() : at) - pos);
            if (at == std::string::npos) {
                if (!text.empty()) pieces.push_back({Piece::Type::Text, std::move(text), {}, pos_of(pos)});
                break;
            }
            const char kind = src_[at + 1];  // '{', '%' or '#'
            const char sign = at + 2 < src_.size() && (src_[at + 2] == '-' || src_[at + 2] == '+') ? src_[at + 2] : 0;
            const bool line_starting = pos == 0 || src_[pos - 1] == '\n';
            if (sign == '-') {
                while (!text.empty() && ascii_space(text.back())) text.pop_back();
            } else if (sign != '+' && kind != '{') {  // lstrip_blocks
                const size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0
                if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
                    std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l_pos), text.end(), ascii_space))
                    text.resize(l_pos);
            }
            if (!text.empty()) pieces.push_back({Piece::Type::Text, std::move(text), {}, pos_of(pos)});
            const size_t body = at + 2 + (sign ? 1 : 0);
            if (kind == '#') {
                pos = comment_end(at, body);
            } else {
                Piece p{kind == '{' ? Piece::Type::Output : Piece::Type::Statement, {}, {}, pos_of(at)};
                pos = tag_tokens(at, body, kind == '%', p.tokens);
                pieces.push_back(std::move(p));
            }
        }
        return pieces;
    }

private:
    Pos pos_of(size_t offset) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
        return {static_cast<int>(it - line_starts_.begin()) + 1, static_cast<int>(offset - *it) + 1};
    }

    size_t next_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
            if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        return std::string::npos;
    }

    // After a block or comment end: "-" strips all whitespace, "+" nothing, else trim_blocks'
    // one newline.
    size_t after_block_end(size_t pos, char sign) const {
        if (sign == '-') {
            while (pos < src_.size() && ascii_space(src_[pos])) ++pos;
        } else if (sign != '+' && pos < src_.size() && src_[pos] == '\n') {
            ++pos;
        }
        return pos;
    }

    size_t comment_end(size_t at, size_t body) const {
        const size_t end = src_.find("#}", body);
        if (end == std::string::npos) fail(pos_of(at), "missing end of comment tag '#}'");
        const char sign = end > body && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
        return after_block_end(end + 2, sign);
    }

    size_t tag_tokens(size_t at, size_t pos, bool block, std::vector<Token>& tokens) const {
        int depth = 0;  // open brackets: an end marker inside them is not the tag's end
        for (;;) {
            while (pos < src_.size() && ascii_space(src_[pos])) ++pos;
            if (pos >= src_.size())
                fail(pos_of(at), std::string("missing end of tag '") + (block ? "%}" : "}}") + "'");
            const std::string_view rest(src_.data() + pos, src_.size() - pos);
            if (depth == 0) {
                if (block) {
                    for (const char* end : {"-%}", "+%}", "%}"})
                        if (rest.starts_with(end)) {
                            tokens.push_back({Token::Type::End, "", pos_of(pos)});
                            return after_block_end(pos + std::string_view(end).size(), end[0] == '%' ? 0 : end[0]);
                        }
                } else {
                    if (rest.starts_with("-}}")) {
                        tokens.push_back({Token::Type::End, "", pos_of(pos)});
                        return after_block_end(pos + 3, '-');
                    }
                    if (rest.starts_with("}}")) {
                        tokens.push_back({Token::Type::End, "", pos_of(pos)});
                        return pos + 2;
                    }
                }
            }
            pos = token(pos, tokens, depth);
        }
    }

    size_t token(size_t pos, std::vector<Token>& tokens, int& depth) const {
        const Pos where = pos_of(pos);
        const char c = src_[pos];
        if (name_start(c)) {
            size_t end = pos;
            while (end < src_.size() && (name_start(src_[end]) || digit(src_[end]))) ++end;
            tokens.push_back({Token::Type::Name, src_.substr(pos, end - pos), where});
            return end;
        }
        if (digit(c)) {
            size_t end = pos;
            while (end < src_.size() && (digit(src_[end]) || src_[end] == '_')) ++end;
            bool is_float = false;
            if (end + 1 < src_.size() && src_[end] == '.' && digit(src_[end + 1])) {
                is_float = true;
                for (++end; end < src_.size() && (digit(src_[end]) || src_[end] == '_');) ++end;
            }
            if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
                size_t e = end + 1;
                if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
                if (e < src_.size() && digit(src_[e])) {
                    is_float = true;
                    for (end = e; end < src_.size() && digit(src_[end]);) ++end;
                }
            }
            std::string digits = src_.substr(pos, end - pos);
            std::erase(digits, '_');
            tokens.push_back({is_float ? Token::Type::Float : Token::Type::Int, digits, where});
            return end;
        }
        if (c == '\'' || c == '"') return string_token(pos, tokens);
        static constexpr std::array<std::string_view, 25> kOps = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                                                  "/",  "%",  "~",  "(",  ")",  "[",  "]", "{", "}",
                                                                  ".",  ",",  ":",  "|",  "=",  "<",  ">"};
        const std::string_view rest(src_.data() + pos, src_.size() - pos);
        for (const std::string_view op : kOps)
            if (rest.starts_with(op)) {
                if (op == "(" || op == "[" || op == "{") ++depth;
                if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
                tokens.push_back({Token::Type::Op, std::string(op), where});
                return pos + op.size();
            }
        fail(where, std::string("unexpected character '") + c + "'");
    }

    // A quoted string with Python's escapes (jinja2 decodes them as unicode-escape); an unknown
    // escape keeps its backslash.
    size_t string_token(size_t pos, std::vector<Token>& tokens) const {
        const Pos where = pos_of(pos);
        const char quote = src_[pos];
        std::string value;
        size_t i = pos + 1;
        for (;; ++i) {
            if (i >= src_.size()) fail(where, "unterminated string");
            const char c = src_[i];
            if (c == quote) break;
            if (c != '\\' || i + 1 >= src_.size()) {
                value += c;
                continue;
            }
            const char e = src_[++i];
            switch (e) {
                case 'n': value += '\n'; break;
                case 't': value += '\t'; break;
                case 'r': value += '\r'; break;
                case '0': value += '\0'; break;
                case 'a': value += '\a'; break;
                case 'b': value += '\b'; break;
                case 'f': value += '\f'; break;
                case 'v': value += '\v'; break;
                case '\\': value += '\\'; break;
                case '\'': value += '\''; break;
                case '"': value += '"'; break;
                case '\n': break;  // line continuation
                case 'x':
                case 'u':
                case 'U': {
                    const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    if (i + n >= src_.size()) fail(where, "truncated \\" + std::string(1, e) + " escape in string");
                    const std::string hex = src_.substr(i + 1, n);
                    if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
                        fail(where, "bad \\" + std::string(1, e) + " escape in string");
                    value += utf8_encode(std::u32string(1, static_cast<char32_t>(std::stoul(hex, nullptr, 16))));
                    i += n;
                    break;
                }
                default:
                    value += '\\';
                    value += e;
            }
        }
        tokens.push_back({Token::Type::String, std::move(value), where});
        return i + 1;
    }

    std::string src_;
    std::vector<size_t> line_starts_;
};

}  // namespace

std::vector<Piece> lex(std::string_view source) { return Lexer(normalise(source)).run(); }

}  // namespace tessel::jinja
