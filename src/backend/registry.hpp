// A device registry: the devices a process can use, CPU first. The process-wide one, with the
// built-in devices registered, is runtime::device_registry() (the composition root, runtime/devices.hpp);
// optional entry points of a device are reached by name through Device::proc().
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.hpp"

namespace tessel {

class Registry {
public:
    Registry() = default;
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    /// Adds a device that outlives the registry and that it does not own (e.g. the CPU device).
    void add_builtin(Device& device);
    /// Adds a device the registry owns (e.g. an NPU session, or a test's fake device).
    Device& add(std::unique_ptr<Device> device);
    /// Removes a device previously added (tests); no-op when absent.
    void remove(Device& device);

    /// All devices, in registration order.
    std::vector<Device*> devices() const;
    /// The device named `name` (case-sensitive), or nullptr.
    Device* find(std::string_view name) const;
    /// The devices a model runs on for a user's device name, in priority order, the CPU last (the
    /// scheduler's fallback): "cpu" -> [CPU]; "npu" -> [NPU0, CPU] (the first accelerator whose
    /// name starts with NPU); a registered name in any case (e.g. "npu1"; "npu2:0" names session 0,
    /// registered as "NPU2") -> [that device, CPU].
    /// Throws tessel::Error(InvalidArgument) "unknown device 'X' (devices: cpu, npu = NPU0, ...)".
    std::vector<Device*> run_devices(std::string_view name) const;
    /// The devices a model runs on for a list of user device names (each as above), in the
    /// list's order without repeats, the CPU last whether or not the list names it; an empty list
    /// is ["cpu"]. Throws like run_devices(name) for an unknown name.
    std::vector<Device*> run_devices(std::span<const std::string> names) const;

private:
    std::vector<Device*> builtin_;
    std::vector<std::unique_ptr<Device>> owned_;
};

}  // namespace tessel
