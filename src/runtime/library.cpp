// Library-wide facts of the public API: the version and the devices (include/tessel/engine.hpp,
// include/tessel/device.hpp).
#include "backend/registry.hpp"
#include "tessel/device.hpp"
#include "tessel/engine.hpp"

namespace tessel {

const char* version() { return TESSEL_VERSION_STRING; }

std::vector<DeviceInfo> devices() {
    std::vector<DeviceInfo> out;
    for (Device* d : Registry::global().devices()) {
        DeviceInfo info;
        info.name = d->name();
        info.description = d->description();
        info.kind = d->kind();
        size_t free = 0, total = 0;
        d->memory(free, total);
        info.memory_free = free;
        info.memory_total = total;
        out.push_back(std::move(info));
    }
    return out;
}

}  // namespace tessel
