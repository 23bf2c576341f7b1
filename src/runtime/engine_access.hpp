// The internal objects behind the public API's handles (tessel::Model, tessel::Context), for the
// library's own implementation of its public headers, the developer tools and tests. An internal
// header: programs using the public API cannot reach these, and the public classes expose no
// accessors of their own. tessel::Model and tessel::Context befriend EngineAccess.
#pragma once

#include <memory>

#include "model/model.hpp"
#include "runtime/context.hpp"
#include "tessel/engine.hpp"
#include "vocab/tokenizer.hpp"

namespace tessel::runtime {

struct EngineAccess {
    /// The loaded model (hyper-parameters, weights, its devices and GGUF file).
    static const model::Model& model(const tessel::Model& m) { return *m.impl_; }
    static std::shared_ptr<const model::Model> model_ptr(const tessel::Model& m) { return m.impl_; }
    /// The model's tokenizer and vocabulary.
    static const vocab::Tokenizer& tokenizer(const tessel::Model& m) { return *m.tok_; }
    /// The decode context (KV cache, scheduler, graphs).
    static Context& context(tessel::Context& c) { return *c.impl_; }
    static const Context& context(const tessel::Context& c) { return *c.impl_; }
};

}  // namespace tessel::runtime
