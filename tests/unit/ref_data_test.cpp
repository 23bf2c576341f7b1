// Reference kernels and builders for data movement: GET_ROWS, SET_ROWS, CPY, CONT, DUP, CONCAT,
// REPEAT, PAD, FILL, DIAG, TRI, and views.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cpu/ref/ref.hpp"
#include "graph/builder.hpp"
#include "quant/quant.hpp"
#include "ref_test_util.hpp"
#include "support/host_graph.hpp"
#include "tessel/errors.hpp"

using namespace tessel;
using reftest::get;
using reftest::get_i32;
using reftest::run_1_and_3;
using reftest::set;

namespace {

// Quantizes rows of random floats into a block-type tensor's storage; returns the floats.
std::vector<float> fill_quantized(Tensor& t, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> values(static_cast<size_t>(t.n_elements()));
    for (float& v : values) v = dist(rng);
    for (int64_t r = 0; r < t.n_rows(); ++r)
        quant::quantize_row(t.type, values.data() + r * t.ne[0], static_cast<uint8_t*>(t.data) + r * t.nb[1], t.ne[0]);
    return values;
}

std::vector<float> dequantized_row(const Tensor& t, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) {
    std::vector<float> out(static_cast<size_t>(t.ne[0]));
    quant::dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3],
                          out.data(), t.ne[0]);
    return out;
}

}  // namespace

// ---- GET_ROWS ---------------------------------------------------------------------------------

TEST(RefGetRows, F32KnownAnswer) {
    Graph g;
    Tensor* table = g.new_tensor(DType::F32, {2, 3}, "table");
    Tensor* ids = g.new_tensor(DType::I32, {4}, "ids");
    Tensor* out = build::get_rows(g, table, ids);
    g.expand(out);
    test::HostMemory mem(g);
    test::HostMemory::fill(*table, [](int64_t i) { return static_cast<float>(10 * i); });  // rows {0,10} {20,30} {40,50}
    const int32_t id_values[4] = {2, 0, 2, 1};
    std::memcpy(ids->data, id_values, sizeof id_values);
    run_1_and_3(g, {out});
    ASSERT_EQ(out->type, DType::F32);
    const float expect[4][2] = {{40, 50}, {0, 10}, {40, 50}, {20, 30}};
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 2; ++c) EXPECT_EQ(get(*out, c, r), expect[r][c]);
}

TEST(RefGetRows, EveryTableTypeBatchedMatchesDequantizedRows) {
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q8_0,
                       DType::Q4_K, DType::Q6_K, DType::IQ4_NL, DType::MXFP4}) {
        SCOPED_TRACE(dtype_name(type));
        std::mt19937 rng(7);
        Graph g;
        Tensor* table = g.new_tensor(type, {256, 5, 2, 3}, "table");
        Tensor* ids = g.new_tensor(DType::I32, {4, 2, 3}, "ids");
        Tensor* out = build::get_rows(g, table, ids);
        g.expand(out);
        test::HostMemory mem(g);
        if (dtype_info(type).block_size > 1) {
            fill_quantized(*table, rng);
        } else {
            reftest::fill_random(*table, rng);
        }
        reftest::for_each(*ids, [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
            reftest::set_i32(*ids, static_cast<int32_t>((i0 * 3 + i1 + 2 * i2) % 5), i0, i1, i2);
        });
        run_1_and_3(g, {out});
        ASSERT_EQ(out->ne, (std::array<int64_t, 4>{256, 4, 2, 3}));
        for (int64_t b3 = 0; b3 < 3; ++b3)
            for (int64_t b2 = 0; b2 < 2; ++b2)
                for (int64_t i = 0; i < 4; ++i) {
                    const std::vector<float> want = dequantized_row(*table, get_i32(*ids, i, b2, b3), b2, b3);
                    for (int64_t k = 0; k < 256; ++k) ASSERT_EQ(get(*out, k, i, b2, b3), want[static_cast<size_t>(k)]);
                }
    }
}

TEST(RefGetRows, I32TableCopiesExactly) {
    Graph g;
    Tensor* table = g.new_tensor(DType::I32, {3, 4}, "table");
    Tensor* ids = g.new_tensor(DType::I32, {2}, "ids");
    Tensor* out = build::get_rows(g, table, ids);
    g.expand(out);
    test::HostMemory mem(g);
    for (int64_t r = 0; r < 4; ++r)
        for (int64_t c = 0; c < 3; ++c) reftest::set_i32(*table, static_cast<int32_t>(100000007 * r + c), c, r);
    reftest::set_i32(*ids, 3, 0);
    reftest::set_i32(*ids, 1, 1);
    run_1_and_3(g, {out});
    ASSERT_EQ(out->type, DType::I32);
    for (int64_t c = 0; c < 3; ++c) {
        EXPECT_EQ(get_i32(*out, c, 0), 300000021 + c);
        EXPECT_EQ(get_i32(*out, c, 1), 100000007 + c);
    }
}

TEST(RefGetRows, IdOutOfRangeIsAnErrorNotACrash) {
    Graph g;
    Tensor* table = g.new_tensor(DType::F32, {4, 3}, "table");
    Tensor* ids = g.new_tensor(DType::I32, {2}, "ids");
    Tensor* out = build::get_rows(g, table, ids);
    g.expand(out);
    test::HostMemory mem(g);
    reftest::set_i32(*ids, 3, 1);
    EXPECT_THROW(test::run_reference(g, 2), Error);
    reftest::set_i32(*ids, -1, 1);
    EXPECT_THROW(test::run_reference(g, 1), Error);
}

TEST(RefGetRows, BuilderRejectsBadInputs) {
    Graph g;
    Tensor* table = g.new_tensor(DType::F32, {4, 3, 2}, "table");
    EXPECT_THROW(build::get_rows(g, table, g.new_tensor(DType::I64, {2, 2}, "i64")), Error);
    EXPECT_THROW(build::get_rows(g, table, g.new_tensor(DType::I32, {2, 3}, "wrong_batch")), Error);
    EXPECT_NO_THROW(build::get_rows(g, table, g.new_tensor(DType::I32, {5, 2}, "ok")));
}

// ---- SET_ROWS ---------------------------------------------------------------------------------

TEST(RefSetRows, WritesConvertedRowsAndKeepsTheOthers) {
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K})
        for (DType id_type : {DType::I64, DType::I32}) {
            SCOPED_TRACE(std::string(dtype_name(type)) + " ids " + dtype_name(id_type));
            std::mt19937 rng(11);
            Graph g;
            const int64_t K = 256, R = 6, n = 3, B2 = 4;
            Tensor* dst = g.new_tensor(type, {K, R, B2}, "cache");
            Tensor* rows = g.new_tensor(DType::F32, {K, n, B2}, "rows");
            Tensor* ids = g.new_tensor(id_type, {n, 2}, "ids");  // broadcast over B2: B2 % 2 == 0
            Tensor* out = build::set_rows(g, dst, rows, ids);
            g.expand(out);
            test::HostMemory mem(g);
            EXPECT_EQ(out->data, dst->data);
            std::memset(dst->data, 0x3c, dst->n_bytes());
            const std::vector<uint8_t> before = reftest::bytes_of(*dst);
            reftest::fill_random(*rows, rng);
            const int64_t id_values[2][3] = {{4, 0, 2}, {1, 5, 3}};
            for (int64_t c = 0; c < 2; ++c)
                for (int64_t i = 0; i < n; ++i) {
                    if (id_type == DType::I64)
                        reftest::set_i64(*ids, id_values[c][i], i, c);
                    else
                        reftest::set_i32(*ids, static_cast<int32_t>(id_values[c][i]), i, c);
                }
            run_1_and_3(g, {out});
            const uint64_t row_bytes = dst->nb[1];
            const auto* base = static_cast<const uint8_t*>(dst->data);
            for (int64_t b2 = 0; b2 < B2; ++b2)
                for (int64_t r = 0; r < R; ++r) {
                    const uint8_t* got = base + r * dst->nb[1] + b2 * dst->nb[2];
                    int64_t src_row = -1;
                    for (int64_t i = 0; i < n; ++i)
                        if (id_values[b2 % 2][i] == r) src_row = i;
                    std::vector<uint8_t> want(row_bytes);
                    if (src_row < 0) {
                        std::memcpy(want.data(), before.data() + (got - base), row_bytes);
                    } else {
                        std::vector<float> row(K);
                        for (int64_t k = 0; k < K; ++k) row[k] = get(*rows, k, src_row, b2);
                        quant::quantize_row(type, row.data(), want.data(), K);
                    }
                    ASSERT_EQ(std::memcmp(got, want.data(), row_bytes), 0) << "row " << r << " plane " << b2;
                }
        }
}

TEST(RefSetRows, RepeatedIdLastRowWinsForAnyThreadCount) {
    Graph g;
    Tensor* dst = g.new_tensor(DType::F32, {2, 4}, "dst");
    Tensor* rows = g.new_tensor(DType::F32, {2, 5}, "rows");
    Tensor* ids = g.new_tensor(DType::I32, {5}, "ids");
    Tensor* out = build::set_rows(g, dst, rows, ids);
    g.expand(out);
    test::HostMemory mem(g);
    test::HostMemory::fill(*rows, [](int64_t i) { return static_cast<float>(i); });
    const int32_t id_values[5] = {1, 3, 1, 1, 0};
    std::memcpy(ids->data, id_values, sizeof id_values);
    run_1_and_3(g, {out});
    EXPECT_EQ(get(*dst, 0, 1), 6.0f);  // source row 3
    EXPECT_EQ(get(*dst, 1, 1), 7.0f);
    EXPECT_EQ(get(*dst, 0, 3), 2.0f);
    EXPECT_EQ(get(*dst, 0, 0), 8.0f);
    EXPECT_EQ(get(*dst, 0, 2), 0.0f);  // untouched
}

TEST(RefSetRows, BuilderRejectsBadInputs) {
    Graph g;
    Tensor* dst = g.new_tensor(DType::F16, {8, 4}, "dst");
    Tensor* rows = g.new_tensor(DType::F32, {8, 2}, "rows");
    EXPECT_THROW(build::set_rows(g, dst, rows, g.new_tensor(DType::F32, {2}, "f_ids")), Error);
    EXPECT_THROW(build::set_rows(g, dst, rows, g.new_tensor(DType::I64, {3}, "n_mismatch")), Error);
    EXPECT_THROW(build::set_rows(g, dst, g.new_tensor(DType::F32, {4, 2}, "short"), g.new_tensor(DType::I64, {2}, "i")),
                 Error);
    EXPECT_THROW(build::set_rows(g, g.new_tensor(DType::I32, {8, 4}, "i32_dst"), rows, g.new_tensor(DType::I64, {2}, "i")),
                 Error);
}

// ---- CPY / CONT / DUP -------------------------------------------------------------------------

TEST(RefCpy, FloatConversionsRoundToNearestEven) {
    Graph g;
    Tensor* src = g.new_tensor(DType::F32, {4, 3}, "src");
    Tensor* h = g.new_tensor(DType::F16, {4, 3}, "h");
    Tensor* b = g.new_tensor(DType::BF16, {12}, "b");  // other shape, same count
    Tensor* to_h = build::cpy(g, src, h);
    Tensor* to_b = build::cpy(g, src, b);
    Tensor* back = build::cast(g, to_h, DType::F32);
    g.expand(to_h);
    g.expand(to_b);
    g.expand(back);
    test::HostMemory mem(g);
    std::mt19937 rng(3);
    reftest::fill_random(*src, rng, -70000.0f, 70000.0f);
    set(*src, 1.0f + 1.0f / 2048.0f, 0, 0);  // a tie in half precision: rounds to even (1.0)
    run_1_and_3(g, {to_h, to_b, back});
    EXPECT_EQ(get(*h, 0, 0), 1.0f);
    for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 4; ++c) {
            const float x = get(*src, c, r);
            uint16_t hb, bb;
            std::memcpy(&hb, reftest::addr(*h, c, r, 0, 0), 2);
            std::memcpy(&bb, reftest::addr(*b, r * 4 + c, 0, 0, 0), 2);
            EXPECT_EQ(hb, fp32_to_fp16(x));
            EXPECT_EQ(bb, fp32_to_bf16(x));
            EXPECT_EQ(get(*back, c, r), fp16_to_fp32(fp32_to_fp16(x)));
        }
}

TEST(RefCpy, QuantizedBothWaysMatchesRowFunctions) {
    for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q5_1, DType::Q4_K, DType::Q6_K, DType::IQ4_NL}) {
        SCOPED_TRACE(dtype_name(type));
        std::mt19937 rng(5);
        Graph g;
        Tensor* src = g.new_tensor(DType::F32, {256, 3, 2}, "src");
        Tensor* q = g.new_tensor(type, {256, 6}, "q");  // rows matched in order: [256, 3, 2] -> [256, 6]
        Tensor* to_q = build::cpy(g, src, q);
        Tensor* back = build::cast(g, to_q, DType::F32);
        Tensor* same = build::cast(g, to_q, type);  // same block type: bytes copied
        g.expand(back);
        g.expand(same);
        test::HostMemory mem(g);
        reftest::fill_random(*src, rng);
        run_1_and_3(g, {to_q, back, same});
        for (int64_t r = 0; r < 6; ++r) {
            std::vector<float> row(256);
            for (int64_t k = 0; k < 256; ++k) row[k] = get(*src, k, r % 3, r / 3);
            std::vector<uint8_t> want(q->nb[1]);
            quant::quantize_row(type, row.data(), want.data(), 256);
            ASSERT_EQ(std::memcmp(static_cast<uint8_t*>(q->data) + r * q->nb[1], want.data(), want.size()), 0);
            const std::vector<float> deq = dequantized_row(*q, r);
            for (int64_t k = 0; k < 256; ++k) ASSERT_EQ(get(*back, k, r), deq[k]);
        }
        EXPECT_EQ(reftest::bytes_of(*same), reftest::bytes_of(*q));
    }
}

TEST(RefCont, PermutedF32AndF16KnownAnswer) {
    for (DType type : {DType::F32, DType::F16}) {
        Graph g;
        Tensor* a = g.new_tensor(type, {3, 2, 4}, "a");
        Tensor* p = build::permute(g, a, 2, 0, 1, 3);  // [3,2,4] -> [2,4,3]
        Tensor* c = build::cont(g, p);
        Tensor* flat = build::cont(g, p, {24});  // new shape, elements in ne order
        Tensor* d = build::dup(g, p);
        g.expand(c);
        g.expand(flat);
        g.expand(d);
        test::HostMemory mem(g);
        reftest::for_each(*a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
            set(*a, static_cast<float>(100 * i0 + 10 * i1 + i2), i0, i1, i2);
        });
        run_1_and_3(g, {c, flat, d});
        ASSERT_EQ(c->ne, (std::array<int64_t, 4>{2, 4, 3, 1}));
        EXPECT_TRUE(c->is_contiguous());
        EXPECT_EQ(c->type, type);
        int64_t n = 0;
        reftest::for_each(*c, [&](int64_t j0, int64_t j1, int64_t j2, int64_t) {
            // destination (j0, j1, j2) holds source (i0 = j2, i1 = j0, i2 = j1)
            const float want = static_cast<float>(100 * j2 + 10 * j0 + j1);
            EXPECT_EQ(get(*c, j0, j1, j2), want);
            EXPECT_EQ(get(*flat, n++), want);
            EXPECT_EQ(get(*d, j0, j1, j2), want);
        });
    }
}

TEST(RefCpy, TransposedIntoViewOfLargerTensor) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {3, 2}, "a");
    Tensor* big = g.new_tensor(DType::F16, {4, 5}, "big");
    Tensor* window = build::view_2d(g, big, 2, 3, big->nb[1], 1 * big->nb[1] + 2 * sizeof(uint16_t));  // rows 1..3, cols 2..3
    Tensor* out = build::cpy(g, build::transpose(g, a), window);
    g.expand(out);
    test::HostMemory mem(g);
    test::HostMemory::fill(*a, [](int64_t i) { return static_cast<float>(i + 1); });  // a[c, r] = 3r + c + 1
    run_1_and_3(g, {out});
    for (int64_t r = 0; r < 5; ++r)
        for (int64_t c = 0; c < 4; ++c) {
            const bool inside = r >= 1 && r <= 3 && c >= 2;
            // window (j0, j1) = transpose(a)(j0, j1) = a(j1, j0)
            const float want = inside ? static_cast<float>(3 * (c - 2) + (r - 1) + 1) : 0.0f;
            EXPECT_EQ(get(*big, c, r), want) << c << "," << r;
        }
}

TEST(RefCpy, BuilderRejectsBadInputs) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {64, 2}, "a");
    EXPECT_THROW(build::cpy(g, a, g.new_tensor(DType::F32, {64, 3}, "count")), Error);
    EXPECT_THROW(build::cpy(g, a, g.new_tensor(DType::Q8_0, {128}, "q_other_rows")), Error);
    EXPECT_THROW(build::cast(g, g.new_tensor(DType::F32, {48}, "odd"), DType::Q8_0), Error);
    EXPECT_THROW(build::cont(g, a, {5, 5}), Error);
    EXPECT_NO_THROW(build::cast(g, a, DType::Q8_0));
}

// ---- CONCAT / REPEAT / PAD --------------------------------------------------------------------

TEST(RefConcat, EveryDimAgainstIndexFormula) {
    for (int dim = 0; dim < 4; ++dim) {
        SCOPED_TRACE(dim);
        Graph g;
        std::array<int64_t, 4> na{2, 3, 2, 2}, nb{2, 3, 2, 2};
        nb[dim] = 3;
        Tensor* a = g.new_tensor(DType::F32, {na[0], na[1], na[2], na[3]}, "a");
        // b is a permuted view (non-contiguous): stored as [nb1, nb0, nb2, nb3], swapped back.
        Tensor* bs = g.new_tensor(DType::F32, {nb[1], nb[0], nb[2], nb[3]}, "b_storage");
        Tensor* b = build::transpose(g, bs);
        Tensor* out = build::concat(g, a, b, dim);
        g.expand(out);
        test::HostMemory mem(g);
        reftest::for_each(*a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            set(*a, static_cast<float>(i0 + 10 * i1 + 100 * i2 + 1000 * i3), i0, i1, i2, i3);
        });
        reftest::for_each(*b, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            set(*b, -static_cast<float>(1 + i0 + 10 * i1 + 100 * i2 + 1000 * i3), i0, i1, i2, i3);
        });
        run_1_and_3(g, {out});
        EXPECT_EQ(out->ne[dim], na[dim] + nb[dim]);
        reftest::for_each(*out, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            int64_t c[4] = {i0, i1, i2, i3};
            const bool from_b = c[dim] >= na[dim];
            if (from_b) c[dim] -= na[dim];
            const float v = static_cast<float>(c[0] + 10 * c[1] + 100 * c[2] + 1000 * c[3]);
            ASSERT_EQ(get(*out, i0, i1, i2, i3), from_b ? -(v + 1) : v);
        });
    }
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {2, 3}, "a");
    EXPECT_THROW(build::concat(g, a, g.new_tensor(DType::F32, {2, 4}, "b"), 0), Error);
    EXPECT_THROW(build::concat(g, a, g.new_tensor(DType::F16, {2, 3}, "h"), 0), Error);
    EXPECT_THROW(build::concat(g, a, a, 4), Error);
}

TEST(RefRepeat, TilesEveryDim) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F16, {2, 1, 3}, "a");
    Tensor* like = g.new_tensor(DType::F32, {4, 2, 6, 2}, "like");
    Tensor* out = build::repeat(g, a, like);
    g.expand(out);
    test::HostMemory mem(g);
    reftest::for_each(*a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
        set(*a, static_cast<float>(i0 + 10 * i2), i0, i1, i2);
    });
    run_1_and_3(g, {out});
    EXPECT_EQ(out->type, DType::F16);
    reftest::for_each(*out, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        ASSERT_EQ(get(*out, i0, i1, i2, i3), static_cast<float>(i0 % 2 + 10 * (i2 % 3)));
    });
    EXPECT_THROW(build::repeat(g, a, {3, 1, 3}), Error);
}

TEST(RefPad, ZerosBeforeAndAfter) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {2, 3}, "a");
    Tensor* out = build::pad_ext(g, a, 1, 2, 0, 1, 1, 0);
    Tensor* simple = build::pad(g, a, 1, 1);
    g.expand(out);
    g.expand(simple);
    test::HostMemory mem(g);
    test::HostMemory::fill(*a, [](int64_t i) { return static_cast<float>(i + 1); });
    run_1_and_3(g, {out, simple});
    ASSERT_EQ(out->ne, (std::array<int64_t, 4>{5, 4, 2, 1}));
    reftest::for_each(*out, [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
        const bool inside = i0 >= 1 && i0 < 3 && i1 < 3 && i2 == 1;
        ASSERT_EQ(get(*out, i0, i1, i2), inside ? static_cast<float>(1 + (i0 - 1) + 2 * i1) : 0.0f);
    });
    reftest::for_each(*simple, [&](int64_t i0, int64_t i1, int64_t, int64_t) {
        ASSERT_EQ(get(*simple, i0, i1), i0 < 2 && i1 < 3 ? static_cast<float>(1 + i0 + 2 * i1) : 0.0f);
    });
    EXPECT_THROW(build::pad(g, a, -1), Error);
}

// ---- FILL / DIAG / TRI ------------------------------------------------------------------------

TEST(RefFillDiagTri, KnownAnswers) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {3, 3, 2}, "a");
    Tensor* v = g.new_tensor(DType::F32, {3, 1, 2}, "v");
    Tensor* filled = build::fill(g, a, -2.5f);
    Tensor* dg = build::diag(g, v);
    Tensor* tris[4];
    for (int t = 0; t < 4; ++t) {
        tris[t] = build::tri(g, build::transpose(g, a), static_cast<TriType>(t));  // non-contiguous source
        g.expand(tris[t]);
    }
    g.expand(filled);
    g.expand(dg);
    test::HostMemory mem(g);
    test::HostMemory::fill(*a, [](int64_t i) { return static_cast<float>(i + 1); });
    test::HostMemory::fill(*v, [](int64_t i) { return static_cast<float>(7 * (i + 1)); });
    run_1_and_3(g, {filled, dg, tris[0], tris[1], tris[2], tris[3]});
    reftest::for_each(*filled, [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
        ASSERT_EQ(get(*filled, i0, i1, i2), -2.5f);
    });
    ASSERT_EQ(dg->ne, (std::array<int64_t, 4>{3, 3, 2, 1}));
    reftest::for_each(*dg, [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
        ASSERT_EQ(get(*dg, i0, i1, i2), i0 == i1 ? static_cast<float>(7 * (i0 + 1 + 3 * i2)) : 0.0f);
    });
    // Source of tri is transpose(a): element [i0, i1] = a[i1, i0].
    auto src = [&](int64_t i0, int64_t i1, int64_t i2) { return static_cast<float>(1 + i1 + 3 * i0 + 9 * i2); };
    for (int t = 0; t < 4; ++t)
        reftest::for_each(*tris[t], [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
            const bool keep = t == 0 ? i0 < i1 : t == 1 ? i0 <= i1 : t == 2 ? i0 > i1 : i0 >= i1;
            ASSERT_EQ(get(*tris[t], i0, i1, i2), keep ? src(i0, i1, i2) : 0.0f) << "type " << t;
        });
    // LOWER_DIAG of the 3x3 plane 0 of transpose(a) explicitly: rows {1,0,0} {2,5,0} {3,6,9}
    const float lower_diag[3][3] = {{1, 0, 0}, {2, 5, 0}, {3, 6, 9}};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) EXPECT_EQ(get(*tris[1], c, r), lower_diag[r][c]);
    EXPECT_THROW(build::tri(g, g.new_tensor(DType::F32, {3, 2}, "rect"), TriType::LOWER), Error);
    EXPECT_THROW(build::diag(g, a), Error);
    EXPECT_THROW(build::fill(g, g.new_tensor(DType::I32, {3}, "i"), 1.0f), Error);
}

// ---- views and supports() ---------------------------------------------------------------------

TEST(RefView, ViewsReadTheRightBytesAndStayInBounds) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {4, 3, 2}, "a");
    Tensor* v1 = build::view_1d(g, a, 5, 3 * sizeof(float));
    Tensor* v3 = build::view_3d(g, a, 2, 2, 2, a->nb[1], a->nb[2], 1 * a->nb[1] + 1 * sizeof(float));
    Tensor* c1 = build::cont(g, v1);
    Tensor* c3 = build::cont(g, v3);
    g.expand(c1);
    g.expand(c3);
    test::HostMemory mem(g);
    test::HostMemory::fill(*a, [](int64_t i) { return static_cast<float>(i); });
    run_1_and_3(g, {c1, c3});
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(get(*c1, i), static_cast<float>(3 + i));
    reftest::for_each(*c3, [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
        EXPECT_EQ(get(*c3, i0, i1, i2), static_cast<float>(1 + i0 + 4 * (1 + i1) + 12 * i2));
    });
    EXPECT_THROW(build::view_1d(g, a, 24, 4), Error);                       // one past the end
    EXPECT_THROW(build::view_2d(g, a, 4, 7, a->nb[1], 0), Error);           // too many rows
    EXPECT_THROW(build::view_1d(g, g.new_tensor(DType::Q8_0, {64}, "q"), 16, 0), Error);  // not whole blocks
    Tensor* inner = build::view_1d(g, a, 12, 12 * sizeof(float));           // view of the second half
    EXPECT_THROW(build::view_1d(g, inner, 12, 4), Error);                   // offsets add up
    EXPECT_NO_THROW(build::view_1d(g, inner, 11, 4));
}

TEST(RefSupports, RejectsUnsupportedCombinations) {
    Graph g;
    Tensor* q = g.new_tensor(DType::Q8_0, {32, 2}, "q");
    Tensor* f = g.new_tensor(DType::F32, {32, 2}, "f");
    // CONCAT of block types (hand-built node: the builder already refuses it).
    Tensor* cat = g.new_node(Op::CONCAT, DType::Q8_0, {32, 4, 1, 1}, {q, q});
    EXPECT_FALSE(cpu::ref::supports(*cat));
    // GET_ROWS with I64 ids.
    Tensor* ids64 = g.new_tensor(DType::I64, {2}, "ids64");
    Tensor* gr = g.new_node(Op::GET_ROWS, DType::F32, {32, 2, 1, 1}, {f, ids64});
    EXPECT_FALSE(cpu::ref::supports(*gr));
    // CPY from F32 into an I32 tensor (no conversion), and between different row lengths with a block type.
    EXPECT_FALSE(cpu::ref::supports(*g.new_node(Op::CPY, DType::I32, {32, 2, 1, 1}, {f})));
    EXPECT_FALSE(cpu::ref::supports(*g.new_node(Op::CPY, DType::Q8_0, {64, 1, 1, 1}, {f})));
    // CONT that changes the type.
    EXPECT_FALSE(cpu::ref::supports(*g.new_node(Op::CONT, DType::F16, {32, 2, 1, 1}, {f})));
    // TRI with an unknown type.
    Tensor* sq = g.new_tensor(DType::F32, {3, 3}, "sq");
    Tensor* tr = g.new_node(Op::TRI, DType::F32, {3, 3, 1, 1}, {sq});
    tr->op_params[0] = 9;
    EXPECT_FALSE(cpu::ref::supports(*tr));
    // and the supported ones report so
    EXPECT_TRUE(cpu::ref::supports(*build::cast(g, f, DType::Q8_0)));
    EXPECT_TRUE(cpu::ref::supports(*build::get_rows(g, q, g.new_tensor(DType::I32, {3}, "ids"))));
}
