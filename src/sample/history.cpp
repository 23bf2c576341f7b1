#include "sample/history.hpp"

#include <algorithm>

namespace tessel::sample {

void TokenHistory::push(int32_t token) {
    if (capacity_ == 0) return;
    tokens_.push_back(token);
    if (capacity_ <= kWholeHistory / 2 && tokens_.size() >= 2 * capacity_)
        tokens_.erase(tokens_.begin(), tokens_.end() - static_cast<std::ptrdiff_t>(capacity_));
}

std::span<const int32_t> TokenHistory::last(size_t n) const {
    const size_t k = std::min({n, capacity_, tokens_.size()});
    return std::span<const int32_t>(tokens_).last(k);
}

}  // namespace tessel::sample
