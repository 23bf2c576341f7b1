// libFuzzer target for the GGUF reader: parse arbitrary bytes with File::from_memory and touch
// every metadata value and every byte of tensor data. A tessel::Error is the expected outcome
// for bad input; a crash, a sanitizer report, a leak or any other exception is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gguf/reader.hpp"
#include "tessel/errors.hpp"

namespace {

/// Visits a value and everything nested in it; returns a checksum so nothing is optimized away.
uint64_t touch(const tessel::gguf::Value& v) {
    using tessel::gguf::ValueType;
    switch (v.type()) {
        case ValueType::STRING:
            return v.as_string().size();
        case ValueType::ARRAY: {
            uint64_t sum = static_cast<uint32_t>(v.array_type());
            for (size_t i = 0; i < v.array_size(); ++i) sum += touch(v.at(i));
            return sum;
        }
        case ValueType::BOOL:
            return v.as_bool();
        case ValueType::FLOAT32:
        case ValueType::FLOAT64:
            return v.as_f64() > 0;
        case ValueType::INT8:
        case ValueType::INT16:
        case ValueType::INT32:
        case ValueType::INT64:
            return static_cast<uint64_t>(v.as_i64());
        default:
            return v.as_u64();
    }
}

uint64_t touch_file(const tessel::gguf::File& f) {
    uint64_t sum = f.version() + f.alignment() + f.data_offset();
    for (const auto& kv : f.metadata()) {
        sum += kv.key.size() + touch(kv.value) + kv.value.to_string(4).size();
        if (f.find(kv.key) != &kv.value) std::abort();  // keys are unique and indexed
    }
    for (const auto& t : f.tensors()) {
        if (f.find_tensor(t.name) != &t) std::abort();
        if (f.data_offset() + t.offset + t.size > f.file_size()) std::abort();
        const uint8_t* p = f.tensor_data(t);
        for (uint64_t i = 0; i < t.size; ++i) sum += p[i];
        sum += static_cast<uint64_t>(t.n_elements());
    }
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto file = tessel::gguf::File::from_memory(data, size, "fuzz.gguf");
        volatile uint64_t sink = touch_file(file);
        (void)sink;
    } catch (const tessel::Error&) {
        // Rejected input: the expected outcome.
    }
    return 0;
}
