// The `pattern` keyword: a regular-expression subset -> GBNF over JSON string contents.
// Characters JSON must escape come out escaped: `"` as \", `\` as \\, \n \t \r \f as
// their escapes; a negated class or `.` never produces them.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/utf8_encode.hpp"
#include "sample/json_schema.hpp"
#include "tessel/errors.hpp"

namespace tessel::sample {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// Code points a negated class or `.` must not produce raw in a JSON string.
const Ranges kJsonRaw = {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}};

std::string class_char(uint32_t cp) {
    char buf[16];
    if (cp <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    else std::snprintf(buf, sizeof buf, "\\U%08X", cp);
    return buf;
}

std::string class_text(const Ranges& ranges, bool negated) {
    std::string out = negated ? "[^" : "[";
    for (const auto& [first, last] : ranges)
        out += first == last ? class_char(first) : class_char(first) + "-" + class_char(last);
    return out + "]";
}

// JSON text for one code point that JSON escapes, or "" when it needs none.
std::string json_escape(uint32_t cp) {
    switch (cp) {
        case '"': return "\\\"";
        case '\\': return "\\\\";
        case '\n': return "\\n";
        case '\t': return "\\t";
        case '\r': return "\\r";
        case '\f': return "\\f";
        case '\b': return "\\b";
        default: break;
    }
    if (cp < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        return buf;
    }
    return "";
}

std::string utf8(uint32_t cp) {
    std::string out;
    utf8_append(out, cp);
    return out;
}

// A positive set of code points as GBNF: raw ones in a class, escaped ones as literals.
std::string positive_set(const Ranges& ranges) {
    Ranges raw;
    std::vector<std::string> escaped;
    for (auto [first, last] : ranges) {
        for (uint32_t cp = first; cp <= last && cp < 0x20; ++cp) escaped.push_back(json_escape(cp));
        first = std::max<uint32_t>(first, 0x20);
        for (const uint32_t special : {uint32_t{'"'}, uint32_t{'\\'}}) {
            if (first > last || special < first || special > last) continue;
            escaped.push_back(json_escape(special));
            if (special > first) raw.emplace_back(first, special - 1);
            first = special + 1;
        }
        if (first <= last) raw.emplace_back(first, last);
    }
    std::string out;
    if (!raw.empty()) out = class_text(raw, false);
    for (const std::string& e : escaped) out += (out.empty() ? "" : " | ") + gbnf_literal(e);
    return escaped.empty() ? out : "(" + out + ")";
}

std::string set_text(const Ranges& ranges, bool negated) {
    if (!negated) return positive_set(ranges);
    Ranges all = ranges;
    all.insert(all.end(), kJsonRaw.begin(), kJsonRaw.end());
    return class_text(all, true);
}

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}};

class PatternParser {
public:
    PatternParser(std::string_view pattern, const std::string& pointer) : p_(pattern), pointer_(pointer) {}

    std::string run() {
        if (!p_.empty() && p_.front() == '^') p_.remove_prefix(1);
        if (!p_.empty() && p_.back() == '$' && (p_.size() < 2 || p_[p_.size() - 2] != '\\')) p_.remove_suffix(1);
        std::string out = alternation();
        if (i_ < p_.size()) fail("unbalanced ')'");
        return out;
    }

private:
    std::string_view p_;
    std::string pointer_;
    size_t i_ = 0;
    static constexpr int kMaxDepth = 100;  // groups inside groups (bounds the recursion)
    int depth_ = 0;

    [[noreturn]] void unsupported(const std::string& what) const {
        throw Error(ErrorCode::Unsupported, "json schema: pattern " + what + " (at offset " + std::to_string(i_) +
                                                " of '" + pointer_ + "') is not supported");
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(ErrorCode::InvalidArgument,
                    "json schema: '" + pointer_ + "' offset " + std::to_string(i_) + ": " + what);
    }

    bool more() const { return i_ < p_.size(); }

    std::string alternation() {
        std::vector<std::string> options{sequence()};
        while (more() && p_[i_] == '|') {
            ++i_;
            options.push_back(sequence());
        }
        if (options.size() == 1) return options[0];
        std::string out = "(";
        for (size_t k = 0; k < options.size(); ++k) out += (k ? " | " : "") + options[k];
        return out + ")";
    }

    std::string sequence() {
        std::string out;
        while (more() && p_[i_] != '|' && p_[i_] != ')') {
            std::string a = quantified(atom());
            out += (out.empty() ? "" : " ") + a;
        }
        return out.empty() ? "\"\"" : out;
    }

    uint32_t number() {
        const size_t start = i_;
        uint32_t v = 0;
        while (more() && p_[i_] >= '0' && p_[i_] <= '9' && v < 1000000) v = v * 10 + static_cast<uint32_t>(p_[i_++] - '0');
        if (i_ == start) fail("expected a number in '{}'");
        return v;
    }

    std::string quantified(const std::string& a) {
        if (!more()) return a;
        std::string q;
        const char c = p_[i_];
        if (c == '*' || c == '+' || c == '?') {
            q = std::string(1, c);
            ++i_;
        } else if (c == '{') {
            ++i_;
            const uint32_t m = number();
            q = std::string("{") + std::to_string(m);
            if (more() && p_[i_] == ',') {
                ++i_;
                q += ",";
                if (more() && p_[i_] != '}') q += std::to_string(number());
            }
            if (!more() || p_[i_] != '}') fail("expected '}'");
            ++i_;
            q += "}";
        } else {
            return a;
        }
        if (more() && p_[i_] == '?') ++i_;  // lazy: the same set of strings
        if (more() && p_[i_] == '+') unsupported("possessive quantifier");
        return "(" + a + ")" + q;
    }

    uint32_t code_point() {
        const auto c = static_cast<unsigned char>(p_[i_]);
        const int extra = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : 3;
        uint32_t cp = extra == 0 ? c : extra == 1 ? (c & 0x1Fu) : extra == 2 ? (c & 0x0Fu) : (c & 0x07u);
        ++i_;
        for (int k = 0; k < extra; ++k) {
            if (!more()) fail("invalid UTF-8");
            cp = (cp << 6) | (static_cast<unsigned char>(p_[i_++]) & 0x3Fu);
        }
        return cp;
    }

    // After a backslash: a class escape (fills `set`, returns true) or one code point.
    bool escape(Ranges& set, bool& negated, uint32_t& cp) {
        if (!more()) fail("pattern ends with '\\'");
        const char e = p_[i_++];
        switch (e) {
            case 'd': set = kDigit, negated = false; return true;
            case 'w': set = kWord, negated = false; return true;
            case 's': set = kSpace, negated = false; return true;
            case 'D': set = kDigit, negated = true; return true;
            case 'W': set = kWord, negated = true; return true;
            case 'S': set = kSpace, negated = true; return true;
            case 'n': cp = '\n'; return false;
            case 't': cp = '\t'; return false;
            case 'r': cp = '\r'; return false;
            case 'f': cp = '\f'; return false;
            case 'v': cp = '\v'; return false;
            default: break;
        }
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
            unsupported(std::string("escape '\\") + e + "'");
        --i_;
        cp = code_point();
        return false;
    }

    std::string literal(uint32_t cp) {
        const std::string e = json_escape(cp);
        return gbnf_literal(e.empty() ? utf8(cp) : e);
    }

    std::string atom() {
        const char c = p_[i_];
        if (c == '(') {
            if (++depth_ > kMaxDepth) unsupported("groups nested deeper than " + std::to_string(kMaxDepth));
            ++i_;
            if (more() && p_[i_] == '?') {
                if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') i_ += 2;
                else unsupported("group '(?'");
            }
            std::string inner = alternation();
            if (!more() || p_[i_] != ')') fail("expected ')'");
            ++i_;
            --depth_;
            return "(" + inner + ")";
        }
        if (c == '[') return char_class();
        if (c == '.') {
            ++i_;
            return set_text({{'\n', '\n'}}, true);
        }
        if (c == '*' || c == '+' || c == '?' || c == '{') fail(std::string("'") + c + "' has nothing to repeat");
        if (c == '^' || c == '$') unsupported(std::string("anchor '") + c + "' inside the pattern");
        if (c == '\\') {
            ++i_;
            Ranges set;
            bool negated = false;
            uint32_t cp = 0;
            return escape(set, negated, cp) ? set_text(set, negated) : literal(cp);
        }
        return literal(code_point());
    }

    std::string char_class() {
        ++i_;
        bool negated = false;
        if (more() && p_[i_] == '^') {
            negated = true;
            ++i_;
        }
        Ranges set;
        bool first_item = true;
        for (;;) {
            if (!more()) fail("unclosed '['");
            if (p_[i_] == ']' && !first_item) break;
            first_item = false;
            uint32_t lo = 0;
            if (p_[i_] == '\\') {
                ++i_;
                Ranges sub;
                bool sub_negated = false;
                if (escape(sub, sub_negated, lo)) {
                    if (sub_negated) unsupported("negated class escape inside '[...]'");
                    set.insert(set.end(), sub.begin(), sub.end());
                    continue;
                }
            } else {
                lo = code_point();
            }
            uint32_t hi = lo;
            if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
                ++i_;
                if (p_[i_] == '\\') {
                    ++i_;
                    Ranges sub;
                    bool sub_negated = false;
                    if (escape(sub, sub_negated, hi)) fail("a class escape cannot end a range");
                } else {
                    hi = code_point();
                }
                if (hi < lo) fail("range end below its start");
            }
            set.emplace_back(lo, hi);
        }
        ++i_;
        return set_text(set, negated);
    }
};

}  // namespace

std::string pattern_to_gbnf(std::string_view pattern, const std::string& pointer) {
    return PatternParser(pattern, pointer).run();
}

}  // namespace tessel::sample
