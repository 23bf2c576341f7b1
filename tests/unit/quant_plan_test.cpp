// The per-tensor types of `tessel quantize` (model/quant_plan.hpp) on tiny llama GGUFs. Expected
// types are llama.cpp's rules (src/llama-quant.cpp, llama-cpp-python 0.3.36) worked out by hand
// for each model; e.g. Q4_K_M's "more bits" layers of 8 are i < 8/8, i >= 7·8/8 and
// (i - 1) % 3 == 2, i.e. {0, 3, 6, 7}.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "model/quant_plan.hpp"
#include "support/test_paths.hpp"
#include "support/tiny_llama.hpp"
#include "tessel/errors.hpp"

namespace tessel {
namespace {

using model::QuantOptions;

struct Tiny {
    DType type = DType::F32;
    int64_t n_embd = 128, n_ff = 256, n_layer = 8, n_head_kv = 2;
    bool tied = false;
};

gguf::File tiny_file(const Tiny& t) {
    test::TinyLlamaOptions o;
    o.matrix_type = t.type;
    o.n_embd = t.n_embd;
    o.n_ff = t.n_ff;
    o.n_layer = t.n_layer;
    o.n_head_kv = t.n_head_kv;
    o.tied_output = t.tied;
    return gguf::File::open(test::write_tiny_llama(test::temp_dir() / "tiny.gguf", o).string());
}

/// name -> chosen type
std::map<std::string, DType> plan_types(const gguf::File& f, const char* type, QuantOptions opt = {}) {
    std::map<std::string, DType> out;
    for (const auto& p : model::plan_quantization(f, model::find_quant_target(type), opt).tensors) out[p.info->name] = p.to;
    return out;
}

/// Expected type of every tensor: `by_role(role, layer)` for blk tensors ("attn_q", ...),
/// layer -1 for token_embd / output; norms F32.
template <class F>
void expect_types(const std::map<std::string, DType>& got, int64_t n_layer, F by_role) {
    for (const auto& [name, type] : got) {
        SCOPED_TRACE(name);
        if (name.find("norm") != std::string::npos) {
            EXPECT_EQ(type, DType::F32);
        } else if (name.starts_with("blk.")) {
            const size_t dot = name.find('.', 4);
            const int layer = std::stoi(name.substr(4, dot - 4));
            ASSERT_LT(layer, n_layer);
            EXPECT_EQ(dtype_name(type), std::string(dtype_name(by_role(name.substr(dot + 1, name.size() - dot - 8), layer))));
        } else {
            EXPECT_EQ(dtype_name(type), std::string(dtype_name(by_role(name.substr(0, name.size() - 7), -1))));
        }
    }
}

const std::set<int> kMoreBits8 = {0, 3, 6, 7};

TEST(QuantPlan, Q4KMixtureWithRowsOf256) {
    const gguf::File f = tiny_file({.n_embd = 256, .n_ff = 512, .tied = true});
    expect_types(plan_types(f, "Q4_K"), 8, [](const std::string& role, int layer) {
        if (role == "token_embd") return DType::Q6_K;  // tied: the output's rule
        if ((role == "attn_v" || role == "ffn_down") && kMoreBits8.count(layer)) return DType::Q6_K;
        return DType::Q4_K;
    });
}

TEST(QuantPlan, Q4KFallsBackForRowsNotMultipleOf256) {
    // n_embd 128: every row except ffn_down's (n_ff 256) needs a 32-block fallback.
    const gguf::File f = tiny_file({});
    expect_types(plan_types(f, "q4_k_m"), 8, [](const std::string& role, int layer) {
        if (role == "output") return DType::Q8_0;      // rows not a multiple of Q4_K's 256
        if (role == "token_embd") return DType::Q5_0;  // untied: Q4_K -> Q5_0
        const bool more = kMoreBits8.count(layer) > 0;
        if (role == "ffn_down") return more ? DType::Q6_K : DType::Q4_K;
        if (role == "attn_v") return more ? DType::Q8_0 : DType::Q5_0;  // Q6_K -> Q8_0, Q4_K -> Q5_0
        return DType::Q5_0;
    });
}

TEST(QuantPlan, LegacyTypesGiveTheOutputQ6KOrQ8_0) {
    const gguf::File f = tiny_file({.n_embd = 256, .n_ff = 512, .tied = false});
    expect_types(plan_types(f, "Q4_0"), 8, [](const std::string& role, int) {
        return role == "output" ? DType::Q6_K : DType::Q4_0;
    });
    expect_types(plan_types(f, "Q5_1"), 8, [](const std::string& role, int) {
        return role == "output" ? DType::Q6_K : DType::Q5_1;
    });
    expect_types(plan_types(f, "Q8_0"), 8, [](const std::string&, int) { return DType::Q8_0; });
    // Tied, n_embd 128: token_embd Q6_K -> Q8_0.
    const gguf::File g = tiny_file({.tied = true});
    expect_types(plan_types(g, "Q4_1"), 8, [](const std::string& role, int) {
        return role == "token_embd" ? DType::Q8_0 : DType::Q4_1;
    });
}

TEST(QuantPlan, Q6KAndF16) {
    const gguf::File f = tiny_file({});
    expect_types(plan_types(f, "Q6_K"), 8, [](const std::string& role, int) {
        return role == "ffn_down" ? DType::Q6_K : DType::Q8_0;  // rows of 128: Q6_K -> Q8_0
    });
    expect_types(plan_types(f, "F16"), 8, [](const std::string&, int) { return DType::F16; });
}

TEST(QuantPlan, Iq4NlMixture) {
    // n_head 4 over 1 KV head: n_gqa 4, so attn_v gets Q5_K; ffn_down of layer 0 (< 8/8) Q5_K.
    const gguf::File f = tiny_file({.n_embd = 256, .n_ff = 512, .n_head_kv = 1, .tied = true});
    expect_types(plan_types(f, "IQ4_NL"), 8, [](const std::string& role, int layer) {
        if (role == "token_embd") return DType::Q6_K;
        if (role == "attn_v" || (role == "ffn_down" && layer == 0)) return DType::Q5_K;
        return DType::IQ4_NL;
    });
    // n_gqa 2 and rows of 128: attn_v stays IQ4_NL; ffn_down's Q5_K rows are 256 long.
    const gguf::File g = tiny_file({.tied = true});
    expect_types(plan_types(g, "IQ4_NL"), 8, [](const std::string& role, int layer) {
        if (role == "token_embd") return DType::Q8_0;
        if (role == "ffn_down" && layer == 0) return DType::Q5_K;
        return DType::IQ4_NL;
    });
}

TEST(QuantPlan, Mxfp4IsLlamaCppsMoeMixture) {
    // A dense model has no expert tensors (ne[2] > 1): everything quantized becomes Q8_0.
    const gguf::File f = tiny_file({.n_embd = 256, .n_ff = 512});
    expect_types(plan_types(f, "MXFP4"), 8, [](const std::string&, int) { return DType::Q8_0; });
    expect_types(plan_types(f, "MXFP4", {.pure = true}), 8, [](const std::string&, int) { return DType::MXFP4; });
}

TEST(QuantPlan, PureAppliesTypeToEveryMatrixWithFallbacks) {
    const gguf::File f = tiny_file({.n_embd = 256, .n_ff = 512});
    expect_types(plan_types(f, "Q4_K", {.pure = true}), 8, [](const std::string&, int) { return DType::Q4_K; });
    const gguf::File g = tiny_file({});
    expect_types(plan_types(g, "Q6_K", {.pure = true}), 8, [](const std::string& role, int) {
        return role == "ffn_down" ? DType::Q6_K : DType::Q8_0;
    });
}

TEST(QuantPlan, RowsNotMultipleOf32FallBackToF16) {
    // n_embd 144: rows of 144 fit no 32-block type; ffn_down rows (n_ff 256) do.
    const gguf::File f = tiny_file({.n_embd = 144, .n_layer = 2});
    expect_types(plan_types(f, "Q4_0", {.pure = true}), 2, [](const std::string& role, int) {
        return role == "ffn_down" ? DType::Q4_0 : DType::F16;
    });
    expect_types(plan_types(f, "Q4_K"), 2, [](const std::string& role, int layer) {
        if (role == "ffn_down") return layer == 1 ? DType::Q6_K : DType::Q4_K;  // of 2: i >= 7·2/8 = 1
        return DType::F16;  // output Q8_0, attn_v Q4_K -> Q5_0 / Q6_K -> Q8_0: none fits 144
    });
}

TEST(QuantPlan, RequantizingNeedsPermission) {
    const gguf::File f = tiny_file({.type = DType::Q8_0});
    try {
        plan_types(f, "Q4_0");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        const std::string msg = e.what();
        EXPECT_NE(msg.find("tensor "), std::string::npos) << msg;
        EXPECT_NE(msg.find("Q8_0 -> "), std::string::npos) << msg;
        EXPECT_NE(msg.find("--allow-requantize"), std::string::npos) << msg;
    }
    EXPECT_EQ(plan_types(f, "Q4_0", {.allow_requantize = true}).at("blk.0.attn_q.weight"), DType::Q4_0);
    // Nothing changes type: no permission needed.
    EXPECT_EQ(plan_types(f, "Q8_0").at("output.weight"), DType::Q8_0);
}

TEST(QuantPlan, TargetsAndFileTypes) {
    // LLAMA_FTYPE_* values from llama.h.
    const std::map<std::string, uint32_t> expected = {
        {"Q4_0", 2}, {"Q4_1", 3}, {"Q5_0", 8}, {"Q5_1", 9}, {"Q8_0", 7}, {"IQ4_NL", 25},
        {"MXFP4", 38}, {"MXFP4_MOE", 38}, {"Q4_K", 15}, {"Q4_K_M", 15}, {"Q6_K", 18}, {"F16", 1},
    };
    EXPECT_EQ(model::quant_targets().size(), expected.size());
    for (const auto& [name, ftype] : expected) EXPECT_EQ(model::find_quant_target(name).file_type, ftype) << name;
    EXPECT_EQ(model::find_quant_target("iq4_nl").default_type, DType::IQ4_NL);
    try {
        model::find_quant_target("Q3_K");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("'Q3_K'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("valid: Q4_0, Q4_1"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tessel
