// The public resources API (include/tessel/resources.hpp).
#include "tessel/resources.hpp"

#include "runtime/context.hpp"

namespace tessel {

std::vector<std::string> model_devices(const Model& model) {
    std::vector<std::string> names;
    for (const Device* d : model.impl().devices()) names.push_back(d->name());
    return names;
}

void check_context_fits(const Model& model, const ContextParams& params) { runtime::plan_context(model.impl().hparams(), params); }

}  // namespace tessel
