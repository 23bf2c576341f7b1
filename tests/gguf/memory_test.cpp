// Peak memory of rejecting hostile files: declared counts and lengths are checked against the
// bytes that remain before anything is allocated, so a tiny file declaring a 2^40-item array or
// a 2^60-byte string costs no more memory than a tiny valid file.
//
// Each parse runs in a fork()ed child that resets its peak-RSS mark (/proc/self/clear_refs,
// "5") and reports the growth of VmHWM; where the reset is unavailable the child reports the
// growth of getrusage().ru_maxrss instead. A control child that touches 64 MiB proves the
// measurement sees allocations.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "gguf_test_util.hpp"

using namespace tessel;
using namespace tessel::gguf;
using namespace tessel::gguf::testing;

namespace {

constexpr long kKiB = 1024;

long peak_rss_kib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

void reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
}

struct ChildResult {
    long growth_kib;  ///< growth of the peak RSS while running the function
    int code;         ///< ErrorCode thrown as int, -1 when none, -2 for another exception
};

/// Runs fn in a child process and returns how much its peak RSS grew.
ChildResult measure_in_child(const std::function<void()>& fn) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        reset_peak_rss();
        ChildResult r{0, -1};
        long before = peak_rss_kib();
        try {
            fn();
        } catch (const Error& e) {
            r.code = static_cast<int>(e.code());
        } catch (...) {
            r.code = -2;
        }
        r.growth_kib = peak_rss_kib() - before;
        ssize_t n = write(fds[1], &r, sizeof r);
        _exit(n == sizeof r ? 0 : 1);
    }
    close(fds[1]);
    ChildResult r{-1, -3};
    ssize_t n = read(fds[0], &r, sizeof r);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_EQ(n, static_cast<ssize_t>(sizeof r));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed, status " << status;
    return r;
}

Bytes tiny_valid_file() {
    Writer w;
    w.set("general.architecture", Value::string("llama"));
    w.set("test.arr", Value::array(ValueType::UINT64, {Value::u64(1), Value::u64(2)}));
    w.set("test.str", Value::string("hello"));
    float x[4] = {1, 2, 3, 4};
    w.add_tensor("x", DType::F32, {4}, x, sizeof x);
    return w.to_bytes();
}

void parse(const Bytes& b) {
    File::from_memory(b.data(), b.size(), "hostile.gguf");
}

}  // namespace

TEST(GgufMemory, RejectingHostileDeclaredSizesStaysSmall) {
    const Bytes valid = tiny_valid_file();
    ChildResult baseline = measure_in_child([&] { parse(valid); });
    EXPECT_EQ(baseline.code, -1) << "the tiny valid file must parse";

    // Control: the measurement sees a 64 MiB allocation.
    ChildResult control = measure_in_child([] {
        std::vector<char> big(64 << 20);
        std::memset(big.data(), 1, big.size());
        __asm__ __volatile__("" : : "r"(big.data()) : "memory");
    });
    EXPECT_GT(control.growth_kib, 48 * kKiB) << "peak-RSS measurement does not work here";

    struct Hostile {
        const char* name;
        Bytes bytes;
    };
    std::vector<Hostile> hostile;
    {
        Bytes b = valid;  // 2^40-item UINT64 array
        poke<uint64_t>(b, key_fields(b, "test.arr").value + 4, 1ull << 40);
        hostile.push_back({"array of 2^40 items", b});
    }
    {
        Bytes b = valid;  // 2^60-byte string
        poke<uint64_t>(b, key_fields(b, "test.str").value, 1ull << 60);
        hostile.push_back({"string of 2^60 bytes", b});
    }
    {
        Bytes b = valid;  // 2^40 metadata entries
        poke<uint64_t>(b, 16, 1ull << 40);
        hostile.push_back({"2^40 metadata entries", b});
    }
    {
        Bytes b = valid;  // 2^40 tensors
        poke<uint64_t>(b, 8, 1ull << 40);
        hostile.push_back({"2^40 tensors", b});
    }
    for (const Hostile& h : hostile) {
        ChildResult r = measure_in_child([&] { parse(h.bytes); });
        EXPECT_EQ(r.code, static_cast<int>(ErrorCode::GgufLengthPastEnd)) << h.name;
        EXPECT_LT(r.growth_kib - baseline.growth_kib, 8 * kKiB)
            << h.name << ": peak RSS grew by " << r.growth_kib << " KiB (valid file: " << baseline.growth_kib
            << " KiB)";
    }
}
