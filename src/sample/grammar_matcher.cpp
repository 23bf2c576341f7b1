#include "sample/grammar_matcher.hpp"

#include <algorithm>
#include <utility>

namespace tessel::sample {

void StackSet::clear() {
    data_.clear();
    ends_.clear();
    hashes_.clear();
}

std::span<const uint32_t> StackSet::operator[](size_t i) const {
    const uint32_t begin = i == 0 ? 0 : ends_[i - 1];
    return {data_.data() + begin, ends_[i] - begin};
}

bool StackSet::add(std::span<const uint32_t> stack) {
    uint64_t hash = 0xcbf29ce484222325ull ^ stack.size();  // FNV-1a over the positions
    for (const uint32_t v : stack) hash = (hash ^ v) * 0x100000001b3ull;
    for (size_t i = 0; i < size(); ++i) {
        if (hashes_[i] != hash) continue;
        const auto s = (*this)[i];
        if (s.size() == stack.size() && std::equal(s.begin(), s.end(), stack.begin())) return false;
    }
    data_.insert(data_.end(), stack.begin(), stack.end());
    ends_.push_back(static_cast<uint32_t>(data_.size()));
    hashes_.push_back(hash);
    return true;
}

bool StackSet::has_empty() const {
    for (size_t i = 0; i < size(); ++i)
        if ((*this)[i].empty()) return true;
    return false;
}

ByteStep utf8_step(Utf8Partial& partial, uint8_t byte, uint32_t& cp) {
    if (partial.remaining == 0) {
        if (byte < 0x80) {
            cp = byte;
            return ByteStep::CodePoint;
        }
        if (byte >= 0xC2 && byte <= 0xDF) partial = {byte & 0x1Fu, 1, 0x80};
        else if ((byte & 0xF0) == 0xE0) partial = {byte & 0x0Fu, 2, 0x800};
        else if (byte >= 0xF0 && byte <= 0xF4) partial = {byte & 0x07u, 3, 0x10000};
        else return ByteStep::Invalid;
        return ByteStep::Pending;
    }
    if ((byte & 0xC0) != 0x80) return ByteStep::Invalid;
    partial.value = (partial.value << 6) | (byte & 0x3Fu);
    --partial.remaining;
    if (partial.lo() > partial.hi()) return ByteStep::Invalid;  // overlong or past U+10FFFF
    if (partial.min == 0x800 && partial.remaining == 1 && (partial.value >> 5) == 0x1B)
        return ByteStep::Invalid;  // ED A0..BF: a surrogate U+D800..U+DFFF
    if (partial.remaining > 0) return ByteStep::Pending;
    cp = partial.value;
    partial = {};
    return ByteStep::CodePoint;
}

GrammarWalker::GrammarWalker(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {}

// `stack` is restored before returning; rules are not left-recursive (the parser checks), so
// the recursion ends.
void GrammarWalker::expand(std::vector<uint32_t>& stack, StackSet& out) {
    if (stack.empty()) {
        out.add(stack);
        return;
    }
    const uint32_t pos = stack.back();
    const GrammarElement& el = grammar_->elements[pos];
    if (el.kind == GrammarElement::Kind::Chars) {
        out.add(stack);
        return;
    }
    if (!expanded_.add(stack)) return;  // its stacks are in `out` already
    stack.pop_back();
    if (el.kind == GrammarElement::Kind::End) {
        expand(stack, out);
    } else {
        const bool returns = grammar_->elements[pos + 1].kind != GrammarElement::Kind::End;
        if (returns) stack.push_back(pos + 1);
        for (const uint32_t alt : grammar_->rules[el.index].alternatives) {
            stack.push_back(alt);
            expand(stack, out);
            stack.pop_back();
        }
        if (returns) stack.pop_back();
    }
    stack.push_back(pos);
}

void GrammarWalker::start(StackSet& out) {
    out.clear();
    expanded_.clear();
    scratch_.clear();
    for (const uint32_t alt : grammar_->rules[grammar_->root].alternatives) {
        scratch_.assign(1, alt);
        expand(scratch_, out);
    }
}

void GrammarWalker::advance(const StackSet& in, uint32_t cp, StackSet& out) {
    out.clear();
    expanded_.clear();
    for (size_t i = 0; i < in.size(); ++i) {
        const auto s = in[i];
        if (s.empty()) continue;
        const GrammarElement& el = grammar_->elements[s.back()];
        if (!grammar_->charsets[el.index].contains(cp)) continue;
        scratch_.assign(s.begin(), s.end());
        scratch_.back() += 1;
        expand(scratch_, out);
    }
}

bool GrammarWalker::partial_possible(const StackSet& set, const Utf8Partial& partial) const {
    const uint32_t lo = partial.lo(), hi = partial.hi();
    for (size_t i = 0; i < set.size(); ++i) {
        const auto s = set[i];
        if (!s.empty() && grammar_->charsets[grammar_->elements[s.back()].index].intersects(lo, hi)) return true;
    }
    return false;
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : walker_(std::move(grammar)) { reset(); }

const StackSet* GrammarMatcher::run(std::string_view bytes, Utf8Partial& partial) {
    const StackSet* current = &stacks_;
    for (const char c : bytes) {
        uint32_t cp = 0;
        switch (utf8_step(partial, static_cast<uint8_t>(c), cp)) {
            case ByteStep::Invalid: return nullptr;
            case ByteStep::Pending:
                if (!walker_.partial_possible(*current, partial)) return nullptr;
                break;
            case ByteStep::CodePoint: {
                StackSet& out = current == &next_ ? spare_ : next_;
                walker_.advance(*current, cp, out);
                if (out.empty()) return nullptr;
                current = &out;
                break;
            }
        }
    }
    return current;
}

bool GrammarMatcher::check(std::string_view bytes) {
    Utf8Partial partial = partial_;
    return run(bytes, partial) != nullptr;
}

bool GrammarMatcher::accept(std::string_view bytes) {
    Utf8Partial partial = partial_;
    const StackSet* result = run(bytes, partial);
    if (result == nullptr) return false;
    if (result != &stacks_) std::swap(stacks_, result == &next_ ? next_ : spare_);
    partial_ = partial;
    return true;
}

bool GrammarMatcher::can_end() const { return partial_.remaining == 0 && stacks_.has_empty(); }

void GrammarMatcher::reset() {
    walker_.start(stacks_);
    partial_ = {};
}

}  // namespace tessel::sample
