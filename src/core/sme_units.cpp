#include "core/sme_units.hpp"

#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "core/log.hpp"

namespace tessel {
namespace {

// One hex number, optional 0x, optional surrounding whitespace; false for anything else.
bool parse_hex(std::string text, uint64_t& value) {
    size_t b = 0, e = text.size();
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
    if (e - b >= 2 && text[b] == '0' && (text[b + 1] == 'x' || text[b + 1] == 'X')) b += 2;
    if (b == e || e - b > 16) return false;
    uint64_t v = 0;
    for (size_t i = b; i < e; ++i) {
        const int c = std::tolower(static_cast<unsigned char>(text[i]));
        if (!std::isxdigit(c)) return false;
        v = v << 4 | static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    value = v;
    return true;
}

bool is_cpu_dir(const std::string& name) {
    if (name.size() < 4 || name.compare(0, 3, "cpu") != 0) return false;
    for (size_t i = 3; i < name.size(); ++i)
        if (name[i] < '0' || name[i] > '9') return false;
    return true;
}

}  // namespace

SmeUnitCount count_sme_units(std::span<const uint64_t> smidr) {
    SmeUnitCount out;
    std::map<uint64_t, int> shared;  // affinity id -> its shared units (counted once)
    for (const uint64_t v : smidr) {
        const unsigned sh = static_cast<unsigned>(v >> 13) & 0x3;
        const unsigned nsmc = static_cast<unsigned>(v >> 56) & 0xF;
        const uint64_t affinity = ((v >> 32) & 0xFFFFF) << 12 | (v & 0xFFF);
        if (sh == 1) continue;
        if (sh == 2 || (sh == 0 && affinity == 0)) {  // a private unit
            ++out.units;
            continue;
        }
        int count = static_cast<int>(nsmc) + 1;  // SH 3, or SH 0 with an affinity id: shared
        if (nsmc == 0xF) {
            out.reserved_nsmc = true;
            count = 1;
        }
        int& seen = shared[affinity];
        if (count > seen) seen = count;
    }
    for (const auto& [affinity, count] : shared) out.units += count;
    return out;
}

std::vector<uint64_t> read_smidr_values(const std::string& cpu_dir) {
    namespace fs = std::filesystem;
    std::vector<uint64_t> values;
    std::error_code ec;
    fs::directory_iterator it(cpu_dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        if (!is_cpu_dir(it->path().filename().string())) continue;
        std::ifstream in(it->path() / "regs" / "identification" / "smidr_el1");
        std::string text;
        uint64_t v = 0;
        if (in && std::getline(in, text) && parse_hex(text, v)) values.push_back(v);
    }
    return values;
}

int sme_units_from_sysfs(const std::string& cpu_dir) {
    const std::vector<uint64_t> values = read_smidr_values(cpu_dir);
    const SmeUnitCount c = count_sme_units(values);
    static std::atomic<bool> warned{false};
    if (c.reserved_nsmc && !warned.exchange(true))
        log(LogLevel::Warn, "SMIDR_EL1 has the reserved NSMC value 0xF; counting that shared SME unit once");
    return c.units;
}

}  // namespace tessel
