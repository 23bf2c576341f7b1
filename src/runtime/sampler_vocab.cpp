// The Sampler constructor that takes a model, and the SamplerVocab of a model
// (include/tessel/sampling.hpp): the sample layer does not see models, the runtime does.
#include "tessel/engine.hpp"
#include "tessel/sampling.hpp"

namespace tessel {

SamplerVocab Sampler::vocab_for(const Model& model) {
    SamplerVocab v;
    const auto n = static_cast<int32_t>(model.info().n_vocab);
    v.pieces.reserve(static_cast<size_t>(n));
    for (int32_t id = 0; id < n; ++id) {
        v.pieces.push_back(model.token_to_piece(id, /*special=*/true));
        if (model.is_eog(id)) v.eog.push_back(id);
        if (!v.pieces.back().empty() && model.token_to_piece(id, /*special=*/false).empty()) v.control.push_back(id);
    }
    v.tokenize = [&model](std::string_view text) { return model.tokenize(text, false, false); };
    return v;
}

Sampler::Sampler(const SamplerParams& params, const Model& model) : Sampler(params, vocab_for(model)) {}

}  // namespace tessel
