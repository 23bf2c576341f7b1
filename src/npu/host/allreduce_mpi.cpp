#include "npu/host/allreduce_mpi.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <string>
#include <vector>

#include "backend/buffer.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

/// Set when an MPI call failed: the other ranks may be inside a collective this one left.
std::atomic<bool> g_failed{false};

/// Initialises MPI once (unless the program did) and finalises what it initialised at exit (after
/// a failed call: ends the job instead, since finalising would wait for ranks stuck in a collective).
class MpiSession {
public:
    static void join() { static MpiSession session; }

private:
    MpiSession() {
        int ready = 0;
        MPI_Initialized(&ready);
        if (ready) return;
        int provided = 0;
        if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            throw Error(ErrorCode::Device, "all-reduce over MPI: MPI_Init_thread failed");
        owned_ = true;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors come back as statuses
    }
    ~MpiSession() {
        int done = 0;
        MPI_Finalized(&done);
        if (owned_ && !done) {
            if (g_failed.load()) MPI_Abort(MPI_COMM_WORLD, 1);
            MPI_Finalize();
        }
    }
    bool owned_ = false;
};

void check(int status, const char* call, int rank) {
    if (status == MPI_SUCCESS) return;
    g_failed.store(true);
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(status, text, &len);
    throw Error(ErrorCode::Device, "all-reduce over MPI, rank " + std::to_string(rank) + ": " + call + ": " + std::string(text, static_cast<size_t>(len)));
}

}  // namespace

MpiCommunicator::MpiCommunicator(std::span<Backend* const> streams, uint32_t timeout_ms) : timeout_ms_(timeout_ms) {
    if (streams.size() != 1 || !streams[0])
        throw Error(ErrorCode::InvalidArgument,
                    "all-reduce over MPI: " + std::to_string(streams.size()) + " streams; one per process (its rank's) expected");
    stream_ = streams[0];
    MpiSession::join();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

void MpiCommunicator::wait(MPI_Request& request, const char* call) const {
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t polls = 0;; ++polls) {
        int done = 0;
        check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call, rank_);
        if (done) return;
        if (polls < 1000) continue;  // a short spin: most exchanges end within it
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(timeout_ms_)) {
            std::fprintf(stderr,
                         "tessel: error: MPI rank %d: %s: not every rank took part within TESSEL_NPU_TIMEOUT_MS=%u "
                         "(a rank that stopped, or one given other flags); ending the job\n",
                         rank_, call, timeout_ms_);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

void MpiCommunicator::allreduce(std::span<Tensor* const> tensors, AllReduceMode /*both modes sum every element*/,
                                AllReduceUse /*the sums always land in the tensors*/) {
    const std::string me = "all-reduce over MPI, rank " + std::to_string(rank_);
    if (tensors.size() != 1 || !tensors[0])
        throw Error(ErrorCode::InvalidArgument, me + ": " + std::to_string(tensors.size()) + " tensors; this rank's one expected");
    Tensor& t = *tensors[0];
    if (t.type != DType::F32 || !t.is_contiguous() || !t.buffer)
        throw Error(ErrorCode::InvalidArgument, me + ": tensor " + describe(t) + ": a placed, contiguous F32 tensor expected");
    // Every rank learns every rank's element count first, so a mismatch is an error on all of them.
    const int64_t n = t.n_elements();
    std::vector<int64_t> counts(static_cast<size_t>(size_));
    MPI_Request request;
    check(MPI_Iallgather(&n, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, MPI_COMM_WORLD, &request), "MPI_Iallgather", rank_);
    wait(request, "MPI_Iallgather");
    for (int r = 0; r < size_; ++r)
        if (counts[static_cast<size_t>(r)] != n)
            throw Error(ErrorCode::InvalidArgument, me + ": tensor " + describe(t) + " has " + std::to_string(n) + " elements, rank " +
                                                        std::to_string(r) + "'s " + std::to_string(counts[static_cast<size_t>(r)]));
    if (n > INT32_MAX) throw Error(ErrorCode::InvalidArgument, me + ": tensor " + describe(t) + " exceeds 2^31 elements");
    stream_->synchronize();
    std::vector<float> mine(static_cast<size_t>(n)), all(static_cast<size_t>(n) * static_cast<size_t>(size_));
    t.buffer->get_tensor(t, mine.data(), 0, mine.size() * sizeof(float));
    check(MPI_Iallgather(mine.data(), static_cast<int>(n), MPI_FLOAT, all.data(), static_cast<int>(n), MPI_FLOAT, MPI_COMM_WORLD, &request),
          "MPI_Iallgather", rank_);
    wait(request, "MPI_Iallgather");
    for (size_t i = 0; i < mine.size(); ++i) {
        float sum = all[i];
        for (size_t r = 1; r < static_cast<size_t>(size_); ++r) sum += all[r * mine.size() + i];
        mine[i] = sum;
    }
    t.buffer->set_tensor(t, mine.data(), 0, mine.size() * sizeof(float));
}

void MpiCommunicator::gather_parts(const Tensor& t) {
    const std::string me = "row parts over MPI, rank " + std::to_string(rank_);
    if (t.type != DType::F32 || t.nb[0] != sizeof(float) || !t.data)
        throw Error(ErrorCode::InvalidArgument, me + ": tensor " + describe(t) + ": F32 rows in host memory expected");
    const int64_t n = t.ne[0], n_rt = (n + 31) / 32, cols = t.ne[1] * t.ne[2] * t.ne[3];
    auto rows = [&](int p) {
        const int64_t lo = std::min(n, n_rt * p / size_ * 32), hi = std::min(n, n_rt * (p + 1) / size_ * 32);
        return std::pair<int64_t, int64_t>(lo, hi);
    };
    auto column = [&](int64_t c) {
        const int64_t i1 = c % t.ne[1], i2 = (c / t.ne[1]) % t.ne[2], i3 = c / (t.ne[1] * t.ne[2]);
        return reinterpret_cast<float*>(static_cast<uint8_t*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3]);
    };
    std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
    int64_t total = 0;
    for (int p = 0; p < size_; ++p) {
        const auto [lo, hi] = rows(p);
        if ((hi - lo) * cols + total > INT32_MAX) throw Error(ErrorCode::InvalidArgument, me + ": tensor " + describe(t) + " exceeds 2^31 elements");
        counts[static_cast<size_t>(p)] = static_cast<int>((hi - lo) * cols);
        displs[static_cast<size_t>(p)] = static_cast<int>(total);
        total += (hi - lo) * cols;
    }
    std::vector<float> all(static_cast<size_t>(total));
    const auto [my_lo, my_hi] = rows(rank_);
    std::vector<float> mine(static_cast<size_t>((my_hi - my_lo) * cols));
    for (int64_t c = 0; c < cols; ++c) std::copy(column(c) + my_lo, column(c) + my_hi, mine.begin() + c * (my_hi - my_lo));
    MPI_Request request;
    check(MPI_Iallgatherv(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all.data(), counts.data(), displs.data(), MPI_FLOAT,
                          MPI_COMM_WORLD, &request),
          "MPI_Iallgatherv", rank_);
    wait(request, "MPI_Iallgatherv");
    for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        const auto [lo, hi] = rows(p);
        const float* from = all.data() + displs[static_cast<size_t>(p)];
        for (int64_t c = 0; c < cols; ++c) std::copy(from + c * (hi - lo), from + (c + 1) * (hi - lo), column(c) + lo);
    }
}

bool launched_as_mpi_ranks() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
        if (const char* v = std::getenv(var)) return std::atoi(v) > 1;
    return false;
}

const AllReduceApi& mpi_allreduce_api() {
    static const AllReduceApi api{
        [](Backend* const* streams, int n) -> AllReduceComm* {
            return new MpiCommunicator(std::span<Backend* const>(streams, n < 0 ? 0 : static_cast<size_t>(n)));
        },
        allreduce_api_free, allreduce_api_call};
    return api;
}

}  // namespace tessel::npu
