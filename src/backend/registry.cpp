#include "backend/registry.hpp"

#include <algorithm>

#include "cpu/cpu_backend.hpp"
#include "npu/host/device.hpp"

namespace tessel {

Registry::Registry() {
    builtin_.push_back(&cpu::cpu_device());
    npu::register_devices(*this);
}

Registry& Registry::global() {
    static Registry r;
    return r;
}

Device& Registry::add(std::unique_ptr<Device> device) {
    owned_.push_back(std::move(device));
    return *owned_.back();
}

void Registry::remove(Device& device) {
    owned_.erase(std::remove_if(owned_.begin(), owned_.end(), [&](const auto& d) { return d.get() == &device; }), owned_.end());
}

std::vector<Device*> Registry::devices() const {
    std::vector<Device*> all = builtin_;
    for (const auto& d : owned_) all.push_back(d.get());
    return all;
}

Device* Registry::find(std::string_view name) const {
    for (Device* d : devices())
        if (d->name() == name) return d;
    return nullptr;
}

}  // namespace tessel
