#include "runtime/devices.hpp"

#include "cpu/cpu_backend.hpp"
#include "npu/host/device.hpp"

namespace tessel::runtime {

namespace {

struct BuiltinRegistry : Registry {
    BuiltinRegistry() {
        add_builtin(cpu::cpu_device());
        npu::register_devices(*this);
    }
};

}  // namespace

Registry& device_registry() {
    static BuiltinRegistry registry;
    return registry;
}

}  // namespace tessel::runtime
