// The public resources API (include/tessel/resources.hpp).
#include "tessel/resources.hpp"

#include "runtime/devices.hpp"
#include "runtime/context.hpp"
#include "runtime/engine_access.hpp"
#include "tessel/device.hpp"

namespace tessel {

std::vector<std::string> model_devices(const Model& model) {
    std::vector<std::string> names;
    for (const Device* d : runtime::EngineAccess::model(model).devices()) names.push_back(d->name());
    return names;
}

std::string resolve_device(std::string_view name) { return runtime::device_registry().run_devices(name).front()->name(); }

void check_context_fits(const Model& model, const ContextParams& params) { runtime::plan_context(runtime::EngineAccess::model(model).hparams(), params); }

}  // namespace tessel
