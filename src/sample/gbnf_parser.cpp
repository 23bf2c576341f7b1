#include "sample/gbnf_parser.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessel/errors.hpp"

namespace tessel::sample {
namespace {

using Symbol = GrammarElement;  // Chars or Rule while parsing
using Sequence = std::vector<Symbol>;

struct DraftRule {
    std::string name;
    std::vector<Sequence> alternatives;
    bool defined = false;
    size_t where = 0;  // source offset of the definition, or of the first use while undefined
};

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class Parser {
public:
    explicit Parser(std::string_view text) : src_(text) {}

    Grammar run() {
        skip_space(true);
        while (pos_ < src_.size()) {
            parse_rule();
            skip_space(true);
        }
        for (const DraftRule& r : rules_)
            if (!r.defined) fail_at(r.where, "undefined rule '" + r.name + "'");
        const auto root = ids_.find("root");
        if (root == ids_.end()) fail_at(0, "no rule named 'root' (the start rule)");
        check_left_recursion();
        return flatten(root->second);
    }

private:
    std::string_view src_;
    size_t pos_ = 0;
    std::vector<DraftRule> rules_;
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<CharSet> charsets_;
    size_t n_elements_ = 0;
    uint32_t depth_ = 0;  // groups open at pos_

    // "LINE:COLUMN" of a source offset, 1-based, columns in code points.
    std::string location(size_t offset) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < offset && i < src_.size(); ++i) {
            const auto c = static_cast<unsigned char>(src_[i]);
            if (c == '\n') {
                ++line;
                column = 1;
            } else if ((c & 0xC0) != 0x80) {
                ++column;
            }
        }
        return std::to_string(line) + ":" + std::to_string(column);
    }
    [[noreturn]] void fail_at(size_t offset, const std::string& what) const {
        throw Error(ErrorCode::InvalidArgument, "grammar:" + location(offset) + ": " + what);
    }
    [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

    char peek() const { return pos_ < src_.size() ? src_[pos_] : '\0'; }
    bool at_end() const { return pos_ >= src_.size(); }

    // Spaces, tabs and comments; newlines too when `newlines`.
    void skip_space(bool newlines) {
        while (!at_end()) {
            const char c = src_[pos_];
            if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && src_[pos_] != '\n') ++pos_;
            } else {
                return;
            }
        }
    }

    std::string parse_name(const char* expected) {
        const size_t start = pos_;
        while (!at_end() && is_name_char(src_[pos_])) ++pos_;
        if (pos_ == start) fail(std::string("expected ") + expected);
        return std::string(src_.substr(start, pos_ - start));
    }

    uint32_t rule_id(const std::string& name, size_t where) {
        const auto [it, added] = ids_.try_emplace(name, static_cast<uint32_t>(rules_.size()));
        if (added) rules_.push_back(DraftRule{name, {}, false, where});
        return it->second;
    }

    uint32_t new_rule(const std::string& parent, size_t where, std::vector<Sequence> alternatives) {
        const auto id = static_cast<uint32_t>(rules_.size());
        rules_.push_back(DraftRule{parent + "-" + std::to_string(id), std::move(alternatives), true, where});
        for (const Sequence& s : rules_.back().alternatives) count(s.size() + 1, where);
        return id;
    }

    void count(size_t n, size_t where) {
        n_elements_ += n;
        if (n_elements_ > kMaxGrammarElements)
            fail_at(where, "the grammar is too large: over " + std::to_string(kMaxGrammarElements) +
                               " elements once repetitions are expanded");
    }

    void parse_rule() {
        const size_t start = pos_;
        const std::string name = parse_name("a rule name");
        skip_space(false);
        if (src_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
        pos_ += 3;
        const uint32_t id = rule_id(name, start);  // before the body: its generated rules follow it
        if (rules_[id].defined) fail_at(start, "rule '" + name + "' is defined twice");
        rules_[id].defined = true;
        rules_[id].where = start;
        skip_space(true);
        std::vector<Sequence> alternatives = parse_alternatives(name, false);
        if (!at_end() && peek() != '\n' && peek() != '\r') fail("expected end of line after rule '" + name + "'");
        for (const Sequence& s : alternatives) count(s.size() + 1, start);
        rules_[id].alternatives = std::move(alternatives);
    }

    // At top level (not nested) a newline ends the rule unless the next line starts with '|'.
    std::vector<Sequence> parse_alternatives(const std::string& rule, bool nested) {
        std::vector<Sequence> alternatives;
        alternatives.push_back(parse_sequence(rule, nested));
        for (;;) {
            const size_t before = pos_;
            skip_space(true);
            if (peek() != '|') {
                pos_ = nested ? pos_ : before;
                return alternatives;
            }
            ++pos_;
            skip_space(true);
            alternatives.push_back(parse_sequence(rule, nested));
        }
    }

    Sequence parse_sequence(const std::string& rule, bool nested) {
        Sequence seq;
        for (;;) {
            skip_space(nested);
            const char c = peek();
            if (at_end() || c == '|' || c == ')' || c == '\n' || c == '\r') return seq;
            const size_t start = pos_;
            Sequence item = parse_primary(rule);
            apply_repetition(rule, start, item);
            seq.insert(seq.end(), item.begin(), item.end());
        }
    }

    Sequence parse_primary(const std::string& rule) {
        const char c = peek();
        if (c == '"') return parse_literal();
        if (c == '[') return {parse_class()};
        if (c == '.') {
            ++pos_;
            charsets_.push_back(CharSet{true, {}});
            return {chars_symbol()};
        }
        if (c == '(') {
            const size_t start = pos_++;
            if (++depth_ > kMaxGrammarNesting)
                fail_at(start, "groups nested deeper than " + std::to_string(kMaxGrammarNesting));
            skip_space(true);
            std::vector<Sequence> alternatives = parse_alternatives(rule, true);
            skip_space(true);
            if (peek() != ')') fail("expected ')' to close the group opened at " + location(start));
            ++pos_;
            --depth_;
            if (alternatives.size() == 1) return std::move(alternatives[0]);
            return {Symbol{Symbol::Kind::Rule, new_rule(rule, start, std::move(alternatives))}};
        }
        if (is_name_char(c)) {
            const size_t start = pos_;
            const std::string name = parse_name("a rule name");
            return {Symbol{Symbol::Kind::Rule, rule_id(name, start)}};
        }
        if (c == '*' || c == '+' || c == '?' || c == '{')
            fail(std::string("repetition '") + c + "' has nothing to repeat");
        fail("expected a literal, a character class, '.', '(', a rule name, '|' or the end of the line");
    }

    Symbol chars_symbol() const { return Symbol{Symbol::Kind::Chars, static_cast<uint32_t>(charsets_.size() - 1)}; }

    Symbol single_char(uint32_t cp) {
        charsets_.push_back(CharSet{false, {{cp, cp}}});
        return chars_symbol();
    }

    Sequence parse_literal() {
        const size_t start = pos_++;
        Sequence seq;
        for (;;) {
            if (at_end() || peek() == '\n' || peek() == '\r')
                fail_at(start, "unclosed literal: expected '\"' before the end of the line");
            if (peek() == '"') break;
            seq.push_back(single_char(parse_char()));
        }
        ++pos_;
        return seq;
    }

    Symbol parse_class() {
        const size_t start = pos_++;
        CharSet set;
        if (peek() == '^') {
            set.negated = true;
            ++pos_;
        }
        for (;;) {
            if (at_end() || peek() == '\n' || peek() == '\r')
                fail_at(start, "unclosed character class: expected ']' before the end of the line");
            if (peek() == ']') break;
            const uint32_t first = parse_char();
            uint32_t last = first;
            if (peek() == '-' && pos_ + 1 < src_.size() && src_[pos_ + 1] != ']') {
                ++pos_;
                if (at_end() || peek() == '\n') fail_at(start, "unclosed character class");
                const size_t at = pos_;
                last = parse_char();
                if (last < first) fail_at(at, "character range end is below its start");
            }
            set.ranges.emplace_back(first, last);
        }
        ++pos_;
        charsets_.push_back(std::move(set));
        return chars_symbol();
    }

    // One code point of a literal or class: an escape or a UTF-8 character.
    uint32_t parse_char() {
        const size_t start = pos_;
        const auto c = static_cast<unsigned char>(src_[pos_]);
        if (c == '\\') {
            if (pos_ + 1 >= src_.size()) fail("expected an escape after '\\'");
            const char e = src_[pos_ + 1];
            pos_ += 2;
            switch (e) {
                case 'n': return '\n';
                case 't': return '\t';
                case 'r': return '\r';
                case '\\': case '"': case '[': case ']': case '-': case '^': case '/': return static_cast<uint32_t>(e);
                case 'x': return parse_hex(2, start);
                case 'u': return parse_hex(4, start);
                case 'U': return parse_hex(8, start);
                default:
                    fail_at(start, std::string("unknown escape '\\") + e +
                                       "' (expected \\n \\t \\r \\\\ \\\" \\[ \\] \\- \\^ \\/ \\xHH \\uHHHH \\UHHHHHHHH)");
            }
        }
        int extra = 0;
        uint32_t cp = c;
        if (c < 0x80) {
            extra = 0;
        } else if ((c & 0xE0) == 0xC0) {
            extra = 1, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            extra = 2, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            extra = 3, cp = c & 0x07;
        } else {
            fail("invalid UTF-8 byte");
        }
        ++pos_;
        for (int i = 0; i < extra; ++i) {
            if (at_end() || (static_cast<unsigned char>(src_[pos_]) & 0xC0) != 0x80) fail_at(start, "invalid UTF-8");
            cp = (cp << 6) | (static_cast<unsigned char>(src_[pos_++]) & 0x3F);
        }
        return cp;
    }

    uint32_t parse_hex(int digits, size_t start) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            const char h = peek();
            int d = -1;
            if (h >= '0' && h <= '9') d = h - '0';
            else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
            if (d < 0) fail_at(start, "expected " + std::to_string(digits) + " hex digits in the escape");
            v = v * 16 + static_cast<uint32_t>(d);
            ++pos_;
        }
        if (v > 0x10FFFF) fail_at(start, "escape is past U+10FFFF");
        return v;
    }

    uint32_t parse_count() {
        skip_space(true);
        const size_t start = pos_;
        uint64_t v = 0;
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + static_cast<uint64_t>(peek() - '0');
            if (v > kMaxRepetition)
                fail_at(start, "repetition count is over " + std::to_string(kMaxRepetition));
            ++pos_;
        }
        if (pos_ == start) fail("bad repetition: expected a number");
        skip_space(true);
        return static_cast<uint32_t>(v);
    }

    // Turns `item` into one symbol (a generated rule when it has several) and applies a
    // following * + ? {m} {m,} {m,n}.
    void apply_repetition(const std::string& rule, size_t start, Sequence& item) {
        skip_space(false);
        const char c = peek();
        if (c != '*' && c != '+' && c != '?' && c != '{') return;
        const size_t at = pos_++;
        uint32_t min = 0, max = 0;
        bool unbounded = false;
        if (c == '*') {
            unbounded = true;
        } else if (c == '+') {
            min = 1, unbounded = true;
        } else if (c == '?') {
            max = 1;
        } else {
            min = max = parse_count();
            if (peek() == ',') {
                ++pos_;
                skip_space(true);
                if (peek() == '}') unbounded = true;
                else max = parse_count();
            }
            if (peek() != '}') fail("bad repetition: expected '}' to close the '{' at " + location(at));
            ++pos_;
            if (!unbounded && max < min) fail_at(at, "bad repetition: {m,n} needs m <= n");
        }
        if (item.empty()) {  // a repeated "" is still ""
            return;
        }
        const Symbol one = item.size() == 1 ? item[0] : Symbol{Symbol::Kind::Rule, new_rule(rule, start, {item})};
        item.assign(min, one);
        count(min, at);
        if (unbounded) {  // R ::= one R | ""
            const auto id = static_cast<uint32_t>(rules_.size());
            new_rule(rule, at, {});
            rules_[id].alternatives = {{one, Symbol{Symbol::Kind::Rule, id}}, {}};
            count(4, at);
            item.push_back(Symbol{Symbol::Kind::Rule, id});
            return;
        }
        // Up to max - min more: O1 ::= one | "", Ok ::= one O(k-1) | "".
        uint32_t tail = 0;
        for (uint32_t k = 1; k <= max - min; ++k) {
            Sequence first{one};
            if (k > 1) first.push_back(Symbol{Symbol::Kind::Rule, tail});
            tail = new_rule(rule, at, {std::move(first), {}});
        }
        if (max > min) item.push_back(Symbol{Symbol::Kind::Rule, tail});
    }

    // A rule reachable from itself through leading elements that can all match "" would make
    // top-down expansion loop; a long chain of them would make it recurse too deep.
    void check_left_recursion() const {
        std::vector<char> nullable(rules_.size(), 0);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < rules_.size(); ++r) {
                if (nullable[r]) continue;
                for (const Sequence& s : rules_[r].alternatives) {
                    bool all = true;
                    for (const Symbol& sym : s)
                        all = all && sym.kind == Symbol::Kind::Rule && nullable[sym.index];
                    if (all) {
                        nullable[r] = 1;
                        changed = true;
                        break;
                    }
                }
            }
        }
        // Depth-first search over "may start with" edges: 0 unvisited, 1 on the path, 2 done.
        std::vector<char> state(rules_.size(), 0);
        std::vector<uint32_t> chain(rules_.size(), 0);  // longest run of "may start with" edges
        std::vector<std::pair<uint32_t, size_t>> path;  // (rule, next edge index)
        std::vector<std::vector<uint32_t>> edges(rules_.size());
        for (size_t r = 0; r < rules_.size(); ++r)
            for (const Sequence& s : rules_[r].alternatives)
                for (const Symbol& sym : s) {
                    if (sym.kind != Symbol::Kind::Rule) break;
                    edges[r].push_back(sym.index);
                    if (!nullable[sym.index]) break;
                }
        for (uint32_t start = 0; start < rules_.size(); ++start) {
            if (state[start]) continue;
            path.emplace_back(start, 0);
            state[start] = 1;
            while (!path.empty()) {
                auto& [r, next] = path.back();
                if (next == edges[r].size()) {
                    // Every rule r may start with is done: its chain is one longer than theirs.
                    for (const uint32_t to : edges[r]) chain[r] = std::max(chain[r], chain[to] + 1);
                    if (chain[r] > kMaxLeftChain)
                        fail_at(rules_[r].where, "rule '" + rules_[r].name + "' starts with a chain of over " +
                                                     std::to_string(kMaxLeftChain) +
                                                     " rules (nested groups, or a long repetition of something that "
                                                     "can match \"\")");
                    state[r] = 2;
                    path.pop_back();
                    continue;
                }
                const uint32_t to = edges[r][next++];
                if (state[to] == 1) {
                    std::string cycle;
                    bool on = false;
                    for (const auto& step : path) {
                        on = on || step.first == to;
                        if (on) cycle += rules_[step.first].name + " -> ";
                    }
                    fail_at(rules_[to].where, "rule '" + rules_[to].name + "' is left-recursive (" + cycle +
                                                  rules_[to].name + "); rewrite it with repetition");
                }
                if (state[to] == 0) {
                    state[to] = 1;
                    path.emplace_back(to, 0);
                }
            }
        }
    }

    Grammar flatten(uint32_t root) {
        Grammar g;
        g.root = root;
        g.charsets = std::move(charsets_);
        g.elements.reserve(n_elements_);
        g.rules.reserve(rules_.size());
        for (DraftRule& r : rules_) {
            GrammarRule out{std::move(r.name), {}};
            for (const Sequence& s : r.alternatives) {
                out.alternatives.push_back(static_cast<uint32_t>(g.elements.size()));
                g.elements.insert(g.elements.end(), s.begin(), s.end());
                g.elements.push_back(GrammarElement{GrammarElement::Kind::End, 0});
            }
            g.rules.push_back(std::move(out));
        }
        return g;
    }
};

}  // namespace

Grammar parse_gbnf(std::string_view text) { return Parser(text).run(); }

}  // namespace tessel::sample
