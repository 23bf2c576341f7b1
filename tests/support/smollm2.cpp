#include "support/smollm2.hpp"

#include "common/model_fetch.hpp"

namespace tessel::test {

std::filesystem::path smollm2_path() {
    return tools::model_cache_dir() / tools::default_model_source().file_name;
}

}  // namespace tessel::test
