// Normalized mean squared error, the closeness measure of tessel's numeric tests (as in
// test-ops): sum((got - want)^2) / sum(want^2), accumulated in double.
#pragma once

#include <cstddef>
#include <vector>

namespace tessel::test {

/// NMSE of got.size() values of `got` against `want` (which must have at least as many).
template <typename Want>
double nmse(const std::vector<float>& got, const Want* want) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double w = static_cast<double>(want[i]);
        num += (got[i] - w) * (got[i] - w);
        den += w * w;
    }
    return num / den;
}

/// NMSE of `got` against `want` (same length).
inline double nmse(const std::vector<float>& got, const std::vector<float>& want) { return nmse(got, want.data()); }

}  // namespace tessel::test
