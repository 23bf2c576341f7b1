// The architecture table on tiny random models of each architecture (tests/support/tiny_llama.hpp):
// what each entry reads (keys, required weights), that its graph runs the same whatever the
// ubatch size and attention path, and that gemma3's sliding window hides exactly the positions
// outside it. The graphs' arithmetic is checked against llama.cpp on real-shaped models in
// tests/models/.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cpu/cpu_backend.hpp"
#include "model/kv_cache.hpp"
#include "runtime/context.hpp"
#include "support/nmse.hpp"
#include "support/test_paths.hpp"
#include "support/tiny_llama.hpp"
#include "tessel/engine.hpp"
#include "tessel/errors.hpp"

namespace tessel {
namespace {

using runtime::BatchToken;
using runtime::Context;
using runtime::ContextParams;
using runtime::FlashAttn;

test::TinyLlamaOptions layout(const std::string& name, int64_t n_swa = 0) {
    test::TinyLlamaOptions o;
    o.arch = o.layout = name;
    o.n_swa = n_swa;
    o.tied_output = name != "llama";
    return o;
}

std::shared_ptr<const model::Model> load(const test::TinyLlamaOptions& o, const std::string& tag = "") {
    const auto path = test::temp_dir() / ("tiny-" + o.layout + tag + ".gguf");
    return model::Model::load(test::write_tiny_llama(path, o).string(), {&cpu::cpu_device()});
}

ContextParams params(int64_t n_ubatch = 512, FlashAttn fa = FlashAttn::On) {
    ContextParams p;
    p.n_ctx = 128;
    p.n_ubatch = n_ubatch;
    p.n_threads = 2;
    p.flash_attn = fa;
    return p;
}

std::vector<std::vector<float>> run(Context& ctx, const std::vector<int32_t>& tokens) {
    std::vector<BatchToken> b;
    for (size_t i = 0; i < tokens.size(); ++i) b.push_back({tokens[i], static_cast<int32_t>(i), 0, true});
    ctx.decode(b);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < ctx.n_outputs(); ++i) out.emplace_back(ctx.logits(i).begin(), ctx.logits(i).end());
    return out;
}

std::vector<int32_t> tokens(size_t n, int32_t first = 11) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 37 + static_cast<size_t>(first)) % 160);
    return t;
}

TEST(Arch, TableEntriesReadTheirKeysAndWeights) {
    auto llama = load(layout("llama"));
    EXPECT_FALSE(llama->hparams().rope_neox);
    EXPECT_EQ(llama->layer(0).bq, nullptr);
    EXPECT_EQ(llama->layer(0).q_norm, nullptr);

    auto qwen2 = load(layout("qwen2"));
    EXPECT_TRUE(qwen2->hparams().rope_neox);
    ASSERT_NE(qwen2->layer(1).bk, nullptr);
    EXPECT_EQ(qwen2->layer(1).bk->ne[0], 64);  // n_head_kv 2 x head_dim 32
    EXPECT_EQ(qwen2->output(), qwen2->tok_embd());

    auto qwen3 = load(layout("qwen3"));
    EXPECT_TRUE(qwen3->hparams().rope_neox);
    ASSERT_NE(qwen3->layer(0).q_norm, nullptr);
    EXPECT_EQ(qwen3->layer(0).q_norm->ne[0], 32);

    auto gemma3 = load(layout("gemma3", 8));
    const model::Hparams& hp = gemma3->hparams();
    EXPECT_TRUE(hp.rope_neox);
    EXPECT_EQ(hp.n_swa, 8);
    EXPECT_FLOAT_EQ(hp.rope_freq_base_swa, 10000.0f);
    EXPECT_FLOAT_EQ(hp.attn_scale, 1.0f / std::sqrt(32.0f));
    EXPECT_TRUE(hp.is_swa(0) && hp.is_swa(1));  // default pattern: every 6th layer global
    ASSERT_NE(gemma3->layer(1).ffn_post_norm, nullptr);
}

TEST(Arch, SlidingWindowPatternFromTheFile) {
    test::TinyLlamaOptions o = layout("gemma3", 8);
    o.n_layer = 3;
    o.overrides = {{"gemma3.attention.sliding_window_pattern", gguf::Value::u32(2)},
                   {"gemma3.rope.freq_base_swa", gguf::Value::f32(500.0f)}};
    auto m = load(o, "-pattern");
    EXPECT_TRUE(m->hparams().is_swa(0));
    EXPECT_FALSE(m->hparams().is_swa(1));
    EXPECT_TRUE(m->hparams().is_swa(2));
    EXPECT_FLOAT_EQ(m->hparams().rope_freq_base_swa, 500.0f);
    o.overrides = {{"gemma3.attention.sliding_window_pattern", gguf::Value::array(gguf::ValueType::BOOL,
                                                                                  {gguf::Value::boolean(false), gguf::Value::boolean(true),
                                                                                   gguf::Value::boolean(false)})}};
    m = load(o, "-flags");
    EXPECT_FALSE(m->hparams().is_swa(0));
    EXPECT_TRUE(m->hparams().is_swa(1));
    EXPECT_FALSE(m->hparams().is_swa(2));
    o.overrides = {{"gemma3.attention.sliding_window_pattern", gguf::Value::array(gguf::ValueType::BOOL, {gguf::Value::boolean(true)})}};
    try {
        load(o, "-badflags");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::BadModel);
        EXPECT_NE(std::string(e.what()).find("gemma3.attention.sliding_window_pattern must be a bool per layer (3)"), std::string::npos) << e.what();
    }
}

TEST(Arch, MissingWeightOfAnArchitectureIsNamed) {
    for (const auto& [arch, weight] : {std::pair{"gemma3", "blk.1.post_ffw_norm.weight"}, std::pair{"qwen3", "blk.0.attn_k_norm.weight"}}) {
        test::TinyLlamaOptions o = layout(arch, 8);
        o.omit = weight;
        try {
            load(o, "-missing");
            ADD_FAILURE() << arch << ": no error";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::BadModel);
            EXPECT_NE(std::string(e.what()).find("missing tensor '" + std::string(weight) + "'"), std::string::npos) << e.what();
        }
    }
    // Optional weights stay optional: qwen2 without its biases loads, and runs as a llama with NEOX rope.
    test::TinyLlamaOptions o = layout("qwen2");
    o.omit = "blk.0.attn_v.bias";
    EXPECT_EQ(load(o, "-nobias")->layer(0).bv, nullptr);
}

TEST(Arch, UnknownArchitectureListsTheTable) {
    test::TinyLlamaOptions o = layout("llama");
    o.arch = "mamba";
    try {
        load(o, "-unknown");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_NE(std::string(e.what()).find("unknown architecture 'mamba' (supported: llama, qwen2, qwen3, gemma3)"), std::string::npos)
            << e.what();
    }
}

// Every architecture's graph gives the same logits for one ubatch, ubatches of 1 and 5, and with
// flash attention off (plain weights: per-row arithmetic, exact except the attention path, which is
// held to FLASH_ATTN_EXT's test-ops bound, NMSE 5e-4: the AVX2 kernel's exp is a polynomial, and
// qwen2's biases made one token of this random model differ by 7.8e-5 on Zen 3).
TEST(Arch, EveryGraphAgreesAcrossUbatchesAndAttentionPaths) {
    for (const char* name : {"llama", "qwen2", "qwen3", "gemma3"}) {
        auto m = load(layout(name, 8));
        const auto t = tokens(24);
        Context whole(m, params());
        const auto ref = run(whole, t);
        ASSERT_EQ(ref.size(), t.size());
        for (int64_t ub : {1, 5}) {
            Context ctx(m, params(ub));
            const auto got = run(ctx, t);
            for (size_t i = 0; i < ref.size(); ++i)
                ASSERT_LE(test::nmse(got[i], ref[i]), 1e-10) << name << " ub " << ub << " token " << i;
        }
        Context off(m, params(512, FlashAttn::Off));
        const auto got = run(off, t);
        for (size_t i = 0; i < ref.size(); ++i) EXPECT_LT(test::nmse(got[i], ref[i]), 5e-4) << name << " fa off, token " << i;
    }
}

// gemma3 with a window of 4 on both layers: position p sees positions p-3..p in each layer, so
// its logits depend on tokens p-6..p only. Changing token 0 must leave positions 7 and later
// untouched and change positions 0..6.
TEST(Arch, SlidingWindowHidesOnlyPositionsOutsideIt) {
    auto m = load(layout("gemma3", 4), "-window");
    for (FlashAttn fa : {FlashAttn::On, FlashAttn::Off}) {
        auto a = tokens(16), b = a;
        b[0] = (a[0] + 1) % 160;
        Context ca(m, params(512, fa)), cb(m, params(512, fa));
        const auto la = run(ca, a), lb = run(cb, b);
        for (size_t p = 0; p < la.size(); ++p) {
            const double d = test::nmse(lb[p], la[p]);
            if (p <= 6) EXPECT_GT(d, 1e-6) << "position " << p << " should see token 0";
            else EXPECT_EQ(d, 0.0) << "position " << p << " should not see token 0";
        }
    }
}

// A gemma3 file without tokenizer.chat_template (gemma-3-270m's GGUF has none) chats in the
// Gemma format; other architectures have no default, and a file's own template wins.
TEST(Arch, ChatTemplateDefaultsToTheArchitecturesFormat) {
    auto chat_template = [](test::TinyLlamaOptions o, const std::string& tag) {
        o.vocab = true;
        const auto path = test::write_tiny_llama(test::temp_dir() / ("tiny-chat-" + tag + ".gguf"), o);
        return Model::load(path.string(), "cpu")->chat_template();
    };
    EXPECT_EQ(chat_template(layout("gemma3", 8), "gemma3"), "gemma");
    EXPECT_EQ(chat_template(layout("qwen3"), "qwen3"), "");
    test::TinyLlamaOptions own = layout("gemma3", 8);
    own.overrides = {{"tokenizer.chat_template", gguf::Value::string("{{ '<|im_start|>' }}")}};
    EXPECT_EQ(chat_template(own, "own"), "{{ '<|im_start|>' }}");
    const ChatMessage user{"user", "Hi"};
    EXPECT_EQ(apply_chat_template("gemma", {&user, 1}, true), "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
}

TEST(KvCacheMask, SlidingWindowMasksPositionsBeforeIt) {
    model::Hparams hp;
    hp.n_layer = 1, hp.n_head = hp.n_head_kv = 1, hp.head_dim = 32, hp.n_embd = 32;
    model::KvCache kv(hp, 8, DType::F16, DType::F16, cpu::cpu_device().buffer_type());
    for (int32_t p = 0; p < 6; ++p) kv.occupy(p, p, 0);
    const std::vector<int32_t> pos{5}, seq{0};
    std::vector<uint16_t> full(8), window(8);
    kv.fill_mask(pos, seq, 8, full.data());
    kv.fill_mask(pos, seq, 8, window.data(), 3);  // sees positions 3, 4, 5
    for (int c = 0; c < 8; ++c) {
        EXPECT_EQ(full[c] == 0, c <= 5) << "cell " << c;
        EXPECT_EQ(window[c] == 0, c >= 3 && c <= 5) << "cell " << c;
    }
}

}  // namespace
}  // namespace tessel
