// Token sampling: turns one decode step's logits into a token id.
//
// The chain is llama.cpp's common sampler: the logit bias, then the stages of
// SamplerParams::samplers in their order (llama.cpp `--samplers`; the default order is
// "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature", numbered below), then the
// draw. An off stage leaves the candidates untouched; SamplerParams' defaults turn on top-k,
// top-p, min-p and temperature only.
//
//   0. logit bias  l[token] += bias for every (token, bias) entry, entries adding up; a bias of
//                  -inf bans the token (llama.cpp `--logit-bias`, how `--ignore-eos` is done).
//   1. penalties   over the last `repeat_last_n` accepted tokens. For a token seen `count` > 0
//                  times in that window (llama.cpp llama_sampler_penalties):
//                    l = (l <= 0) ? l * repeat_penalty : l / repeat_penalty
//                        (CTRL, Keskar et al. 2019, arXiv:1909.05858, with llama.cpp's sign rule
//                        so a penalty always lowers the logit)
//                    l = l - count * frequency_penalty - presence_penalty
//                        (the frequency/presence formula of OpenAI's completions API)
//   2. DRY         "don't repeat yourself" (p-e-w, oobabooga text-generation-webui PR #5677;
//                  llama.cpp PR #9702). Over the last `dry_penalty_last_n` accepted tokens h:
//                  for each earlier position j, n_j = the length of the longest suffix of h that
//                  also ends at j, capped at the tokens since the last sequence breaker. The
//                  token t = h[j+1] would extend that repeat, so with N_t = max over its j of n_j
//                  and N_t >= dry_allowed_length:
//                    l[t] -= dry_multiplier * dry_base^(N_t - dry_allowed_length)
//                  (the penalty capped at the largest float, so l stays finite). A breaker is a
//                  string: a token whose text contains it is never penalized and ends every
//                  repeat; a token whose text ends with a prefix of it, followed by the tokens of
//                  the rest, is a multi-token breaker. Breakers need the vocabulary's texts
//                  (SamplerVocab). On when dry_multiplier > 0.
//   3. top-n-sigma keep l >= l_max - n * sigma, sigma the standard deviation (population) of
//                  the finite logits (Tang et al. 2024, arXiv:2411.07641); on when n > 0.
//   4. top-k       keep the k largest logits (Fan et al. 2018, arXiv:1805.04833); 0 = off.
//   5. typical-p   locally typical sampling (Meister et al. 2022, arXiv:2202.00666): with
//                  p_i = softmax and H = -sum p_i ln p_i, order candidates by |-ln p_i - H|
//                  (ascending; candidate order on ties) and keep the shortest prefix whose
//                  probability mass is > typical_p; 1 = off.
//   6. top-p       nucleus (Holtzman et al. 2019, arXiv:1904.09751): softmax over the remaining
//                  candidates, keep the shortest prefix (by descending logit) whose cumulative
//                  probability is >= top_p; 1 = off.
//   7. min-p       keep candidates whose probability is >= min_p times the largest one, i.e.
//                  l >= l_max + ln(min_p) (llama.cpp PR #3841); 0 = off.
//   8. XTC         "exclude top choices" (p-e-w, text-generation-webui PR #6335; llama.cpp PR
//                  #9742): with probability xtc_probability (one draw u < xtc_probability),
//                  when two or more candidates have probability >= xtc_threshold, remove all of
//                  them but the least probable one. On when xtc_probability > 0 and
//                  xtc_threshold <= 0.5 (above 0.5 two candidates cannot both reach it).
//   9. temperature l = l / temp.
//  10. draw        softmax over the remaining candidates, then a categorical draw (see below).
//
// Greedy (temp <= 0): the stages run as above (typical-p and XTC may drop the arg-max), then
// the largest remaining logit wins, the lowest id on ties; no draw. The other truncations always
// keep the arg-max, so when typical-p and XTC are off and no penalty stage follows a truncation,
// they are skipped: the result is the arg-max after the logit bias and penalty stages.
//
// Mirostat (mirostat = 1 or 2) replaces stages 1-10 whatever `samplers` says, as llama.cpp's: logit bias, temperature,
// then (greedy when temp <= 0) one of
//   v1 (Basu et al. 2020, arXiv:2007.14966, Algorithm 1): softmax p_i in candidate order;
//      s = sum t_i b_i / sum t_i^2 over the first min(100, n) - 1 pairs, t_i = ln((i+2)/(i+1)),
//      b_i = ln(p_i / p_{i+1}); e = s - 1; keep the k = ((e 2^mu) / (1 - n_vocab^-e))^(1/s)
//      most probable (at least 1), renormalize and draw.
//   v2 (Mirostat 2.0 of the authors' code, github.com/basusourya/mirostat, as llama.cpp has it):
//      keep the candidates with surprise -log2 p_i <= mu (at least the most probable one),
//      renormalize and draw.
// then, with p the drawn token's renormalized probability, mu -= mirostat_eta * (-log2 p -
// mirostat_tau). mu starts (and reset() restarts it) at 2 * mirostat_tau.
//
// Candidate order, wherever an order matters (top-k, top-p, the draw): descending logit, lower
// token id first on equal logits, so results do not depend on the C++ library's sort.
//
// Grammar (SamplerParams::grammar, GBNF; llama.cpp's `--grammar`): the output must match it. A
// token may come next when its bytes continue the grammar (several elements at once, or part of
// a UTF-8 character); an end-of-generation token when the grammar can end; a control token or
// one with no bytes never. As llama.cpp's common sampler: the chain picks a token from the raw
// logits, and when the grammar refuses it, the chain runs again on logits where every refused
// token is -inf (Mirostat's mu as before the first pass; the RNG goes on). accept() advances the
// grammar. Grammars match top-down (a left-recursive rule is a load error); JSON schemas convert
// to grammars with json_schema_to_grammar().
//
// Random numbers: one std::mt19937 seeded with seed() gives every random choice, in chain order
// (XTC's draw, then the final or Mirostat's draw), each u = r * 2^-32 in [0, 1) from one output
// r (tessel's own mapping; the std:: distributions differ between standard libraries). An off
// stage draws nothing. The draw takes the first candidate, in the order above, whose cumulative
// weight exceeds u times the total weight; weights are exp(l - l_max) summed in double. A seed
// therefore gives the same tokens on every platform.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/export.h"

namespace tessel {

class Model;

/// `SamplerParams::seed` value that asks for a random seed (std::random_device), as llama.cpp's
/// `--seed -1`. Sampler::seed() reports the seed actually used.
inline constexpr uint32_t kRandomSeed = 0xFFFFFFFFu;

/// The stages SamplerParams::samplers orders (llama.cpp's `--samplers` names in comments).
enum class SamplerStage : uint8_t {
    Penalties,    ///< "penalties": repeat, frequency and presence penalties (stage 1)
    Dry,          ///< "dry" (stage 2)
    TopNSigma,    ///< "top_n_sigma" (stage 3)
    TopK,         ///< "top_k" (stage 4)
    TypicalP,     ///< "typ_p" (stage 5)
    TopP,         ///< "top_p" (stage 6)
    MinP,         ///< "min_p" (stage 7)
    Xtc,          ///< "xtc" (stage 8)
    Temperature,  ///< "temperature" (stage 9)
};

/// One logit-bias entry: l[token] += bias.
struct LogitBias {
    int32_t token = 0;  ///< in [0, n_vocab)
    float bias = 0.0f;  ///< finite or -inf (bans the token); not NaN or +inf
};

/// Sampling settings. Defaults are llama.cpp's CLI defaults (common.h common_params_sampling).
/// Sampler's constructor validates them and throws tessel::Error naming the bad field.
struct SamplerParams {
    float temp = 0.8f;               ///< temperature; <= 0 selects greedy decoding. Must be finite.
    int32_t top_k = 40;              ///< >= 0; 0 = off. Values above n_vocab keep every token.
    float top_p = 0.95f;             ///< in (0, 1]; 1 = off.
    float min_p = 0.05f;             ///< in [0, 1]; 0 = off.
    float repeat_penalty = 1.0f;     ///< > 0; 1 = off.
    int32_t repeat_last_n = 64;      ///< >= -1 tokens of history penalized; 0 = off; -1 = every
                                     ///< token accepted since construction or reset() (llama.cpp's
                                     ///< "context size": the same for one sequence per Sampler).
    float presence_penalty = 0.0f;   ///< finite; 0 = off.
    float frequency_penalty = 0.0f;  ///< finite; 0 = off.
    uint32_t seed = kRandomSeed;     ///< RNG seed; kRandomSeed draws one.

    std::vector<LogitBias> logit_bias;  ///< stage 0; empty = off.
    float typical_p = 1.0f;          ///< in [0, 1]; 1 = off.
    float top_n_sigma = -1.0f;       ///< finite; <= 0 = off.
    float xtc_probability = 0.0f;    ///< in [0, 1]; 0 = off.
    float xtc_threshold = 0.1f;      ///< in [0, 1]; > 0.5 = off.
    float dry_multiplier = 0.0f;     ///< finite, >= 0; 0 = off.
    float dry_base = 1.75f;          ///< finite, >= 1.
    int32_t dry_allowed_length = 2;  ///< >= 0: repeats this long are free.
    int32_t dry_penalty_last_n = -1;  ///< >= -1 tokens of history; 0 = off; -1 as repeat_last_n.
    /// Non-empty strings (any bytes). Empty = no breakers. Needs a SamplerVocab when DRY is on.
    std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
    int32_t mirostat = 0;            ///< 0 = off, 1 = Mirostat, 2 = Mirostat 2.0.
    float mirostat_tau = 5.0f;       ///< target surprise, bits; finite, >= 0 (llama.cpp --mirostat-ent).
    float mirostat_eta = 0.1f;       ///< learning rate; finite, >= 0 (llama.cpp --mirostat-lr).
    /// Stages 1-9 in the order they run (llama.cpp --samplers); a stage left out does not run
    /// (without Temperature the draw is at temperature 1; greedy still needs temp <= 0). A stage
    /// may appear more than once. Unused with Mirostat.
    std::vector<SamplerStage> samplers = {SamplerStage::Penalties, SamplerStage::Dry,   SamplerStage::TopNSigma,
                                          SamplerStage::TopK,      SamplerStage::TypicalP, SamplerStage::TopP,
                                          SamplerStage::MinP,      SamplerStage::Xtc,   SamplerStage::Temperature};
    /// GBNF text the output must match (syntax: llama.cpp's grammars/README.md; src/sample/
    /// gbnf_parser.hpp); empty = none. Needs a SamplerVocab (or the model). A bad grammar throws
    /// tessel::Error (InvalidArgument) "grammar:LINE:COLUMN: ..." from the constructor.
    std::string grammar;
};

/// What the vocabulary-aware stages need of a model's vocabulary (DRY's sequence breakers, the
/// grammar).
/// Sampler(params, const Model&) builds one from a model; tests and other callers may fill it.
struct SamplerVocab {
    /// pieces[id]: the bytes of token id, special tokens as their text (Model::token_to_piece
    /// with special = true). Size n_vocab.
    std::vector<std::string> pieces;
    /// End-of-generation token ids (Model::is_eog), ascending.
    std::vector<int32_t> eog;
    /// Control tokens (their piece is empty with special = false), ascending: a grammar never
    /// allows them, except the end-of-generation ones when it can end.
    std::vector<int32_t> control;
    /// Text -> token ids, no special tokens added or parsed (Model::tokenize(text, false,
    /// false)). Used only while a Sampler is constructed (the tails of multi-token sequence
    /// breakers); may be empty, and then a breaker matches only tokens containing all of it.
    std::function<std::vector<int32_t>(std::string_view)> tokenize;
};

/// Samples tokens from logits with the chain described at the top of this header.
/// Not thread-safe: one Sampler per generating sequence.
class TESSEL_API Sampler {
public:
    /// Throws tessel::Error (InvalidArgument) naming the field when a parameter is out of range,
    /// when n_vocab <= 0, or when DRY is on with sequence breakers or a grammar is set (their
    /// texts need a vocabulary: use another constructor, or clear dry_sequence_breakers to match
    /// repeats of ids only).
    Sampler(const SamplerParams& params, int32_t n_vocab);
    /// A sampler over vocab.pieces.size() tokens, with the vocabulary the DRY breakers need.
    /// Throws like the constructor above (n_vocab = vocab.pieces.size()).
    Sampler(const SamplerParams& params, const SamplerVocab& vocab);
    /// A sampler for `model`'s vocabulary (vocab_for(model)). Throws like the constructor above.
    Sampler(const SamplerParams& params, const Model& model);
    ~Sampler();
    Sampler(Sampler&&) noexcept;
    Sampler& operator=(Sampler&&) noexcept;
    Sampler(const Sampler&) = delete;
    Sampler& operator=(const Sampler&) = delete;

    /// The SamplerVocab of a loaded model: every token's piece, its end-of-generation ids, and
    /// a tokenize that uses the model (valid while the model lives).
    static SamplerVocab vocab_for(const Model& model);

    /// Picks a token from `logits` (n_vocab floats, logits[i] for token id i; -inf marks a
    /// banned token). Does not record the token: call accept() for the token actually used.
    /// Throws tessel::Error (InvalidArgument) when logits.size() != n_vocab, when a logit is
    /// NaN or +inf, or when every logit is -inf (also after the logit bias, or under the grammar).
    int32_t sample(std::span<const float> logits);

    /// Records `token` in the penalty and DRY histories (the last repeat_last_n and
    /// dry_penalty_last_n accepted tokens) and, when `advance_grammar`, advances the grammar over
    /// it (pass false for prompt tokens: the grammar constrains the output only). Throws
    /// tessel::Error (InvalidArgument) when token is not in [0, n_vocab), or when the grammar
    /// cannot take it (nothing is recorded then).
    void accept(int32_t token, bool advance_grammar = true);

    /// Clears the histories, restarts Mirostat's mu, the grammar and the RNG from seed(): the
    /// next draws repeat the first ones.
    void reset();

    /// Restarts the grammar only (a new reply of a chat); no-op without a grammar.
    void reset_grammar();

    /// The seed in use: params.seed, or the random one drawn for kRandomSeed.
    uint32_t seed() const;
    const SamplerParams& params() const;
    int32_t n_vocab() const;

private:
    struct State;
    std::unique_ptr<State> state_;
};

/// GBNF text (SamplerParams::grammar) for the JSON values `schema_json` describes, as llama.cpp's
/// `--json-schema`. Keywords: type (object, array, string, number, integer, boolean, null, or a
/// list of them), enum, const, anyOf, oneOf, $ref within the document, properties, required,
/// additionalProperties (false, true or a schema; when absent: allowed only if there are no
/// properties), items, minItems, maxItems, minLength, maxLength, pattern (a regular-expression
/// subset: literals, classes, `.`, \d \w \s, groups, `|`, quantifiers), minimum 0 on integers;
/// annotations (title, description, default, $defs, ...) are ignored. Objects list their
/// properties in the schema's order; oneOf is treated as anyOf; numbers have at most 16
/// integral and 16 fraction digits; whitespace between tokens is at most 12 of [ \t\n].
/// Throws tessel::Error: InvalidArgument for malformed JSON (naming line and column) or a
/// malformed schema (naming its JSON pointer); Unsupported naming any other keyword (or
/// construct of a pattern) and its JSON pointer.
TESSEL_API std::string json_schema_to_grammar(std::string_view schema_json);

}  // namespace tessel
