// The freestanding runtime of the Hexagon programs (src/npu/hexagon: the compiler's division helpers,
// binary64 / binary32 division, sqrtf, fmaf, floorf) against this host's arithmetic: runtime_check.c
// prints each helper's operands and result under qemu-hexagon, every line is recomputed here and
// must match bit for bit (NaN results: both NaN, payloads aside).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hexagon/hexagon_programs.hpp"

namespace tessel::test {
namespace {

float f32(uint64_t u) {
    const uint32_t v = static_cast<uint32_t>(u);
    float f;
    std::memcpy(&f, &v, 4);
    return f;
}
double f64(uint64_t u) {
    double d;
    std::memcpy(&d, &u, 8);
    return d;
}
uint64_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
uint64_t bits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
}

// Whether the device's result `got` is what this host computes for the line's helper and operands.
bool matches(const std::string& name, const std::vector<uint64_t>& v, uint64_t got, uint64_t* want) {
    const uint64_t a = v[0], b = v.size() > 1 ? v[1] : 0, c = v.size() > 2 ? v[2] : 0;
    bool nan = false;
    if (name == "udivsi3") *want = static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
    else if (name == "umodsi3") *want = static_cast<uint32_t>(a) % static_cast<uint32_t>(b);
    else if (name == "divsi3") *want = static_cast<uint32_t>(static_cast<int32_t>(a) / static_cast<int32_t>(b));
    else if (name == "modsi3") *want = static_cast<uint32_t>(static_cast<int32_t>(a) % static_cast<int32_t>(b));
    else if (name == "udivdi3") *want = a / b;
    else if (name == "umoddi3") *want = a % b;
    else if (name == "divdi3") *want = static_cast<uint64_t>(static_cast<int64_t>(a) / static_cast<int64_t>(b));
    else if (name == "moddi3") *want = static_cast<uint64_t>(static_cast<int64_t>(a) % static_cast<int64_t>(b));
    else if (name == "divdf3") {
        const double r = f64(a) / f64(b);
        nan = std::isnan(r);
        *want = bits(r);
        if (nan) return std::isnan(f64(got));
    } else {
        float r = 0;
        if (name == "divsf3") r = f32(a) / f32(b);
        else if (name == "sqrtf") r = std::sqrt(f32(a));
        else if (name == "floorf") r = std::floor(f32(a));
        else if (name == "fmaf") r = std::fma(f32(a), f32(b), f32(c));
        else {
            ADD_FAILURE() << "unknown helper " << name;
            return false;
        }
        *want = bits(r);
        if (std::isnan(r)) return std::isnan(f32(got));
    }
    return got == *want;
}

TEST(HexagonRuntime, EveryHelperMatchesTheHostBitForBit) {
    const std::string program = hexagon_program("tessel-hexagon-runtime-check");
    ASSERT_FALSE(program.empty());
    int status = 0;
    const std::string out = run_hexagon(program, "", &status);
    ASSERT_EQ(status, 0) << out.substr(0, 2000);
    std::istringstream lines(out);
    std::string line;
    std::map<std::string, int> checked;
    bool ended = false;
    int failures = 0;
    while (std::getline(lines, line)) {
        if (line == "end") {
            ended = true;
            break;
        }
        std::istringstream in(line);
        std::string name, word;
        std::vector<uint64_t> v;
        in >> name;
        while (in >> word) v.push_back(std::stoull(word, nullptr, 16));
        ASSERT_GE(v.size(), 2u) << line;
        const uint64_t got = v.back();
        v.pop_back();
        uint64_t want = 0;
        if (!matches(name, v, got, &want) && ++failures <= 20)
            ADD_FAILURE() << line << ": the host computes " << std::hex << want;
        ++checked[name];
    }
    EXPECT_TRUE(ended) << "the program's output stops before its end line";
    EXPECT_EQ(failures, 0);
    // every helper ran on edge cases and hundreds of random operands
    for (const char* name : {"udivsi3", "umodsi3", "divsi3", "modsi3", "udivdi3", "umoddi3", "divdi3", "moddi3"})
        EXPECT_EQ(checked[name], 400) << name;
    for (const char* name : {"sqrtf", "floorf"}) EXPECT_EQ(checked[name], 418) << name;
    EXPECT_EQ(checked["divsf3"], 18 * 18 + 400 + 400);
    EXPECT_EQ(checked["fmaf"], 18 * 18 + 400);
    EXPECT_EQ(checked["divdf3"], 13 * 13 + 400 + 400);
}

}  // namespace
}  // namespace tessel::test
