#include "common/generate.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace tessel::tools {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void require_prompt_fits(const tessel::Context& ctx, int64_t n_past, size_t n_prompt) {
    const int64_t room = ctx.n_ctx() - n_past;
    if (static_cast<int64_t>(n_prompt) > room)
        throw Error(ErrorCode::InvalidArgument, "prompt is " + std::to_string(n_prompt) + " tokens, the context has room for " +
                                                    std::to_string(room) + " (raise -c)");
}

GenerateStats generate(tessel::Context& ctx, const Model& model, Sampler& sampler, std::span<const int32_t> prompt,
                       int32_t& n_past, const GenerateParams& p, const std::function<void(int32_t)>& on_token) {
    if (prompt.empty()) throw Error(ErrorCode::InvalidArgument, "the prompt is empty");
    if (p.n_batch < 1) throw Error(ErrorCode::InvalidArgument, "batch size must be >= 1");
    require_prompt_fits(ctx, n_past, prompt.size());
    GenerateStats st;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t b0 = 0; b0 < prompt.size(); b0 += static_cast<size_t>(p.n_batch)) {
        const size_t b1 = std::min(prompt.size(), b0 + static_cast<size_t>(p.n_batch));
        std::vector<BatchToken> batch;
        for (size_t i = b0; i < b1; ++i) batch.push_back({prompt[i], n_past + static_cast<int32_t>(i - b0), p.seq, i + 1 == prompt.size()});
        ctx.decode(batch);
        n_past += static_cast<int32_t>(b1 - b0);
    }
    for (int32_t t : prompt) sampler.accept(t, /*advance_grammar=*/false);  // a grammar constrains the output only
    st.n_prompt = static_cast<int64_t>(prompt.size());
    st.t_prompt = seconds_since(t0);

    // The generated text's tail, long enough to hold the longest stop string.
    size_t longest_stop = 0;
    for (const std::string& s : p.stop_strings) longest_stop = std::max(longest_stop, s.size());
    std::string tail;
    t0 = std::chrono::steady_clock::now();
    while (true) {
        if (p.n_predict >= 0 && st.n_generated >= p.n_predict) {
            st.stop = StopReason::TokenLimit;
            break;
        }
        const int32_t tok = sampler.sample(ctx.logits(0));
        sampler.accept(tok);
        if (model.is_eog(tok)) {
            st.stop = StopReason::EndOfGeneration;
            break;
        }
        on_token(tok);
        ++st.n_generated;
        if (longest_stop > 0) {
            tail += model.token_to_piece(tok);
            if (tail.size() > 2 * longest_stop) tail.erase(0, tail.size() - longest_stop);
            const auto ends_with_stop = [&](const std::string& s) { return !s.empty() && tail.ends_with(s); };
            if (std::any_of(p.stop_strings.begin(), p.stop_strings.end(), ends_with_stop)) {
                st.stop = StopReason::StopString;
                // the last token is in the text but not yet in the cache: decode it so a chat can go on
                const BatchToken last{tok, n_past, p.seq, true};
                if (n_past < ctx.n_ctx()) {
                    ctx.decode({&last, 1});
                    ++n_past;
                }
                break;
            }
        }
        if (n_past >= ctx.n_ctx()) {  // no cell left for this token
            st.stop = StopReason::ContextFull;
            break;
        }
        const BatchToken next{tok, n_past, p.seq, true};
        ctx.decode({&next, 1});
        ++n_past;
    }
    st.t_generate = seconds_since(t0);
    return st;
}

}  // namespace tessel::tools
