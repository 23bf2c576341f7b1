#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "model/weights.hpp"
#include "cpu/cpu_backend.hpp"
#include "gguf/writer.hpp"
#include "graph/builder.hpp"
#include "support/test_paths.hpp"
#include "tessel/errors.hpp"

using namespace tessel;

namespace {

/// Host memory with a small maximum buffer size.
class SmallHostType final : public BufferType {
public:
    explicit SmallHostType(size_t max) : max_(max) {}
    std::string name() const override { return "SMALL"; }
    std::unique_ptr<Buffer> alloc_buffer(size_t size) override {
        EXPECT_LE(size, max_);
        ++allocations;
        return cpu::HostBufferType::instance().alloc_buffer(size);
    }
    size_t max_size() const override { return max_; }
    bool is_host() const override { return true; }
    int allocations = 0;

private:
    size_t max_;
};

/// A weight type that only serves MUL_MAT (like a packed layout with no GET_ROWS kernel).
class MatmulOnlyType final : public BufferType {
public:
    std::string name() const override { return "MATMUL_ONLY"; }
    std::unique_ptr<Buffer> alloc_buffer(size_t size) override { return cpu::HostBufferType::instance().alloc_buffer(size); }
    bool is_host() const override { return true; }
    bool supports_use(const Tensor& use) const override { return use.op == Op::MUL_MAT; }
};

class DeviceWithExtraType final : public Device {
public:
    std::string name() const override { return "CPUX"; }
    std::string description() const override { return "test"; }
    DeviceKind kind() const override { return DeviceKind::Cpu; }
    void memory(size_t& f, size_t& t) const override { f = t = 0; }
    std::unique_ptr<Backend> init_backend(const BackendParams& p) override { return cpu::cpu_device().init_backend(p); }
    BufferType& buffer_type() override { return cpu::HostBufferType::instance(); }
    std::vector<BufferType*> extra_weight_buffer_types() override { return {&extra}; }
    bool supports_op(const Tensor&) const override { return true; }
    bool supports_buft(const BufferType& bt) const override { return bt.is_host(); }
    std::unique_ptr<Event> new_event() override { return cpu::cpu_device().new_event(); }
    MatmulOnlyType extra;
};

}  // namespace

TEST(Weights, SpreadOverBuffersWhenOneWouldExceedMaxSize) {
    Graph g;
    std::vector<Tensor*> ws;
    for (char c : std::string("abcde")) ws.push_back(g.new_tensor(DType::F32, {256}, std::string(1, c)));  // 1 KiB each
    SmallHostType bt(2560);  // two tensors per buffer
    auto buffers = allocate_weights(bt, ws);
    ASSERT_EQ(buffers.size(), 3u);
    EXPECT_EQ(bt.allocations, 3);
    for (auto& b : buffers) {
        EXPECT_EQ(b->usage(), BufferUsage::Weights);
        EXPECT_LE(b->size(), 2560u);
    }
    EXPECT_EQ(ws[0]->buffer, ws[1]->buffer);
    EXPECT_NE(ws[1]->buffer, ws[2]->buffer);
    EXPECT_EQ(ws[4]->buffer, buffers[2].get());
    EXPECT_EQ(static_cast<uint8_t*>(ws[1]->data) - static_cast<uint8_t*>(ws[0]->data), 1024);
    for (Tensor* w : ws) EXPECT_TRUE(w->flags & kFlagWeight);

    Tensor* big = g.new_tensor(DType::F32, {1024}, "big");
    try {
        allocate_weights(bt, {big});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("big [1024] F32 needs 4096 bytes"), std::string::npos) << e.what();
    }
}

TEST(Weights, TiedEmbeddingGoesWhereEveryUseIsServed) {
    DeviceWithExtraType dev;
    Graph g;
    Tensor* embd = g.new_tensor(DType::Q8_0, {64, 100}, "token_embd.weight");
    Tensor* ffn = g.new_tensor(DType::Q8_0, {64, 64}, "blk.0.ffn_up.weight");
    Tensor* ids = g.new_tensor(DType::I32, {3}, "ids");
    Tensor* x = build::get_rows(g, embd, ids);
    Tensor* h = build::mul_mat(g, ffn, x);
    Tensor* logits = build::mul_mat(g, embd, h);  // tied output
    (void)logits;
    // ffn_up is read by MUL_MAT only: the extra (matmul-only) type serves it.
    EXPECT_EQ(&choose_weight_buffer_type({&dev}, *ffn, {h}), &dev.extra);
    // token_embd is read by GET_ROWS and MUL_MAT: only the plain type serves both.
    EXPECT_EQ(&choose_weight_buffer_type({&dev}, *embd, {x, logits}), &dev.buffer_type());
    EXPECT_EQ(&choose_weight_buffer_type({&dev}, *embd, {logits}), &dev.extra);
}

TEST(Weights, LoadFromGgufChecksNameTypeAndShape) {
    const auto dir = test::temp_dir();
    const std::string path = (dir / "w.gguf").string();
    std::vector<uint8_t> bytes(2 * 34);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
    gguf::Writer w;
    w.add_tensor("blk.0.attn_q.weight", DType::Q8_0, {32, 2}, bytes.data(), bytes.size());
    w.write_file(path);
    const gguf::File f = gguf::File::open(path);

    Graph g;
    Tensor* t = g.new_tensor(DType::Q8_0, {32, 2}, "blk.0.attn_q.weight");
    auto buffers = allocate_weights(cpu::HostBufferType::instance(), {t});
    load_weight(f, *t);
    EXPECT_EQ(std::memcmp(t->data, bytes.data(), bytes.size()), 0);

    Tensor* wrong_type = g.new_tensor(DType::Q4_0, {32, 2}, "blk.0.attn_q.weight");
    Tensor* wrong_shape = g.new_tensor(DType::Q8_0, {64}, "blk.0.attn_q.weight");
    Tensor* missing = g.new_tensor(DType::Q8_0, {32, 2}, "blk.0.attn_k.weight");
    auto more = allocate_weights(cpu::HostBufferType::instance(), {wrong_type, wrong_shape, missing});
    auto expect_error = [&](Tensor* bad, const std::string& part) {
        try {
            load_weight(f, *bad);
            FAIL() << "expected an error for " << part;
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        }
    };
    expect_error(wrong_type, "tensor 'blk.0.attn_q.weight' has type Q8_0, expected Q4_0");
    expect_error(wrong_shape, "has shape 32x2x1x1, expected blk.0.attn_q.weight [64] Q8_0");
    expect_error(missing, "tensor 'blk.0.attn_k.weight' is missing from the file");
}
