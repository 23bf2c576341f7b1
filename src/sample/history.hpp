// The accepted tokens the history-based stages look at (penalties, DRY), oldest first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace tessel::sample {

/// Capacity that keeps every pushed token (SamplerParams' -1 windows).
inline constexpr size_t kWholeHistory = std::numeric_limits<size_t>::max();

/// The last `capacity` pushed tokens in push order (capacity 0 keeps nothing). Older tokens are
/// dropped in chunks, so a push is amortized O(1).
class TokenHistory {
public:
    explicit TokenHistory(size_t capacity) : capacity_(capacity) {}

    void push(int32_t token);
    void clear() { tokens_.clear(); }

    /// The last min(n, held) tokens, oldest first; valid until the next push or clear.
    std::span<const int32_t> last(size_t n) const;

private:
    size_t capacity_;
    std::vector<int32_t> tokens_;  // holds up to 2 * capacity_ tokens; the last capacity_ count
};

/// A SamplerParams window length (>= -1) as a capacity: -1 -> kWholeHistory.
inline size_t window_capacity(int32_t last_n) {
    return last_n < 0 ? kWholeHistory : static_cast<size_t>(last_n);
}

}  // namespace tessel::sample
