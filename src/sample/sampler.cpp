// tessel::Sampler (include/tessel/sampling.hpp): parameter checks and the stage chain.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sample/candidates.hpp"
#include "sample/draw.hpp"
#include "sample/dry.hpp"
#include "sample/gbnf_parser.hpp"
#include "sample/grammar_stage.hpp"
#include "sample/history.hpp"
#include "sample/logit_bias.hpp"
#include "sample/mirostat.hpp"
#include "sample/penalties.hpp"
#include "sample/truncation.hpp"
#include "tessel/errors.hpp"
#include "tessel/sampling.hpp"

namespace tessel {
namespace {

[[noreturn]] void bad_param(const std::string& field, const std::string& value, const char* expected) {
    throw Error(ErrorCode::InvalidArgument,
                "sampler: " + field + " = " + value + " is invalid (expected " + expected + ")");
}

std::string float_text(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    return buf;
}

void check_finite(const char* field, float v, const char* expected) {
    if (!std::isfinite(v)) bad_param(field, float_text(v), expected);
}

void check_range(const char* field, float v, float lo, float hi, const char* expected) {
    if (!(v >= lo && v <= hi)) bad_param(field, float_text(v), expected);
}

bool runs(const SamplerParams& p, SamplerStage stage) {
    return p.mirostat == 0 && std::find(p.samplers.begin(), p.samplers.end(), stage) != p.samplers.end();
}

bool dry_on(const SamplerParams& p) {
    return runs(p, SamplerStage::Dry) && p.dry_multiplier > 0.0f && p.dry_penalty_last_n != 0;
}

bool penalties_on(const SamplerParams& p) {
    return runs(p, SamplerStage::Penalties) && p.repeat_last_n != 0 &&
           (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f);
}

bool is_truncation(SamplerStage s) {
    return s != SamplerStage::Penalties && s != SamplerStage::Dry && s != SamplerStage::Temperature;
}

// Greedy may skip the truncations when none of them can change the arg-max after the penalty
// stages: typical-p and XTC (which may drop it) are off, and no penalty stage follows a truncation.
bool greedy_skips_truncations(const SamplerParams& p) {
    if (runs(p, SamplerStage::TypicalP) && p.typical_p < 1.0f) return false;
    if (runs(p, SamplerStage::Xtc) && p.xtc_probability > 0.0f && p.xtc_threshold <= 0.5f) return false;
    const auto first = std::find_if(p.samplers.begin(), p.samplers.end(), is_truncation);
    return std::none_of(first, p.samplers.end(),
                        [](SamplerStage s) { return s == SamplerStage::Penalties || s == SamplerStage::Dry; });
}

void validate(const SamplerParams& p, int32_t n_vocab, bool has_vocab) {
    if (n_vocab <= 0) bad_param("n_vocab", std::to_string(n_vocab), "> 0");
    check_finite("temp", p.temp, "a finite value; <= 0 = greedy");
    if (p.top_k < 0) bad_param("top_k", std::to_string(p.top_k), ">= 0; 0 = off");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) bad_param("top_p", float_text(p.top_p), "in (0, 1]; 1 = off");
    check_range("min_p", p.min_p, 0.0f, 1.0f, "in [0, 1]; 0 = off");
    if (!(p.repeat_penalty > 0.0f && std::isfinite(p.repeat_penalty)))
        bad_param("repeat_penalty", float_text(p.repeat_penalty), "a finite value > 0; 1 = off");
    if (p.repeat_last_n < -1)
        bad_param("repeat_last_n", std::to_string(p.repeat_last_n), ">= -1; 0 = off, -1 = every accepted token");
    check_finite("presence_penalty", p.presence_penalty, "a finite value; 0 = off");
    check_finite("frequency_penalty", p.frequency_penalty, "a finite value; 0 = off");
    for (size_t i = 0; i < p.logit_bias.size(); ++i) {
        const LogitBias& b = p.logit_bias[i];
        const std::string field = "logit_bias[" + std::to_string(i) + "]";
        if (b.token < 0 || b.token >= n_vocab)
            bad_param(field + ".token", std::to_string(b.token),
                      ("a token id in [0, " + std::to_string(n_vocab) + ")").c_str());
        if (std::isnan(b.bias) || b.bias == INFINITY)
            bad_param(field + ".bias", float_text(b.bias), "a finite value, or -inf to ban the token");
    }
    check_range("typical_p", p.typical_p, 0.0f, 1.0f, "in [0, 1]; 1 = off");
    check_finite("top_n_sigma", p.top_n_sigma, "a finite value; <= 0 = off");
    check_range("xtc_probability", p.xtc_probability, 0.0f, 1.0f, "in [0, 1]; 0 = off");
    check_range("xtc_threshold", p.xtc_threshold, 0.0f, 1.0f, "in [0, 1]; > 0.5 = off");
    if (!(p.dry_multiplier >= 0.0f && std::isfinite(p.dry_multiplier)))
        bad_param("dry_multiplier", float_text(p.dry_multiplier), "a finite value >= 0; 0 = off");
    if (!(p.dry_base >= 1.0f && std::isfinite(p.dry_base)))
        bad_param("dry_base", float_text(p.dry_base), "a finite value >= 1");
    if (p.dry_allowed_length < 0) bad_param("dry_allowed_length", std::to_string(p.dry_allowed_length), ">= 0");
    if (p.dry_penalty_last_n < -1)
        bad_param("dry_penalty_last_n", std::to_string(p.dry_penalty_last_n), ">= -1; 0 = off, -1 = every accepted token");
    for (size_t i = 0; i < p.dry_sequence_breakers.size(); ++i)
        if (p.dry_sequence_breakers[i].empty())
            bad_param("dry_sequence_breakers[" + std::to_string(i) + "]", "\"\"", "a non-empty string");
    if (!p.grammar.empty() && !has_vocab)
        throw Error(ErrorCode::InvalidArgument,
                    "sampler: a grammar needs the vocabulary's token texts: construct the Sampler with the model (or a "
                    "SamplerVocab)");
    if (dry_on(p) && !p.dry_sequence_breakers.empty() && !has_vocab)
        throw Error(ErrorCode::InvalidArgument,
                    "sampler: dry_sequence_breakers need the vocabulary's token texts: construct the Sampler with the "
                    "model (or a SamplerVocab), or clear dry_sequence_breakers");
    for (size_t i = 0; i < p.samplers.size(); ++i)
        if (static_cast<uint8_t>(p.samplers[i]) > static_cast<uint8_t>(SamplerStage::Temperature))
            bad_param("samplers[" + std::to_string(i) + "]", std::to_string(static_cast<int>(p.samplers[i])),
                      "a SamplerStage, 0..8");
    if (p.mirostat < 0 || p.mirostat > 2) bad_param("mirostat", std::to_string(p.mirostat), "0 (off), 1 or 2");
    if (!(p.mirostat_tau >= 0.0f && std::isfinite(p.mirostat_tau)))
        bad_param("mirostat_tau", float_text(p.mirostat_tau), "a finite value >= 0");
    if (!(p.mirostat_eta >= 0.0f && std::isfinite(p.mirostat_eta)))
        bad_param("mirostat_eta", float_text(p.mirostat_eta), "a finite value >= 0");
}

uint32_t resolve_seed(uint32_t seed) {
    if (seed != kRandomSeed) return seed;
    std::random_device device;
    return static_cast<uint32_t>(device());
}

// The history the on stages need: the longer of their windows.
size_t history_capacity(const SamplerParams& p) {
    size_t cap = 0;
    if (penalties_on(p)) cap = std::max(cap, sample::window_capacity(p.repeat_last_n));
    if (dry_on(p)) cap = std::max(cap, sample::window_capacity(p.dry_penalty_last_n));
    return cap;
}

}  // namespace

struct Sampler::State {
    SamplerParams params;
    int32_t n_vocab;
    uint32_t seed;
    std::mt19937 rng;
    sample::TokenHistory history;
    bool penalize, dry;
    bool greedy_skips;             // greedy_skips_truncations(params)
    bool plain_greedy;             // greedy with no stage but the logit bias that can move the arg-max
    sample::DryBreakers breakers;
    double mu;                     // Mirostat's running surprise bound
    sample::CandidateList list;    // reused between calls
    std::vector<double> weights;   // reused between calls
    sample::DryScratch dry_scratch;
    std::unique_ptr<sample::GrammarStage> grammar;  // null without SamplerParams::grammar

    State(const SamplerParams& p, int32_t n, const SamplerVocab* vocab)
        : params(p),
          n_vocab(n),
          seed(resolve_seed(p.seed)),
          rng(seed),
          history(history_capacity(p)),
          penalize(penalties_on(p)),
          dry(dry_on(p)),
          greedy_skips(greedy_skips_truncations(p)),
          plain_greedy(p.temp <= 0.0f && p.mirostat == 0 && greedy_skips && !penalize && !dry),
          mu(2.0 * static_cast<double>(p.mirostat_tau)) {
        if (dry && vocab) breakers = sample::DryBreakers(p.dry_sequence_breakers, *vocab);
        if (!p.grammar.empty() && vocab)
            grammar = std::make_unique<sample::GrammarStage>(std::make_shared<const sample::Grammar>(sample::parse_gbnf(p.grammar)),
                                                             vocab->pieces, vocab->eog, vocab->control);
    }

    int32_t sample_mirostat();
    int32_t run_chain(std::span<const float> logits, bool constrained);
};

Sampler::Sampler(const SamplerParams& params, int32_t n_vocab) {
    validate(params, n_vocab, false);
    state_ = std::make_unique<State>(params, n_vocab, nullptr);
}

Sampler::Sampler(const SamplerParams& params, const SamplerVocab& vocab) {
    const auto n_vocab = static_cast<int32_t>(std::min<size_t>(vocab.pieces.size(), INT32_MAX));
    validate(params, n_vocab, true);
    state_ = std::make_unique<State>(params, n_vocab, &vocab);
}

Sampler::~Sampler() = default;
Sampler::Sampler(Sampler&&) noexcept = default;
Sampler& Sampler::operator=(Sampler&&) noexcept = default;

int32_t Sampler::State::sample_mirostat() {
    if (params.temp <= 0.0f) return list.items[sample::argmax(list)].id;
    sample::apply_temperature(list, params.temp);
    const sample::MirostatParams mp{params.mirostat_tau, params.mirostat_eta, n_vocab};
    return params.mirostat == 1 ? sample::mirostat_v1(list, mp, mu, rng, weights)
                                : sample::mirostat_v2(list, mp, mu, rng, weights);
}

int32_t Sampler::sample(std::span<const float> logits) {
    State& s = *state_;
    if (logits.size() != static_cast<size_t>(s.n_vocab))
        throw Error(ErrorCode::InvalidArgument, std::string("sampler: got ") + std::to_string(logits.size()) +
                                                    " logits, expected n_vocab = " + std::to_string(s.n_vocab));
    if (!s.grammar) return s.run_chain(logits, false);
    // Most picks satisfy the grammar: check the one picked, mask the whole list only when refused.
    const double mu = s.mu;
    const int32_t first = s.run_chain(logits, false);
    if (s.grammar->allows(first)) return first;
    s.mu = mu;
    return s.run_chain(logits, true);
}

// The chain of include/tessel/sampling.hpp; `constrained`: tokens the grammar refuses are -inf.
int32_t Sampler::State::run_chain(std::span<const float> logits, bool constrained) {
    const SamplerParams& p = params;
    if (plain_greedy && !constrained)  // the pick needs no candidate list (a server pays it per stream per step)
        if (const std::optional<int32_t> id = sample::greedy_with_bias(logits, p.logit_bias)) return *id;
    list.assign(logits);
    if (constrained) {
        grammar->mask(list);
        list.require_finite(" under the grammar");
    }
    if (!p.logit_bias.empty()) {
        sample::apply_logit_bias(list, p.logit_bias);
        list.require_finite(" after the logit bias");
    }
    if (p.mirostat != 0) return sample_mirostat();

    const bool skip_truncations = p.temp <= 0.0f && greedy_skips;
    for (const SamplerStage stage : p.samplers) {
        if (skip_truncations && is_truncation(stage)) continue;
        switch (stage) {
        case SamplerStage::Penalties:
            if (penalize)
                sample::apply_penalties(list, history.last(sample::window_capacity(p.repeat_last_n)),
                                        {p.repeat_penalty, p.frequency_penalty, p.presence_penalty});
            break;
        case SamplerStage::Dry:
            if (dry)
                sample::apply_dry(list, history.last(sample::window_capacity(p.dry_penalty_last_n)),
                                  {p.dry_multiplier, p.dry_base, p.dry_allowed_length}, breakers, dry_scratch);
            break;
        case SamplerStage::TopNSigma: sample::top_n_sigma(list, p.top_n_sigma); break;
        case SamplerStage::TopK: sample::top_k(list, p.top_k); break;
        case SamplerStage::TypicalP: sample::typical_p(list, p.typical_p, weights); break;
        case SamplerStage::TopP: sample::top_p(list, p.top_p, weights); break;
        case SamplerStage::MinP: sample::min_p(list, p.min_p); break;
        case SamplerStage::Xtc: sample::xtc(list, p.xtc_probability, p.xtc_threshold, rng, weights); break;
        case SamplerStage::Temperature:
            if (p.temp > 0.0f) sample::apply_temperature(list, p.temp);
            break;
        }
    }
    if (p.temp <= 0.0f) return list.items[sample::argmax(list)].id;

    list.sort();
    const double total = sample::softmax_weights(list, weights);
    return list.items[sample::pick_weighted(weights, total, sample::uniform01(rng))].id;
}

void Sampler::accept(int32_t token, bool advance_grammar) {
    if (token < 0 || token >= state_->n_vocab)
        throw Error(ErrorCode::InvalidArgument, std::string("sampler: accepted token ") + std::to_string(token) +
                                                    " is outside [0, " + std::to_string(state_->n_vocab) + ")");
    if (advance_grammar && state_->grammar) state_->grammar->accept(token);
    state_->history.push(token);
}

void Sampler::reset() {
    state_->history.clear();
    state_->rng.seed(state_->seed);
    state_->mu = 2.0 * static_cast<double>(state_->params.mirostat_tau);
    reset_grammar();
}

void Sampler::reset_grammar() {
    if (state_->grammar) state_->grammar->reset();
}

uint32_t Sampler::seed() const { return state_->seed; }
const SamplerParams& Sampler::params() const { return state_->params; }
int32_t Sampler::n_vocab() const { return state_->n_vocab; }

}  // namespace tessel
