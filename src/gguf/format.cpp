#include "gguf/format.hpp"

namespace tessel::gguf {
namespace {

struct KnownKey {
    std::string_view key;
    ValueType type;
    ValueType element;  ///< element type when type == ARRAY
};

// Types fixed by the GGUF specification ("Standardized key-value pairs") and written so by
// gguf-py; loaders in the field reject other types for these keys.
constexpr KnownKey kKnownKeys[] = {
    {"general.alignment", ValueType::UINT32, ValueType::UINT8},
    {"general.architecture", ValueType::STRING, ValueType::UINT8},
    {"general.name", ValueType::STRING, ValueType::UINT8},
    {"general.file_type", ValueType::UINT32, ValueType::UINT8},
    {"general.quantization_version", ValueType::UINT32, ValueType::UINT8},
    {"tokenizer.ggml.model", ValueType::STRING, ValueType::UINT8},
    {"tokenizer.ggml.pre", ValueType::STRING, ValueType::UINT8},
    {"tokenizer.ggml.tokens", ValueType::ARRAY, ValueType::STRING},
    {"tokenizer.ggml.scores", ValueType::ARRAY, ValueType::FLOAT32},
    {"tokenizer.ggml.token_type", ValueType::ARRAY, ValueType::INT32},
    {"tokenizer.ggml.merges", ValueType::ARRAY, ValueType::STRING},
    {"tokenizer.ggml.bos_token_id", ValueType::UINT32, ValueType::UINT8},
    {"tokenizer.ggml.eos_token_id", ValueType::UINT32, ValueType::UINT8},
    {"tokenizer.chat_template", ValueType::STRING, ValueType::UINT8},
};

std::string describe(const KnownKey& k) {
    if (k.type == ValueType::ARRAY) return std::string("ARRAY of ") + value_type_name(k.element);
    return value_type_name(k.type);
}

}  // namespace

std::optional<std::string> well_known_key_mismatch(std::string_view key, const Value& value) {
    for (const KnownKey& k : kKnownKeys) {
        if (k.key != key) continue;
        bool ok = value.type() == k.type && (k.type != ValueType::ARRAY || value.array_type() == k.element);
        if (ok) return std::nullopt;
        return describe(k);
    }
    return std::nullopt;
}

}  // namespace tessel::gguf
