#include "sample/grammar.hpp"

namespace tessel::sample {

bool CharSet::contains(uint32_t cp) const {
    bool in = false;
    for (const auto& [first, last] : ranges) in = in || (cp >= first && cp <= last);
    return in != negated;
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
    if (!negated) {
        for (const auto& [first, last] : ranges)
            if (first <= hi && last >= lo) return true;
        return false;
    }
    // Some point of [lo, hi] is outside every range: walk up from lo past covering ranges.
    uint32_t cp = lo;
    for (bool moved = true; moved && cp <= hi;) {
        moved = false;
        for (const auto& [first, last] : ranges)
            if (cp >= first && cp <= last) {
                if (last >= hi) return false;
                cp = last + 1;
                moved = true;
            }
    }
    return cp <= hi;
}

}  // namespace tessel::sample
