// The candidate list the sampling stages work on: (token id, logit) pairs, filtered in place.
//
// Order, where a stage needs one: descending logit, lower id first on equal logits (a total
// order, so std::sort gives the same result in every standard library). See
// include/tessel/sampling.hpp for the chain that uses these.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessel::sample {

struct Candidate {
    int32_t id;
    float logit;
};

/// True when a comes before b in candidate order.
inline bool candidate_before(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

/// Candidates plus whether they are already in candidate order.
struct CandidateList {
    std::vector<Candidate> items;
    bool sorted = false;

    /// Replaces the contents with (i, logits[i]) for every i. Throws tessel::Error
    /// (InvalidArgument) when a logit is NaN or +inf, or when every logit is -inf.
    void assign(std::span<const float> logits);

    /// Throws tessel::Error (InvalidArgument) "sampler: every logit is -inf<when> (no token can
    /// be sampled)" when no item has a finite logit.
    void require_finite(const char* when) const;

    /// Puts the items in candidate order (no-op when already sorted).
    void sort();
};

/// Index in `list.items` of the first candidate in candidate order: the largest logit, the
/// lowest id among equal maxima. The list must not be empty.
size_t argmax(const CandidateList& list);

/// The item of token `id`, or nullptr when the list does not hold it: O(1) where the list is still
/// in id order (as assign leaves it), else a scan.
Candidate* find_id(CandidateList& list, int32_t id);

/// Unnormalized softmax weights exp(l - l_max) in double, one per item, in item order.
/// Returns their sum. `weights` is resized to the list size. The list must not be empty.
double softmax_weights(const CandidateList& list, std::vector<double>& weights);

/// l = l / temp for every item; temp > 0 (order is kept).
void apply_temperature(CandidateList& list, float temp);

}  // namespace tessel::sample
