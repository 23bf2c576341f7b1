// The C API (include/tessel.h): the sampler chain.
#include <iterator>
#include <string>
#include <vector>

#include "runtime/c_api.hpp"

using namespace tessel;
using capi::guard;
using capi::require;

namespace {

// SamplerParams' default breakers and order as C arrays (tessel_sampler_default_params points
// at them).
const char* const kDefaultBreakers[] = {"\n", ":", "\"", "*"};
const int32_t kDefaultOrder[] = {TESSEL_SAMPLER_PENALTIES, TESSEL_SAMPLER_DRY,      TESSEL_SAMPLER_TOP_N_SIGMA,
                                 TESSEL_SAMPLER_TOP_K,     TESSEL_SAMPLER_TYPICAL_P, TESSEL_SAMPLER_TOP_P,
                                 TESSEL_SAMPLER_MIN_P,     TESSEL_SAMPLER_XTC,      TESSEL_SAMPLER_TEMPERATURE};
static_assert(static_cast<int>(SamplerStage::Temperature) == TESSEL_SAMPLER_TEMPERATURE &&
              static_cast<int>(SamplerStage::Xtc) == TESSEL_SAMPLER_XTC && static_cast<int>(SamplerStage::Dry) == TESSEL_SAMPLER_DRY);

SamplerParams to_cpp(const tessel_sampler_params& p) {
    SamplerParams sp;
    sp.temp = p.temp;
    sp.top_k = p.top_k;
    sp.top_p = p.top_p;
    sp.min_p = p.min_p;
    sp.repeat_penalty = p.repeat_penalty;
    sp.repeat_last_n = p.repeat_last_n;
    sp.presence_penalty = p.presence_penalty;
    sp.frequency_penalty = p.frequency_penalty;
    sp.seed = p.seed;
    if (p.n_logit_bias > 0) require(p.logit_bias, "params->logit_bias");
    for (size_t i = 0; i < p.n_logit_bias; ++i) sp.logit_bias.push_back({p.logit_bias[i].token, p.logit_bias[i].bias});
    sp.typical_p = p.typical_p;
    sp.top_n_sigma = p.top_n_sigma;
    sp.xtc_probability = p.xtc_probability;
    sp.xtc_threshold = p.xtc_threshold;
    sp.dry_multiplier = p.dry_multiplier;
    sp.dry_base = p.dry_base;
    sp.dry_allowed_length = p.dry_allowed_length;
    sp.dry_penalty_last_n = p.dry_penalty_last_n;
    if (p.n_dry_sequence_breakers > 0) require(p.dry_sequence_breakers, "params->dry_sequence_breakers");
    sp.dry_sequence_breakers.clear();
    for (size_t i = 0; i < p.n_dry_sequence_breakers; ++i) {
        if (!p.dry_sequence_breakers[i])
            throw Error(ErrorCode::InvalidArgument, "sampler: dry_sequence_breakers[" + std::to_string(i) + "] is NULL");
        sp.dry_sequence_breakers.emplace_back(p.dry_sequence_breakers[i]);
    }
    sp.mirostat = p.mirostat;
    sp.mirostat_tau = p.mirostat_tau;
    sp.mirostat_eta = p.mirostat_eta;
    if (p.n_samplers > 0) require(p.samplers, "params->samplers");
    sp.samplers.clear();
    for (size_t i = 0; i < p.n_samplers; ++i) {
        if (p.samplers[i] < 0 || p.samplers[i] > TESSEL_SAMPLER_TEMPERATURE)
            throw Error(ErrorCode::InvalidArgument, "sampler: samplers[" + std::to_string(i) + "] = " +
                                                        std::to_string(p.samplers[i]) + " is invalid (expected 0..8)");
        sp.samplers.push_back(static_cast<SamplerStage>(p.samplers[i]));
    }
    if (p.grammar) sp.grammar = p.grammar;
    return sp;
}

}  // namespace

extern "C" {

tessel_sampler_params tessel_sampler_default_params(void) {
    const SamplerParams d;
    tessel_sampler_params p{};
    p.temp = d.temp;
    p.top_k = d.top_k;
    p.top_p = d.top_p;
    p.min_p = d.min_p;
    p.repeat_penalty = d.repeat_penalty;
    p.repeat_last_n = d.repeat_last_n;
    p.presence_penalty = d.presence_penalty;
    p.frequency_penalty = d.frequency_penalty;
    p.seed = d.seed;
    p.logit_bias = nullptr;
    p.n_logit_bias = 0;
    p.typical_p = d.typical_p;
    p.top_n_sigma = d.top_n_sigma;
    p.xtc_probability = d.xtc_probability;
    p.xtc_threshold = d.xtc_threshold;
    p.dry_multiplier = d.dry_multiplier;
    p.dry_base = d.dry_base;
    p.dry_allowed_length = d.dry_allowed_length;
    p.dry_penalty_last_n = d.dry_penalty_last_n;
    p.dry_sequence_breakers = kDefaultBreakers;
    p.n_dry_sequence_breakers = std::size(kDefaultBreakers);
    p.mirostat = d.mirostat;
    p.mirostat_tau = d.mirostat_tau;
    p.mirostat_eta = d.mirostat_eta;
    p.samplers = kDefaultOrder;
    p.n_samplers = std::size(kDefaultOrder);
    p.grammar = nullptr;
    return p;
}

tessel_status tessel_sampler_new(const tessel_sampler_params* params, int32_t n_vocab, tessel_sampler** sampler) {
    static_assert(TESSEL_RANDOM_SEED == kRandomSeed);
    return guard(__func__, [&] {
        require(sampler, "sampler");
        *sampler = new tessel_sampler{Sampler(to_cpp(params ? *params : tessel_sampler_default_params()), n_vocab)};
    });
}

tessel_status tessel_sampler_new_for_model(const tessel_sampler_params* params, const tessel_model* model,
                                           tessel_sampler** sampler) {
    return guard(__func__, [&] {
        require(model, "model");
        require(sampler, "sampler");
        *sampler = new tessel_sampler{Sampler(to_cpp(params ? *params : tessel_sampler_default_params()), *model->model)};
    });
}

void tessel_sampler_free(tessel_sampler* sampler) { delete sampler; }

tessel_status tessel_sampler_sample(tessel_sampler* sampler, const float* logits, int32_t* token) {
    return guard(__func__, [&] {
        require(sampler, "sampler");
        require(logits, "logits");
        require(token, "token");
        const size_t n = static_cast<size_t>(sampler->sampler.n_vocab());
        *token = sampler->sampler.sample(std::span(logits, n));
    });
}

tessel_status tessel_sampler_accept(tessel_sampler* sampler, int32_t token) {
    return guard(__func__, [&] {
        require(sampler, "sampler");
        sampler->sampler.accept(token);
    });
}

tessel_status tessel_sampler_reset(tessel_sampler* sampler) {
    return guard(__func__, [&] {
        require(sampler, "sampler");
        sampler->sampler.reset();
    });
}

uint32_t tessel_sampler_seed(const tessel_sampler* sampler) { return sampler ? sampler->sampler.seed() : 0; }

tessel_status tessel_sampler_accept_prompt(tessel_sampler* sampler, int32_t token) {
    return guard(__func__, [&] {
        require(sampler, "sampler");
        sampler->sampler.accept(token, /*advance_grammar=*/false);
    });
}

tessel_status tessel_sampler_reset_grammar(tessel_sampler* sampler) {
    return guard(__func__, [&] {
        require(sampler, "sampler");
        sampler->sampler.reset_grammar();
    });
}

tessel_status tessel_json_schema_to_grammar(const char* schema, size_t schema_len, char* buf, size_t buf_size,
                                            size_t* n_needed) {
    return guard(__func__, [&] {
        require(schema, "schema");
        capi::write_text(json_schema_to_grammar(std::string_view(schema, schema_len)), buf, buf_size, n_needed);
    });
}

}  // extern "C"
