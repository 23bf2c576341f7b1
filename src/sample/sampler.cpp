// tessel::Sampler (include/tessel/sampling.hpp): parameter checks and the stage chain.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "sample/candidates.hpp"
#include "sample/draw.hpp"
#include "sample/penalties.hpp"
#include "sample/truncation.hpp"
#include "tessel/errors.hpp"
#include "tessel/sampling.hpp"

namespace tessel {
namespace {

[[noreturn]] void bad_param(const char* field, const std::string& value, const char* expected) {
    throw Error(ErrorCode::InvalidArgument,
                std::string("sampler: ") + field + " = " + value + " is invalid (expected " + expected + ")");
}

std::string float_text(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    return buf;
}

void validate(const SamplerParams& p, int32_t n_vocab) {
    if (n_vocab <= 0) bad_param("n_vocab", std::to_string(n_vocab), "> 0");
    if (!std::isfinite(p.temp)) bad_param("temp", float_text(p.temp), "a finite value; <= 0 = greedy");
    if (p.top_k < 0) bad_param("top_k", std::to_string(p.top_k), ">= 0; 0 = off");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) bad_param("top_p", float_text(p.top_p), "in (0, 1]; 1 = off");
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) bad_param("min_p", float_text(p.min_p), "in [0, 1]; 0 = off");
    if (!(p.repeat_penalty > 0.0f && std::isfinite(p.repeat_penalty)))
        bad_param("repeat_penalty", float_text(p.repeat_penalty), "a finite value > 0; 1 = off");
    if (p.repeat_last_n < 0) bad_param("repeat_last_n", std::to_string(p.repeat_last_n), ">= 0; 0 = off");
    if (!std::isfinite(p.presence_penalty))
        bad_param("presence_penalty", float_text(p.presence_penalty), "a finite value; 0 = off");
    if (!std::isfinite(p.frequency_penalty))
        bad_param("frequency_penalty", float_text(p.frequency_penalty), "a finite value; 0 = off");
}

uint32_t resolve_seed(uint32_t seed) {
    if (seed != kRandomSeed) return seed;
    std::random_device device;
    return static_cast<uint32_t>(device());
}

}  // namespace

struct Sampler::State {
    SamplerParams params;
    int32_t n_vocab;
    uint32_t seed;
    std::mt19937 rng;
    sample::TokenWindow window;
    bool penalize;
    sample::CandidateList list;    // reused between calls
    std::vector<double> weights;  // reused between calls

    State(const SamplerParams& p, int32_t n)
        : params(p),
          n_vocab(n),
          seed(resolve_seed(p.seed)),
          rng(seed),
          window(static_cast<size_t>(p.repeat_last_n)),
          penalize(p.repeat_last_n > 0 &&
                   (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f)) {}
};

Sampler::Sampler(const SamplerParams& params, int32_t n_vocab) {
    validate(params, n_vocab);
    state_ = std::make_unique<State>(params, n_vocab);
}

Sampler::~Sampler() = default;
Sampler::Sampler(Sampler&&) noexcept = default;
Sampler& Sampler::operator=(Sampler&&) noexcept = default;

int32_t Sampler::sample(std::span<const float> logits) {
    State& s = *state_;
    if (logits.size() != static_cast<size_t>(s.n_vocab))
        throw Error(ErrorCode::InvalidArgument, std::string("sampler: got ") + std::to_string(logits.size()) +
                                                    " logits, expected n_vocab = " + std::to_string(s.n_vocab));
    sample::CandidateList& list = s.list;
    list.assign(logits);
    if (s.penalize)
        sample::apply_penalties(list, s.window,
                                {s.params.repeat_penalty, s.params.frequency_penalty, s.params.presence_penalty});
    if (s.params.temp <= 0.0f) return list.items[sample::argmax(list)].id;

    sample::top_k(list, s.params.top_k);
    sample::top_p(list, s.params.top_p, s.weights);
    sample::min_p(list, s.params.min_p);
    sample::apply_temperature(list, s.params.temp);
    list.sort();
    const double total = sample::softmax_weights(list, s.weights);
    return list.items[sample::pick_weighted(s.weights, total, sample::uniform01(s.rng))].id;
}

void Sampler::accept(int32_t token) {
    if (token < 0 || token >= state_->n_vocab)
        throw Error(ErrorCode::InvalidArgument, std::string("sampler: accepted token ") + std::to_string(token) +
                                                    " is outside [0, " + std::to_string(state_->n_vocab) + ")");
    state_->window.push(token);
}

void Sampler::reset() {
    state_->window.clear();
    state_->rng.seed(state_->seed);
}

uint32_t Sampler::seed() const { return state_->seed; }
const SamplerParams& Sampler::params() const { return state_->params; }
int32_t Sampler::n_vocab() const { return state_->n_vocab; }

}  // namespace tessel
