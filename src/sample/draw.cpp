#include "sample/draw.hpp"

namespace tessel::sample {

double uniform01(std::mt19937& rng) {
    return static_cast<double>(rng()) * 0x1p-32;
}

size_t pick_weighted(std::span<const double> weights, double total, double u) {
    const double target = u * total;
    double running = 0.0;
    size_t last_positive = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
        running += weights[i];
        if (weights[i] > 0.0) last_positive = i;
        if (running > target) return i;
    }
    return last_positive;
}

}  // namespace tessel::sample
