#include "sample/grammar_stage.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "tessel/errors.hpp"

namespace tessel::sample {

GrammarStage::GrammarStage(std::shared_ptr<const Grammar> grammar, std::span<const std::string> pieces,
                           std::span<const int32_t> eog, std::span<const int32_t> control)
    : matcher_(std::move(grammar)), pieces_(pieces.begin(), pieces.end()), kind_(pieces.size(), Text),
      allowed_(pieces.size(), 0) {
    for (size_t id = 0; id < pieces_.size(); ++id)
        if (pieces_[id].empty()) kind_[id] = Never;
    const auto mark = [&](std::span<const int32_t> ids, Kind kind) {
        for (const int32_t id : ids)
            if (id >= 0 && static_cast<size_t>(id) < kind_.size()) kind_[static_cast<size_t>(id)] = kind;
    };
    mark(control, Never);
    mark(eog, EndOfGeneration);
    build_trie();
}

// Token texts in byte order: a text shares its path with the previous one up to their common
// prefix, so each new node is its parent's last child.
void GrammarStage::build_trie() {
    std::vector<int32_t> order;
    for (size_t id = 0; id < pieces_.size(); ++id)
        if (kind_[id] == Text) order.push_back(static_cast<int32_t>(id));
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return pieces_[static_cast<size_t>(a)] < pieces_[static_cast<size_t>(b)];
    });
    nodes_.assign(1, Node{});
    std::vector<uint32_t> last_child(1, 0);
    std::vector<uint32_t> path(1, 0);
    const std::string* previous = nullptr;
    size_t longest = 0;
    for (const int32_t id : order) {
        const std::string& text = pieces_[static_cast<size_t>(id)];
        size_t common = 0;
        if (previous != nullptr)
            while (common < previous->size() && common < text.size() && (*previous)[common] == text[common]) ++common;
        path.resize(common + 1);
        for (size_t i = common; i < text.size(); ++i) {
            const auto node = static_cast<uint32_t>(nodes_.size());
            nodes_.push_back(Node{0, 0, 0, 0, static_cast<uint8_t>(text[i])});
            last_child.push_back(0);
            const uint32_t parent = path.back();
            if (last_child[parent] == 0) nodes_[parent].first_child = node;
            else nodes_[last_child[parent]].next_sibling = node;
            last_child[parent] = node;
            path.push_back(node);
        }
        Node& end = nodes_[path.back()];
        if (end.tokens_begin == end.tokens_end) end.tokens_begin = static_cast<uint32_t>(token_ids_.size());
        token_ids_.push_back(id);
        end.tokens_end = static_cast<uint32_t>(token_ids_.size());
        previous = &text;
        longest = std::max(longest, text.size());
    }
    levels_.resize(longest + 1);
}

bool GrammarStage::allows(int32_t token) {
    const auto id = static_cast<size_t>(token);
    if (kind_[id] == EndOfGeneration) return matcher_.can_end();
    return kind_[id] == Text && matcher_.check(pieces_[id]);
}

void GrammarStage::walk(uint32_t node, const StackSet& set, Utf8Partial partial, size_t depth) {
    GrammarWalker& walker = matcher_.walker();
    for (uint32_t child = nodes_[node].first_child; child != 0; child = nodes_[child].next_sibling) {
        const Node& n = nodes_[child];
        Utf8Partial p = partial;
        uint32_t cp = 0;
        const StackSet* next = &set;
        switch (utf8_step(p, n.byte, cp)) {
            case ByteStep::Invalid: continue;
            case ByteStep::Pending:
                if (!walker.partial_possible(set, p)) continue;
                break;
            case ByteStep::CodePoint:
                walker.advance(set, cp, levels_[depth]);
                if (levels_[depth].empty()) continue;
                next = &levels_[depth];
                break;
        }
        for (uint32_t t = n.tokens_begin; t < n.tokens_end; ++t) allowed_[static_cast<size_t>(token_ids_[t])] = 1;
        if (n.first_child != 0) walk(child, *next, p, depth + 1);
    }
}

void GrammarStage::mask(CandidateList& list) {
    std::fill(allowed_.begin(), allowed_.end(), 0);
    walk(0, matcher_.stacks(), matcher_.partial(), 0);
    const bool can_end = matcher_.can_end();
    for (Candidate& c : list.items) {
        const auto id = static_cast<size_t>(c.id);
        if (kind_[id] == EndOfGeneration ? !can_end : !allowed_[id]) c.logit = -std::numeric_limits<float>::infinity();
    }
}

void GrammarStage::accept(int32_t token) {
    const auto id = static_cast<size_t>(token);
    const bool ok = kind_[id] == EndOfGeneration ? matcher_.can_end() : kind_[id] == Text && matcher_.accept(pieces_[id]);
    if (!ok)
        throw Error(ErrorCode::InvalidArgument,
                    "sampler: token " + std::to_string(token) + " cannot continue the grammar here");
}

void GrammarStage::reset() { matcher_.reset(); }

}  // namespace tessel::sample
