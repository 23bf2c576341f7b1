// The device registry: every device tessel can use, CPU first. Devices register at start-up;
// optional entry points of a device are reached by name through Device::proc().
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "backend/backend.hpp"

namespace tessel {

class Registry {
public:
    /// The process-wide registry, with the built-in devices (CPU) registered.
    static Registry& global();

    /// Adds a device the registry owns (e.g. an NPU session, or a test's fake device).
    Device& add(std::unique_ptr<Device> device);
    /// Removes a device previously added (tests); no-op when absent.
    void remove(Device& device);

    /// All devices, in registration order.
    std::vector<Device*> devices() const;
    /// The device named `name` (case-sensitive), or nullptr.
    Device* find(std::string_view name) const;

private:
    Registry();
    std::vector<Device*> builtin_;
    std::vector<std::unique_ptr<Device>> owned_;
};

}  // namespace tessel
