// The C API (include/tessel.h): the sampler chain.
#include "runtime/c_api.hpp"

using namespace tessel;
using capi::guard;
using capi::require;

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
    return p;
}

tessel_status tessel_sampler_new(const tessel_sampler_params* params, int32_t n_vocab, tessel_sampler** sampler) {
    static_assert(TESSEL_RANDOM_SEED == kRandomSeed);
    return guard(__func__, [&] {
        require(sampler, "sampler");
        const tessel_sampler_params p = params ? *params : tessel_sampler_default_params();
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
        *sampler = new tessel_sampler{Sampler(sp, n_vocab)};
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

}  // extern "C"
