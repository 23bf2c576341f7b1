// The grammar sampling stage: which tokens of a vocabulary may come next under a grammar.
//
// A token is allowed when its bytes continue the grammar from the current state (a token may
// cross several grammar elements and end inside a UTF-8 character); an end-of-generation token
// when the grammar can end here; a control token or one with no bytes never. Checking one token walks its
// bytes. Masking a whole candidate list walks a byte trie of every token text once, so a
// prefix shared by many tokens is matched once and a dead prefix prunes its whole subtree.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sample/candidates.hpp"
#include "sample/grammar_matcher.hpp"

namespace tessel::sample {

class GrammarStage {
public:
    /// `pieces[id]` are token id's bytes (n_vocab of them); `eog` the end-of-generation ids,
    /// `control` the control tokens (ids outside [0, n_vocab) are ignored).
    GrammarStage(std::shared_ptr<const Grammar> grammar, std::span<const std::string> pieces,
                 std::span<const int32_t> eog, std::span<const int32_t> control);

    /// True when `token` may come next (token in [0, n_vocab)).
    bool allows(int32_t token);
    /// Sets the logit of every candidate that may not come next to -inf.
    void mask(CandidateList& list);
    /// Advances over `token`. Throws tessel::Error (InvalidArgument) when it may not come next.
    void accept(int32_t token);
    /// Back to the state before any token.
    void reset();

private:
    struct Node {
        uint32_t first_child = 0;  // 0: none (the root, node 0, is nobody's child)
        uint32_t next_sibling = 0;
        uint32_t tokens_begin = 0;  // token_ids_[tokens_begin .. tokens_end) end at this node
        uint32_t tokens_end = 0;
        uint8_t byte = 0;
    };

    GrammarMatcher matcher_;
    std::vector<std::string> pieces_;
    enum Kind : uint8_t { Text, EndOfGeneration, Never };
    std::vector<uint8_t> kind_;  // per token
    std::vector<Node> nodes_;
    std::vector<int32_t> token_ids_;
    std::vector<StackSet> levels_;   // stack sets of the trie walk, one per depth
    std::vector<uint8_t> allowed_;   // per token, filled by mask()

    void build_trie();
    void walk(uint32_t node, const StackSet& set, Utf8Partial partial, size_t depth);
};

}  // namespace tessel::sample
