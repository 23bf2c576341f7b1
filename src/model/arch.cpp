#include "model/arch.hpp"

#include <array>

#include "tessel/errors.hpp"

namespace tessel::model {

// Defined in each architecture's file.
extern const ArchSpec kArchLlama, kArchQwen2, kArchQwen3, kArchGemma3;

namespace {
constexpr std::array<const ArchSpec*, 4> kTable{&kArchLlama, &kArchQwen2, &kArchQwen3, &kArchGemma3};
}  // namespace

std::span<const ArchSpec* const> architectures() { return kTable; }

const ArchSpec& find_arch(std::string_view arch, const std::string& file) {
    std::string names;
    for (const ArchSpec* a : kTable) {
        if (a->name == arch) return *a;
        names += (names.empty() ? "" : ", ") + std::string(a->name);
    }
    throw Error(ErrorCode::Unsupported, file + ": unknown architecture '" + std::string(arch) + "' (supported: " + names + ")");
}

}  // namespace tessel::model
