// Decode steps allocate nothing and read no environment variable: after the prompt and the first
// single-token step (which builds and plans the decode graph), each further step, from decode()
// until its logits are read, makes no operator new call and no getenv call, on the CPU backend
// with 1 and 2 threads (and 2 threads without flash attention). This executable replaces the
// global operator new/delete and getenv to count them while a step runs (every thread's calls
// count: the pool's workers too).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "support/smollm2.hpp"
#include "tessel/engine.hpp"

extern char** environ;

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_news{0};
std::atomic<long> g_getenvs{0};

void* allocate(std::size_t n, std::size_t align) {
    if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
    if (n == 0) n = 1;
    if (align <= alignof(std::max_align_t)) return std::malloc(n);
    return std::aligned_alloc(align, (n + align - 1) / align * align);
}

void* allocate_or_throw(std::size_t n, std::size_t align) {
    void* p = allocate(n, align);
    if (!p) throw std::bad_alloc();
    return p;
}

}  // namespace

// The replacements below hand out malloc memory and free it; GCC's check that memory from
// operator new is not given to free does not know that this pair belongs together.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new[](std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return allocate(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return allocate(n, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

// Replaces the C library's getenv for the whole executable (the library is linked in statically,
// and a definition in the executable also takes precedence over shared libraries' calls).
extern "C" char* getenv(const char* name) noexcept {
    if (g_counting.load(std::memory_order_relaxed)) g_getenvs.fetch_add(1, std::memory_order_relaxed);
    const size_t len = std::strlen(name);
    for (char** e = environ; e && *e; ++e)
        if (std::strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
    return nullptr;
}

namespace tessel {
namespace {

struct Counts {
    long news = 0, getenvs = 0;
};

template <class F>
Counts counted(F&& f) {
    g_news = 0, g_getenvs = 0;
    g_counting = true;
    f();
    g_counting = false;
    return {g_news.load(), g_getenvs.load()};
}

int32_t argmax(std::span<const float> v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i)
        if (v[i] > v[best]) best = i;
    return static_cast<int32_t>(best);
}

// The counters see what they must (else the zero counts below would prove nothing).
TEST(DecodeAllocations, CountersSeeNewAndGetenv) {
    static std::vector<int>* volatile sink;  // volatile: the compiler may not elide the new/delete pair
    const Counts c = counted([] {
        sink = new std::vector<int>(3);
        delete sink;
        (void)std::getenv("TESSEL_CPU_CHUNK_MULT");
    });
    EXPECT_EQ(c.news, 2);  // the vector and its elements
    EXPECT_EQ(c.getenvs, 1);
    setenv("TESSEL_ALLOC_TEST_PROBE", "x", 1);
    ASSERT_NE(std::getenv("TESSEL_ALLOC_TEST_PROBE"), nullptr);
    EXPECT_STREQ(std::getenv("TESSEL_ALLOC_TEST_PROBE"), "x");
}

// Greedy decoding of a prompt, step 1, then steps 2..8 counted; returns the 9 generated tokens.
std::vector<int32_t> decode_counted(int n_threads, FlashAttn fa) {
    std::vector<int32_t> generated;
    auto model = Model::load(test::smollm2_path().string(), "cpu");
    ContextParams params;
    params.n_ctx = 512;
    params.n_threads = n_threads;
    params.flash_attn = fa;
    Context ctx(model, params);
    const std::vector<int32_t> prompt = model->tokenize("The capital of France is", true, false);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size()});
    ctx.decode(batch);
    int32_t next = argmax(ctx.logits(0));
    int32_t pos = static_cast<int32_t>(prompt.size());
    generated.reserve(16);
    generated.push_back(next);
    auto step = [&] {
        const BatchToken b{next, pos++, 0, true};
        ctx.decode(std::span<const BatchToken>(&b, 1));
        next = argmax(ctx.logits(0));
    };
    step();  // step 1: builds and plans the single-token graph
    generated.push_back(next);
    for (int s = 2; s <= 8; ++s) {
        const Counts c = counted(step);
        generated.push_back(next);
        const char* attn = fa == FlashAttn::Off ? "attention" : "flash attention";
        EXPECT_EQ(c.news, 0) << "decode step " << s << ", " << n_threads << " thread(s), " << attn << ": operator new calls";
        EXPECT_EQ(c.getenvs, 0) << "decode step " << s << ", " << n_threads << " thread(s), " << attn << ": getenv calls";
    }
    return generated;
}

TEST(DecodeAllocations, StepsAfterTheFirstAllocateNothing) {
    TESSEL_REQUIRE_SMOLLM2();
    const std::vector<int32_t> one = decode_counted(1, FlashAttn::On);
    const std::vector<int32_t> two = decode_counted(2, FlashAttn::On);
    EXPECT_EQ(one, two);  // the thread count changes no token
    decode_counted(2, FlashAttn::Off);
}

}  // namespace
}  // namespace tessel
