#include "common/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

namespace tessel::tools {
namespace {

constexpr int64_t kMaxListValue = std::numeric_limits<int32_t>::max();

/// Reads the decimal number at the front of `s` (advancing it); nullopt when there is none or it
/// exceeds kMaxListValue.
std::optional<int64_t> take_number(std::string_view& s) {
    size_t n = 0;
    int64_t v = 0;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9') {
        v = v * 10 + (s[n] - '0');
        if (v > kMaxListValue) return std::nullopt;
        ++n;
    }
    if (n == 0) return std::nullopt;
    s.remove_prefix(n);
    return v;
}

/// Appends the values of one list item `first[-last[(+|*)step]]`; false when it is malformed.
bool parse_item(std::string_view item, std::vector<int64_t>& out) {
    const auto first = take_number(item);
    if (!first) return false;
    if (item.empty()) return out.push_back(*first), true;
    if (item.front() != '-') return false;
    item.remove_prefix(1);
    const auto last = take_number(item);
    if (!last || *last < *first) return false;
    char op = '+';
    int64_t step = 1;
    if (!item.empty()) {
        op = item.front();
        if (op != '+' && op != '*') return false;
        item.remove_prefix(1);
        const auto s = take_number(item);
        if (!s || !item.empty()) return false;
        step = *s;
    }
    // Each step must grow the value, else the range never ends.
    if (op == '+' ? step < 1 : (step < 2 || *first < 1)) return false;
    for (int64_t v = *first; v <= *last; v = op == '+' ? v + step : v * step) out.push_back(v);
    return true;
}

int64_t elapsed_ns(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

int32_t random_token(std::mt19937& rng, int64_t n_vocab) {
    return static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, n_vocab - 1)(rng));
}

/// Decodes n_prompt random tokens at positions 0.. in chunks of n_batch.
void decode_prompt(tessel::Context& ctx, const tessel::Model& model, int64_t n_prompt, int64_t n_batch, std::mt19937& rng) {
    const int64_t n_vocab = model.info().n_vocab;
    std::vector<BatchToken> batch;
    for (int64_t done = 0; done < n_prompt;) {
        const int64_t n = std::min(n_batch, n_prompt - done);
        batch.clear();
        for (int64_t i = 0; i < n; ++i) {
            const int64_t pos = done + i;
            const int32_t tok = pos == 0 && model.adds_bos() ? model.bos() : random_token(rng, n_vocab);
            batch.push_back({tok, static_cast<int32_t>(pos), 0, i + 1 == n});
        }
        ctx.decode(batch);
        done += n;
    }
}

/// Decodes n_gen tokens one at a time after what the cache holds for sequence 0.
void decode_generation(tessel::Context& ctx, const tessel::Model& model, int64_t n_gen, std::mt19937& rng) {
    const int64_t n_vocab = model.info().n_vocab;
    int32_t tok = model.adds_bos() ? model.bos() : random_token(rng, n_vocab);
    int32_t pos = ctx.seq_pos_max(0) + 1;
    for (int64_t i = 0; i < n_gen; ++i) {
        const BatchToken one{tok, pos++, 0, true};
        ctx.decode(std::span<const BatchToken>(&one, 1));
        tok = random_token(rng, n_vocab);
    }
}

}  // namespace

std::string BenchTest::name() const {
    if (n_gen == 0) return std::string("pp") + std::to_string(n_prompt);
    if (n_prompt == 0) return std::string("tg") + std::to_string(n_gen);
    return std::string("pp") + std::to_string(n_prompt) + "+tg" + std::to_string(n_gen);
}

SampleStats sample_stats(std::span<const double> values) {
    SampleStats s;
    if (values.empty()) return s;
    double sum = 0.0;
    for (double v : values) sum += v;
    s.mean = sum / static_cast<double>(values.size());
    if (values.size() < 2) return s;
    double sq = 0.0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(values.size() - 1));
    return s;
}

std::vector<double> tokens_per_second(std::span<const uint64_t> samples_ns, int64_t n_tokens) {
    std::vector<double> ts;
    for (uint64_t ns : samples_ns) ts.push_back(ns == 0 ? 0.0 : 1e9 * static_cast<double>(n_tokens) / static_cast<double>(ns));
    return ts;
}

std::vector<int64_t> parse_int_ranges(std::string_view text, std::string_view flag) {
    std::vector<int64_t> out;
    std::string_view rest = text;
    while (true) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        if (!parse_item(item, out))
            throw Error(ErrorCode::InvalidArgument, std::string(flag) + ": '" + std::string(item) + "' in '" + std::string(text) +
                                                        "' is not N or FIRST-LAST[+STEP|*STEP] (integers 0.." +
                                                        std::to_string(kMaxListValue) + ", growing ranges)");
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return out;
}

std::vector<uint64_t> run_bench(tessel::Context& ctx, const tessel::Model& model, const BenchTest& test, int64_t n_batch, int reps,
                                std::mt19937& rng, const BenchProgress& progress) {
    if (n_batch < 1) throw Error(ErrorCode::InvalidArgument, "bench: batch size must be >= 1 token");
    if (reps < 1) throw Error(ErrorCode::InvalidArgument, "bench: repetitions must be >= 1");
    if (test.n_prompt < 0 || test.n_gen < 0 || test.n_prompt + test.n_gen == 0)
        throw Error(ErrorCode::InvalidArgument, "bench: a test needs prompt or generated tokens, got " + test.name());
    ctx.clear();
    if (progress) progress("warmup", 0);
    if (test.n_prompt > 0) decode_prompt(ctx, model, test.n_prompt, n_batch, rng);
    if (test.n_gen > 0) decode_generation(ctx, model, 1, rng);
    std::vector<uint64_t> samples;
    for (int r = 1; r <= reps; ++r) {
        ctx.clear();
        if (progress) progress("rep", r);
        const auto t0 = std::chrono::steady_clock::now();
        if (test.n_prompt > 0) decode_prompt(ctx, model, test.n_prompt, n_batch, rng);
        if (test.n_gen > 0) decode_generation(ctx, model, test.n_gen, rng);
        samples.push_back(static_cast<uint64_t>(elapsed_ns(t0)));
    }
    return samples;
}

}  // namespace tessel::tools
