// Matching text against a Grammar (grammar.hpp), one code point at a time.
//
// The state is a set of pushdown stacks. A stack holds positions in Grammar::elements: the top
// (back) is the character set the next code point must match, the ones below are where to
// resume once the rule above them ends. Stacks are kept expanded: a rule reference on top is
// replaced by each of its alternatives, an End pops, so every top is a character set; an
// empty stack means the grammar has matched completely. A reference in tail position pushes no
// return position, so right recursion (x ::= "a" x | "") keeps stacks short. Bytes of a UTF-8
// character split across tokens are held as a partial code point until the character completes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "sample/grammar.hpp"

namespace tessel::sample {

/// A set of stacks stored back to back (no allocation once warm).
class StackSet {
public:
    void clear();
    bool empty() const { return ends_.empty(); }
    size_t size() const { return ends_.size(); }
    std::span<const uint32_t> operator[](size_t i) const;
    /// Adds `stack` unless the set holds it already; returns whether it was added.
    bool add(std::span<const uint32_t> stack);
    /// True when some stack is empty (the grammar may end here).
    bool has_empty() const;

private:
    std::vector<uint32_t> data_;
    std::vector<uint32_t> ends_;  // stack i is data_[ends_[i-1] .. ends_[i])
    std::vector<uint64_t> hashes_;  // of each stack, to compare only likely equal ones
};

/// A UTF-8 character whose first bytes have been seen: `value` holds their payload bits,
/// `remaining` the continuation bytes still due (0: none pending), `min` the smallest code point
/// its length may encode (shorter forms are overlong, hence invalid).
struct Utf8Partial {
    uint32_t value = 0;
    uint8_t remaining = 0;
    uint32_t min = 0;

    /// The code points the character can still become: [lo, hi], empty when lo > hi.
    uint32_t lo() const { return std::max(value << (6u * remaining), min); }
    uint32_t hi() const { return std::min((value << (6u * remaining)) | ((1u << (6u * remaining)) - 1), 0x10FFFFu); }
};

/// Result of feeding one byte: a code point completed, more bytes needed, or invalid UTF-8.
enum class ByteStep { CodePoint, Pending, Invalid };

/// Feeds `byte` to `partial`; on CodePoint, `cp` is the completed code point and `partial` is
/// clear. Invalid: a stray continuation byte, a bad lead byte, an overlong form, a surrogate or a
/// code point past U+10FFFF (RFC 3629), so no byte token can spell ASCII in disguise.
ByteStep utf8_step(Utf8Partial& partial, uint8_t byte, uint32_t& cp);

/// Pure functions of the grammar: stack expansion and advancing over code points.
class GrammarWalker {
public:
    explicit GrammarWalker(std::shared_ptr<const Grammar> grammar);

    /// The expanded stacks before any text.
    void start(StackSet& out);
    /// Stacks of `in` whose top accepts `cp`, advanced past it and expanded; out is cleared first.
    void advance(const StackSet& in, uint32_t cp, StackSet& out);
    /// True when some stack of `set` could take a code point that starts with `partial`'s bytes.
    bool partial_possible(const StackSet& set, const Utf8Partial& partial) const;

    const Grammar& grammar() const { return *grammar_; }

private:
    std::shared_ptr<const Grammar> grammar_;
    std::vector<uint32_t> scratch_;
    // Stacks expanded since start() or advance() began: a stack reached again (after "" matched
    // along two paths) is not expanded twice, so ambiguous grammars cost no more than their
    // distinct stacks (without it, ("" | "" | "y"){600} took 2^600 steps).
    StackSet expanded_;

    void expand(std::vector<uint32_t>& stack, StackSet& out);
};

/// The grammar's state over accepted text.
class GrammarMatcher {
public:
    explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

    /// Advances over `bytes` (any split of UTF-8 text) and returns true, or returns false and
    /// leaves the state unchanged when they cannot continue the grammar.
    bool accept(std::string_view bytes);
    /// True when accept(bytes) would succeed; the state does not change.
    bool check(std::string_view bytes);
    /// True when the text so far is a complete match (no partial character pending).
    bool can_end() const;
    /// Back to the state before any text.
    void reset();

    const StackSet& stacks() const { return stacks_; }
    const Utf8Partial& partial() const { return partial_; }
    GrammarWalker& walker() { return walker_; }

private:
    GrammarWalker walker_;
    StackSet stacks_;
    Utf8Partial partial_;
    StackSet next_, spare_;  // scratch for run()

    // The stack set after `bytes` (stacks_ or a scratch set), advancing `partial`; nullptr
    // when the bytes cannot continue the grammar.
    const StackSet* run(std::string_view bytes, Utf8Partial& partial);
};

}  // namespace tessel::sample
