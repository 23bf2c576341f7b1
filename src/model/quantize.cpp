#include "model/quantize.hpp"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <thread>

#include "gguf/writer.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

namespace tessel::model {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kQuantizationVersion = 2;  // ggml.h GGML_QNT_VERSION

void check_paths(const std::string& in_path, const std::string& out_path) {
    std::error_code ec, ec_in, ec_out;
    const fs::path in_abs = fs::weakly_canonical(in_path, ec_in), out_abs = fs::weakly_canonical(out_path, ec_out);
    bool same = !ec_in && !ec_out && in_abs == out_abs;
    if (!same && fs::exists(out_path, ec)) same = fs::equivalent(in_path, out_path, ec);
    if (same) throw Error(ErrorCode::InvalidArgument, out_path + ": the output is the input file " + in_path);
    const fs::path dir = fs::path(out_path).has_parent_path() ? fs::path(out_path).parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw Error(ErrorCode::Io, out_path + ": cannot write the output: folder " + dir.string() + " does not exist");
    if (::access(dir.c_str(), W_OK) != 0)
        throw Error(ErrorCode::Io, out_path + ": cannot write the output: folder " + dir.string() + " is not writable");
    if (fs::is_directory(out_path, ec)) throw Error(ErrorCode::Io, out_path + ": cannot write the output: it is a folder");
}

}  // namespace

std::vector<uint8_t> convert_tensor(const uint8_t* src, const gguf::TensorInfo& t, DType to, int n_threads) {
    const int64_t cols = t.ne[0];
    const int64_t rows = t.ne[1] * t.ne[2] * t.ne[3];
    const uint64_t in_row = dtype_row_bytes(t.type, cols), out_row = dtype_row_bytes(to, cols);
    std::vector<uint8_t> out(out_row * static_cast<uint64_t>(rows));
    auto work = [&](int64_t r0, int64_t r1) {
        std::vector<float> f(static_cast<size_t>(cols));
        for (int64_t r = r0; r < r1; ++r) {
            quant::dequantize_row(t.type, src + static_cast<uint64_t>(r) * in_row, f.data(), cols);
            quant::quantize_row(to, f.data(), out.data() + static_cast<uint64_t>(r) * out_row, cols);
        }
    };
    const int64_t n = std::max<int64_t>(1, std::min<int64_t>(n_threads, rows));
    std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int64_t i = 1; i < n; ++i)
        threads.emplace_back([&, i] {
            try {
                work(rows * i / n, rows * (i + 1) / n);
            } catch (...) {
                errors[static_cast<size_t>(i)] = std::current_exception();
            }
        });
    try {
        work(0, rows / n);
    } catch (...) {
        errors[0] = std::current_exception();
    }
    for (std::thread& th : threads) th.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    return out;
}

QuantizeStats quantize_model(const std::string& in_path, const std::string& out_path, const QuantTarget& target,
                             const QuantOptions& opt, int n_threads, const TensorDone& on_tensor) {
    const auto start = std::chrono::steady_clock::now();
    if (n_threads < 1) throw Error(ErrorCode::InvalidArgument, "quantize: threads must be >= 1, got " + std::to_string(n_threads));
    check_paths(in_path, out_path);
    const gguf::File in = gguf::File::open(in_path);
    const QuantPlan plan = plan_quantization(in, target, opt);

    gguf::Writer w;
    for (const gguf::KeyValue& kv : in.metadata())
        if (!kv.key.starts_with("split.")) w.set(kv.key, kv.value);
    w.set("general.quantization_version", gguf::Value::u32(kQuantizationVersion));
    w.set("general.file_type", gguf::Value::u32(target.file_type));

    QuantizeStats st;
    for (const TensorPlan& p : plan.tensors) {
        const gguf::TensorInfo& t = *p.info;
        std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
        if (p.converts()) {
            const std::vector<uint8_t> data = convert_tensor(in.tensor_data(t), t, p.to, n_threads);
            w.add_tensor(t.name, p.to, ne, data.data(), data.size());
        } else {
            w.add_tensor(t.name, t.type, ne, in.tensor_data(t), t.size);
        }
        st.bytes_in += t.size;
        st.bytes_out += p.bytes_out;
        if (on_tensor) on_tensor(p);
    }
    w.write_file(out_path);
    st.file_bytes = w.file_size();
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return st;
}

}  // namespace tessel::model
