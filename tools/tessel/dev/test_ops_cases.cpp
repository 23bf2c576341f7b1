// test-ops cases: the leaf maker, and the cases of data movement, element-wise ops and
// reductions (matrix products and attention are in test_ops_cases_mat.cpp).
//
// Shapes are chosen to hit edges: odd sizes, row counts that are not multiples of the thread
// counts (1, 2, 4), broadcasting, non-contiguous (transposed / permuted) sources, and for block
// types ne[0] = a few blocks plus a tail block. `core` cases form the fixed part of --ci.
#include <array>

#include "graph/builder.hpp"
#include "test_ops.hpp"

namespace tessel::cli::test_ops {

// ---- Maker ---------------------------------------------------------------------------------

namespace {

std::array<int64_t, kMaxDims> dims4(std::initializer_list<int64_t> ne) {
    std::array<int64_t, kMaxDims> d{1, 1, 1, 1};
    int i = 0;
    for (int64_t v : ne) d[static_cast<size_t>(i++)] = v;
    return d;
}

}  // namespace

Tensor* Maker::leaf(DType t, std::initializer_list<int64_t> ne) {
    Tensor* x = g_.new_tensor(t, ne, "src" + std::to_string(leaves_.size()));
    x->flags |= kFlagInput;
    leaves_.push_back({});
    leaves_.back().t = x;
    return x;
}

Tensor* Maker::input(DType t, std::initializer_list<int64_t> ne, float lo, float hi) {
    Tensor* x = leaf(t, ne);
    leaves_.back().lo = lo;
    leaves_.back().hi = hi;
    return x;
}

Tensor* Maker::input_t(DType t, std::initializer_list<int64_t> ne, float lo, float hi) {
    const auto d = dims4(ne);
    Tensor* x = input(t, {d[1], d[0], d[2], d[3]}, lo, hi);
    return build::transpose(g_, x);
}

Tensor* Maker::input_p(DType t, std::initializer_list<int64_t> ne, float lo, float hi) {
    const auto d = dims4(ne);
    Tensor* x = input(t, {d[0], d[2], d[1], d[3]}, lo, hi);
    return build::permute(g_, x, 0, 2, 1, 3);
}

Tensor* Maker::q8_grid(DType t, std::initializer_list<int64_t> ne) {
    Tensor* x = leaf(t, ne);
    leaves_.back().fill = Fill::Q8Grid;
    return x;
}

Tensor* Maker::weight(DType t, std::initializer_list<int64_t> ne) {
    Tensor* x = leaf(t, ne);
    x->flags = kFlagWeight;
    leaves_.back().weight = true;
    return x;
}

Tensor* Maker::ids(DType t, std::initializer_list<int64_t> ne, int64_t n, bool distinct, int64_t invalid_every) {
    Tensor* x = leaf(t, ne);
    LeafSpec& s = leaves_.back();
    s.fill = Fill::Ids;
    s.n = n;
    s.distinct = distinct;
    s.invalid_every = invalid_every;
    return x;
}

Tensor* Maker::positions(int64_t n_tokens) {
    Tensor* x = leaf(DType::I32, {n_tokens});
    leaves_.back().fill = Fill::Positions;
    leaves_.back().n = 4096;
    return x;
}

Tensor* Maker::mask(DType t, std::initializer_list<int64_t> ne, float p_inf, std::vector<int64_t> inf_rows) {
    Tensor* x = leaf(t, ne);
    LeafSpec& s = leaves_.back();
    s.fill = Fill::Mask;
    s.p_inf = p_inf;
    s.inf_rows = std::move(inf_rows);
    return x;
}

Tensor* Maker::causal_mask(DType t, std::initializer_list<int64_t> ne, int64_t past, std::vector<int64_t> inf_rows) {
    Tensor* x = leaf(t, ne);
    LeafSpec& s = leaves_.back();
    s.fill = Fill::Causal;
    s.past = past;
    s.inf_rows = std::move(inf_rows);
    return x;
}

// ---- data movement -------------------------------------------------------------------------

namespace {

/// ne[0] for a block type: `blocks` blocks (plain types: an odd size near 32·blocks).
int64_t row_len(DType t, int64_t blocks) {
    const int64_t bs = dtype_info(t).block_size;
    return bs == 1 ? 32 * blocks + 3 : bs * blocks;
}

Case make(Op op, std::string variant, std::function<Tensor*(Maker&)> build, bool core = false) {
    Case c;
    c.op = op;
    c.variant = std::move(variant);
    c.build = std::move(build);
    c.core = core;
    return c;
}

/// Output type of a copy of `src` into `dst` decides the comparison.
Case copy_case(Op op, DType src, DType dst, std::function<Tensor*(Maker&)> build, bool core) {
    Case c = make(op, "", std::move(build), core);
    if (src == dst)
        c.compare = Compare::Exact;
    else if (dst != DType::F32)
        c.compare = Compare::Quantized;
    return c;
}

}  // namespace

void add_data_cases(std::vector<Case>& out) {
    // GET_ROWS over every weight type, with batches, and an I32 table (copied exactly).
    bool first = true;
    for (DType t : weight_types()) {
        const int64_t K = row_len(t, 3);
        out.push_back(make(Op::GET_ROWS, "", [t, K](Maker& m) {
            return build::get_rows(m.g(), m.weight(t, {K, 13}), m.ids(DType::I32, {7}, 13));
        }, true));
        out.push_back(make(Op::GET_ROWS, "", [t, K](Maker& m) {
            return build::get_rows(m.g(), m.weight(t, {K, 5, 3, 2}), m.ids(DType::I32, {9, 3, 2}, 5));
        }, first));
        first = false;
    }
    out.push_back(make(Op::GET_ROWS, "", [](Maker& m) {
        return build::get_rows(m.g(), m.ids(DType::I32, {11, 6}, 1000), m.ids(DType::I32, {5}, 6));
    }, true));
    for (DType t : {DType::F16, DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
        out.push_back(make(Op::GET_ROWS, "large", [t](Maker& m) {
            return build::get_rows(m.g(), m.weight(t, {4096, 100}), m.ids(DType::I32, {19}, 100));
        }, false));
    }

    // SET_ROWS: into plain and block types, I64 and I32 ids, ids broadcast over batches.
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::IQ4_NL}) {
        const int64_t K = row_len(t, 2);
        Case c = copy_case(Op::SET_ROWS, DType::F32, t, [t, K](Maker& m) {
            Tensor* dst = m.input(t, {K, 11, 3});
            return build::set_rows(m.g(), dst, m.input(DType::F32, {K, 5, 3}), m.ids(DType::I64, {5, 3}, 11, true));
        }, t == DType::F32 || t == DType::F16 || t == DType::Q8_0);
        if (c.compare == Compare::Exact) c.compare = Compare::Nmse;  // kept rows and written rows are exact
        out.push_back(std::move(c));
    }
    out.push_back(make(Op::SET_ROWS, "", [](Maker& m) {
        Tensor* dst = m.input(DType::F32, {33, 9, 4});
        return build::set_rows(m.g(), dst, m.input(DType::F32, {33, 3, 4}), m.ids(DType::I32, {3, 1}, 9, true));
    }, true));

    // CPY: conversions into every type with a quantizer, from plain and block sources.
    const DType dsts[] = {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                          DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                          DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};
    for (DType src : {DType::F32, DType::F16}) {
        for (DType dst : dsts) {
            const int64_t K = row_len(dst, 2);
            out.push_back(copy_case(Op::CPY, src, dst, [src, dst, K](Maker& m) {
                return build::cpy(m.g(), m.input(src, {K, 7, 3}), m.input(dst, {K, 7, 3}));
            }, src == DType::F32));
        }
    }
    for (DType src : {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::BF16}) {  // dequantizing copies and same-type
        const int64_t K = row_len(src, 2);
        out.push_back(copy_case(Op::CPY, src, DType::F32, [src, K](Maker& m) {
            return build::cpy(m.g(), m.input(src, {K, 5, 2}), m.input(DType::F32, {K, 5, 2}));
        }, src == DType::Q4_0));
        out.push_back(copy_case(Op::CPY, src, src, [src, K](Maker& m) {
            return build::cpy(m.g(), m.input(src, {K, 5, 2}), m.input(src, {K, 5, 2}));
        }, src == DType::Q8_0));
    }
    // non-contiguous sources, reshaping copies (elements matched in ne order), casts
    out.push_back(copy_case(Op::CPY, DType::F32, DType::F16, [](Maker& m) {
        return build::cpy(m.g(), m.input_t(DType::F32, {13, 9, 2}), m.input(DType::F16, {13, 9, 2}));
    }, true));
    out.push_back(copy_case(Op::CPY, DType::F32, DType::F32, [](Maker& m) {
        return build::cpy(m.g(), m.input_p(DType::F32, {8, 6, 5}), m.input(DType::F32, {48, 5}));
    }, true));
    out.push_back(copy_case(Op::CPY, DType::F32, DType::F16, [](Maker& m) {  // rows shorter than the source's
        return build::cpy(m.g(), m.input_t(DType::F32, {12, 5}), m.input(DType::F16, {4, 15}));
    }, false));
    out.push_back(copy_case(Op::CPY, DType::F16, DType::F32, [](Maker& m) {
        return build::cast(m.g(), m.input_t(DType::F16, {7, 17}), DType::F32);
    }, false));
    out.push_back(copy_case(Op::CPY, DType::F32, DType::Q8_0, [](Maker& m) {
        return build::cast(m.g(), m.input_p(DType::F32, {64, 3, 5}), DType::Q8_0);
    }, true));
    out.push_back(copy_case(Op::CPY, DType::F32, DType::Q8_0, [](Maker& m) {  // strided source rows
        return build::cast(m.g(), m.input_t(DType::F32, {64, 7}), DType::Q8_0);
    }, false));
    out.push_back(copy_case(Op::CPY, DType::F32, DType::BF16, [](Maker& m) {
        return build::cast(m.g(), m.input_t(DType::F32, {19, 6}), DType::BF16);
    }, false));

    // CONT / DUP
    for (DType t : {DType::F32, DType::F16}) {
        out.push_back(copy_case(Op::CONT, t, t, [t](Maker& m) { return build::cont(m.g(), m.input_t(t, {13, 7, 3})); }, true));
        out.push_back(copy_case(Op::CONT, t, t, [t](Maker& m) { return build::cont(m.g(), m.input_p(t, {5, 6, 7, 2})); }, false));
        out.push_back(copy_case(Op::CONT, t, t, [t](Maker& m) {
            return build::cont(m.g(), m.input_p(t, {6, 5, 3}), {30, 3});
        }, false));
        out.push_back(copy_case(Op::DUP, t, t, [t](Maker& m) { return build::dup(m.g(), m.input(t, {37, 5, 2})); }, t == DType::F32));
        out.push_back(copy_case(Op::DUP, t, t, [t](Maker& m) { return build::dup(m.g(), m.input_t(t, {9, 11})); }, false));
    }
    out.push_back(copy_case(Op::CONT, DType::Q4_0, DType::Q4_0, [](Maker& m) {
        return build::cont(m.g(), m.input_p(DType::Q4_0, {64, 3, 5}));
    }, false));

    // CONCAT along each dim, REPEAT, PAD, FILL, DIAG, TRI
    for (int dim = 0; dim < 4; ++dim) {
        for (DType t : {DType::F32, DType::F16}) {
            out.push_back(copy_case(Op::CONCAT, t, t, [t, dim](Maker& m) {
                const int64_t a[4] = {7, 5, 3, 2};
                int64_t b[4] = {7, 5, 3, 2};
                b[dim] = dim == 0 ? 4 : 1 + dim;
                return build::concat(m.g(), m.input(t, {a[0], a[1], a[2], a[3]}), m.input(t, {b[0], b[1], b[2], b[3]}), dim);
            }, t == DType::F32));
        }
    }
    out.push_back(copy_case(Op::CONCAT, DType::F32, DType::F32, [](Maker& m) {
        return build::concat(m.g(), m.input_t(DType::F32, {6, 5, 2}), m.input(DType::F32, {6, 3, 2}), 1);
    }, true));
    out.push_back(copy_case(Op::REPEAT, DType::F32, DType::F32, [](Maker& m) {
        return build::repeat(m.g(), m.input(DType::F32, {5, 3}), {10, 6, 2, 3});
    }, true));
    out.push_back(copy_case(Op::REPEAT, DType::F16, DType::F16, [](Maker& m) {
        return build::repeat(m.g(), m.input(DType::F16, {7, 1, 2}), {21, 4, 2});
    }, false));
    out.push_back(copy_case(Op::REPEAT, DType::F32, DType::F32, [](Maker& m) {
        return build::repeat(m.g(), m.input_t(DType::F32, {4, 3}), {8, 9});
    }, false));
    out.push_back(copy_case(Op::PAD, DType::F32, DType::F32, [](Maker& m) {
        return build::pad(m.g(), m.input(DType::F32, {13, 5, 3}), 3, 2, 1, 0);
    }, true));
    out.push_back(copy_case(Op::PAD, DType::F32, DType::F32, [](Maker& m) {
        return build::pad_ext(m.g(), m.input(DType::F32, {9, 4, 2}), 2, 3, 1, 0, 0, 1, 0, 0);
    }, true));
    out.push_back(copy_case(Op::PAD, DType::F16, DType::F16, [](Maker& m) {
        return build::pad_ext(m.g(), m.input_t(DType::F16, {6, 5}), 1, 1, 2, 0);
    }, false));
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        out.push_back(make(Op::FILL, "", [t](Maker& m) { return build::fill(m.g(), m.input(t, {37, 5, 2}), 0.625f); },
                           t == DType::F32));
        out.push_back(make(Op::DIAG, "", [t](Maker& m) { return build::diag(m.g(), m.input(t, {11, 1, 3})); },
                           t == DType::F32));
    }
    for (TriType tt : {TriType::LOWER, TriType::LOWER_DIAG, TriType::UPPER, TriType::UPPER_DIAG}) {
        static const char* const names[] = {"LOWER", "LOWER_DIAG", "UPPER", "UPPER_DIAG"};
        out.push_back(make(Op::TRI, names[static_cast<int>(tt)], [tt](Maker& m) {
            return build::tri(m.g(), m.input(DType::F32, {9, 9, 3}), tt);
        }, true));
    }
    out.push_back(make(Op::TRI, "LOWER", [](Maker& m) {
        return build::tri(m.g(), m.input(DType::F16, {17, 17}), TriType::LOWER);
    }, false));
}

// ---- element-wise --------------------------------------------------------------------------

void add_elementwise_cases(std::vector<Case>& out) {
    using BinFn = Tensor* (*)(Graph&, Tensor*, Tensor*);
    const std::pair<Op, BinFn> binaries[] = {
        {Op::ADD, build::add}, {Op::SUB, build::sub}, {Op::MUL, build::mul}, {Op::DIV, build::div}};
    for (const auto& entry : binaries) {
        const Op op = entry.first;
        const BinFn fn = entry.second;
        const float lo = op == Op::DIV ? 0.5f : -1.0f;  // divisors away from 0
        const float hi = op == Op::DIV ? 1.5f : 1.0f;
        out.push_back(make(op, "", [fn, lo, hi](Maker& m) {
            return fn(m.g(), m.input(DType::F32, {67, 13, 3}), m.input(DType::F32, {67, 13, 3}, lo, hi));
        }, true));
        out.push_back(make(op, "bcast-row", [fn, lo, hi](Maker& m) {
            return fn(m.g(), m.input(DType::F32, {33, 7, 3, 2}), m.input(DType::F32, {33}, lo, hi));
        }, true));
        out.push_back(make(op, "bcast", [fn, lo, hi](Maker& m) {
            return fn(m.g(), m.input(DType::F32, {10, 6, 4, 3}), m.input(DType::F32, {5, 1, 2, 3}, lo, hi));
        }, op == Op::MUL));
        out.push_back(make(op, "bcast-col", [fn, lo, hi](Maker& m) {
            return fn(m.g(), m.input(DType::F32, {17, 9}), m.input(DType::F32, {1, 9}, lo, hi));
        }, false));
        out.push_back(make(op, "noncontig", [fn, lo, hi](Maker& m) {
            return fn(m.g(), m.input_t(DType::F32, {13, 11, 2}), m.input_p(DType::F32, {13, 11, 2}, lo, hi));
        }, op == Op::ADD));
        out.push_back(make(op, "f16", [fn, lo, hi](Maker& m) {
            return fn(m.g(), m.input(DType::F16, {65, 5}), m.input(DType::F16, {65, 1}, lo, hi));
        }, false));
    }
    out.push_back(make(Op::ADD_ID, "", [](Maker& m) {
        return build::add_id(m.g(), m.input(DType::F32, {35, 4, 7}), m.input(DType::F32, {35, 6}),
                             m.ids(DType::I32, {4, 7}, 6));
    }, true));

    out.push_back(make(Op::SCALE, "", [](Maker& m) { return build::scale(m.g(), m.input(DType::F32, {67, 9, 2}), 0.7f, 0.1f); }, true));
    out.push_back(make(Op::SCALE, "noncontig", [](Maker& m) { return build::scale(m.g(), m.input_t(DType::F32, {13, 7}), -1.5f); }, false));
    out.push_back(make(Op::CLAMP, "", [](Maker& m) { return build::clamp(m.g(), m.input(DType::F32, {45, 7, 2}, -2, 2), -0.5f, 0.3f); }, true));
    out.push_back(make(Op::SQR, "", [](Maker& m) { return build::sqr(m.g(), m.input(DType::F32, {45, 7, 2})); }, true));
    out.push_back(make(Op::SQRT, "", [](Maker& m) { return build::sqrt(m.g(), m.input(DType::F32, {45, 7, 2}, 0.01f, 4.0f)); }, true));
    out.push_back(make(Op::LOG, "", [](Maker& m) { return build::log(m.g(), m.input(DType::F32, {45, 7, 2}, 0.01f, 4.0f)); }, true));
    out.push_back(make(Op::SQR, "f16", [](Maker& m) { return build::sqr(m.g(), m.input(DType::F16, {33, 5})); }, false));
    out.push_back(make(Op::LOG, "noncontig", [](Maker& m) { return build::log(m.g(), m.input_t(DType::F32, {9, 13}, 0.01f, 4.0f)); }, false));

    for (int u = 0; u < static_cast<int>(UnaryOp::COUNT_); ++u) {
        const auto op = static_cast<UnaryOp>(u);
        out.push_back(make(Op::UNARY, unary_op_name(op), [op](Maker& m) {
            return build::unary(m.g(), m.input(DType::F32, {67, 7, 3}, -4.0f, 4.0f), op);
        }, true));
        out.push_back(make(Op::UNARY, unary_op_name(op), [op](Maker& m) {
            return build::unary(m.g(), m.input_t(DType::F32, {11, 5, 2}, -4.0f, 4.0f), op);
        }, false));
        out.push_back(make(Op::UNARY, unary_op_name(op), [op](Maker& m) {
            return build::unary(m.g(), m.input(DType::F16, {33, 3}, -4.0f, 4.0f), op);
        }, false));
    }

    for (int gi = 0; gi < static_cast<int>(GluOp::COUNT_); ++gi) {
        const auto op = static_cast<GluOp>(gi);
        const std::string name = glu_op_name(op);
        out.push_back(make(Op::GLU, name, [op](Maker& m) {
            return build::glu(m.g(), m.input(DType::F32, {66, 7, 2}, -4.0f, 4.0f), op, false);
        }, true));
        out.push_back(make(Op::GLU, name + " swapped", [op](Maker& m) {
            return build::glu(m.g(), m.input(DType::F32, {34, 5}, -4.0f, 4.0f), op, true);
        }, false));
        if (op == GluOp::SWIGLU_OAI) {
            out.push_back(make(Op::GLU, name + " split", [](Maker& m) {
                return build::swiglu_oai(m.g(), m.input(DType::F32, {33, 7}, -9.0f, 9.0f),
                                         m.input(DType::F32, {33, 7}, -9.0f, 9.0f), 1.5f, 6.0f);
            }, true));
        } else {
            out.push_back(make(Op::GLU, name + " split", [op](Maker& m) {
                return build::glu_split(m.g(), m.input(DType::F32, {33, 7, 2}, -4.0f, 4.0f),
                                        m.input_t(DType::F32, {33, 7, 2}), op);
            }, true));
        }
    }
    // wide inputs: e^-x under- and overflows inside SiLU
    out.push_back(make(Op::GLU, "SWIGLU wide", [](Maker& m) {
        return build::glu(m.g(), m.input(DType::F32, {70, 5}, -120.0f, 120.0f), GluOp::SWIGLU, false);
    }, true));
}

// ---- reductions and normalisation ----------------------------------------------------------

void add_reduce_cases(std::vector<Case>& out) {
    for (Op op : {Op::SUM_ROWS, Op::MEAN}) {
        auto fn = op == Op::SUM_ROWS ? build::sum_rows : build::mean;
        out.push_back(make(op, "", [fn](Maker& m) { return fn(m.g(), m.input(DType::F32, {67, 13, 3})); }, true));
        out.push_back(make(op, "", [fn](Maker& m) { return fn(m.g(), m.input(DType::F32, {1000, 5})); }, false));
        out.push_back(make(op, "noncontig", [fn](Maker& m) { return fn(m.g(), m.input_t(DType::F32, {9, 14, 2})); }, false));
        out.push_back(make(op, "f16", [fn](Maker& m) { return fn(m.g(), m.input(DType::F16, {33, 7})); }, false));
    }
    auto exact = [](Case c) {
        c.compare = Compare::Exact;
        return c;
    };
    out.push_back(exact(make(Op::ARGMAX, "", [](Maker& m) { return build::argmax(m.g(), m.input(DType::F32, {67, 13, 3})); }, true)));
    out.push_back(exact(make(Op::ARGMAX, "", [](Maker& m) { return build::argmax(m.g(), m.input(DType::F32, {3000, 5})); }, false)));
    out.push_back(exact(make(Op::ARGMAX, "noncontig", [](Maker& m) { return build::argmax(m.g(), m.input_t(DType::F32, {7, 9})); }, false)));
    for (auto order : {build::SortOrder::Ascending, build::SortOrder::Descending}) {
        const char* name = order == build::SortOrder::Ascending ? "asc" : "desc";
        out.push_back(exact(make(Op::ARGSORT, name, [order](Maker& m) {
            return build::argsort(m.g(), m.input(DType::F32, {37, 13, 2}), order);
        }, true)));
        out.push_back(exact(make(Op::ARGSORT, name, [order](Maker& m) {
            return build::argsort(m.g(), m.input(DType::F32, {256, 3}), order);
        }, false)));
        out.push_back(exact(make(Op::ARGSORT, std::string(name) + " noncontig", [order](Maker& m) {
            return build::argsort(m.g(), m.input_t(DType::F32, {8, 5}), order);
        }, false)));
    }
    out.push_back(make(Op::CUMSUM, "", [](Maker& m) { return build::cumsum(m.g(), m.input(DType::F32, {67, 13, 3})); }, true));
    out.push_back(make(Op::CUMSUM, "noncontig", [](Maker& m) { return build::cumsum(m.g(), m.input_t(DType::F32, {7, 9})); }, false));

    using NormFn = Tensor* (*)(Graph&, Tensor*, float);
    const std::pair<Op, NormFn> norms[] = {{Op::NORM, build::norm}, {Op::RMS_NORM, build::rms_norm}, {Op::L2_NORM, build::l2_norm}};
    for (const auto& entry : norms) {
        const Op op = entry.first;
        const NormFn fn = entry.second;
        out.push_back(make(op, "", [fn](Maker& m) { return fn(m.g(), m.input(DType::F32, {67, 13, 3}), 1e-5f); }, true));
        out.push_back(make(op, "", [fn](Maker& m) { return fn(m.g(), m.input(DType::F32, {4096, 3}), 1e-6f); }, false));
        out.push_back(make(op, "noncontig", [fn](Maker& m) { return fn(m.g(), m.input_p(DType::F32, {64, 5, 3}), 1e-5f); }, true));
        out.push_back(make(op, "f16", [fn](Maker& m) { return fn(m.g(), m.input(DType::F16, {33, 7}), 1e-5f); }, false));
    }
}

// ---- lists -----------------------------------------------------------------------------------

const std::vector<DType>& weight_types() {
    static const std::vector<DType> types = {
        DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,   DType::Q5_1,   DType::Q8_0,
        DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};
    return types;
}

std::vector<Case> test_cases() {
    std::vector<Case> all;
    add_data_cases(all);
    add_elementwise_cases(all);
    add_reduce_cases(all);
    add_matmul_cases(all);
    add_attention_cases(all);
    add_fusion_cases(all);
    return all;
}

}  // namespace tessel::cli::test_ops
