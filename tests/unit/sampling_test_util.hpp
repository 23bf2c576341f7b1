// Helpers of the sampling-stage tests: a candidate list from logits, and the ids it holds.
#pragma once

#include <cstdint>
#include <vector>

#include "sample/candidates.hpp"

namespace tessel::sample::test {

/// (i, logits[i]) for every i, in id order (CandidateList::assign).
inline CandidateList make_list(const std::vector<float>& logits) {
    CandidateList list;
    list.assign(logits);
    return list;
}

/// The ids of the list's items, in item order.
inline std::vector<int32_t> ids(const CandidateList& list) {
    std::vector<int32_t> out;
    for (const Candidate& c : list.items) out.push_back(c.id);
    return out;
}

}  // namespace tessel::sample::test
