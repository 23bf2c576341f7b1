#include "backend/registry.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "tessel/errors.hpp"

namespace tessel {

void Registry::add_builtin(Device& device) { builtin_.push_back(&device); }

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

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

std::vector<Device*> Registry::run_devices(std::string_view name) const {
    Device* cpu = nullptr;
    Device* first_npu = nullptr;
    std::string known = "cpu";
    for (Device* d : devices()) {
        if (d->kind() == DeviceKind::Cpu) {
            if (!cpu) cpu = d;
            continue;
        }
        if (!first_npu && lower(d->name()).starts_with("npu")) {
            first_npu = d;
            known += ", npu = " + lower(d->name());
        } else {
            known += ", " + lower(d->name());
        }
    }
    std::string want = lower(name);
    if (want.size() > 2 && want.ends_with(":0")) want.resize(want.size() - 2);  // session 0 is the device's own name
    Device* chosen = nullptr;
    if (want == "cpu") return {cpu};
    if (want == "npu") chosen = first_npu;
    for (Device* d : devices())
        if (!chosen && d != cpu && lower(d->name()) == want) chosen = d;
    if (!chosen) throw Error(ErrorCode::InvalidArgument, "unknown device '" + std::string(name) + "' (devices: " + known + ")");
    return {chosen, cpu};
}

std::vector<Device*> Registry::run_devices(std::span<const std::string> names) const {
    std::vector<Device*> out;
    for (const std::string& name : names)
        for (Device* d : run_devices(name))
            if (d->kind() != DeviceKind::Cpu && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    out.push_back(run_devices("cpu").front());
    return out;
}

}  // namespace tessel
