// A context-free grammar over Unicode code points, in the flat form the matcher walks.
//
// Every rule is a list of alternatives; an alternative is a run of elements in
// Grammar::elements ended by an End element. Repetitions and groups of the GBNF text are
// lowered to generated rules by the parser (gbnf_parser.hpp), so an element is only a
// character set, a reference to a rule, or End.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessel::sample {

/// A set of code points: inclusive ranges, or everything outside them when negated
/// (GBNF's `.` is a negated empty set).
struct CharSet {
    bool negated = false;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  ///< inclusive [first, last]

    bool contains(uint32_t cp) const;
    /// True when some code point in [lo, hi] is in the set.
    bool intersects(uint32_t lo, uint32_t hi) const;
};

struct GrammarElement {
    enum class Kind : uint8_t { Chars, Rule, End };
    Kind kind;
    uint32_t index;  ///< Chars: Grammar::charsets; Rule: Grammar::rules; End: unused
};

struct GrammarRule {
    std::string name;                   ///< as written, or "<parent>-<n>" for a generated rule
    std::vector<uint32_t> alternatives;  ///< start positions in Grammar::elements
};

struct Grammar {
    std::vector<GrammarElement> elements;
    std::vector<GrammarRule> rules;
    std::vector<CharSet> charsets;
    uint32_t root = 0;  ///< the rule named "root"
};

}  // namespace tessel::sample
