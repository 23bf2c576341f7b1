// The all-reduce across processes (npu/host/allreduce_mpi.hpp), run by CTest under mpirun with 2,
// 3 and 4 ranks over TCP on loopback: every rank ends with the rank-order float sum of every rank's
// tensor, bit for bit, on an NPU stream and on the CPU, 1-D and 2-D, for sizes that do not divide
// evenly; a tensor whose size differs on one rank is an error on every rank naming it. With
// TESSEL_TEST_MPI_KILL_RANK=r, rank r kills itself before the first all-reduce (the killed-rank
// CTest: mpirun must exit non-zero, never hang).
#include <gtest/gtest.h>
#include <mpi.h>

#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "npu/host/allreduce_mpi.hpp"
#include "npu/host/device.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

/// Rank r's value of element i: distinct per rank, with fractions that make the sum order matter.
float value(int rank, size_t i) { return 0.1f * static_cast<float>(rank + 1) + 1e-3f * static_cast<float>(i % 1013) - 0.37f * static_cast<float>(rank % 2); }

/// Allreduces a tensor of shape ne in `dev`'s memory on `stream`; checks every element against the
/// rank-order sum.
void check_sum(Device& dev, Backend& stream, AllReduceComm& comm, std::initializer_list<int64_t> ne, AllReduceMode mode) {
    Tensor t;
    t.set_shape(DType::F32, ne);
    auto buf = dev.buffer_type().alloc_buffer(t.n_bytes());
    buf->init_tensor(t, 0);
    const int rank = static_cast<MpiCommunicator&>(comm).rank();
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = value(rank, i);
    buf->set_tensor(t, v.data(), 0, t.n_bytes());
    Tensor* ts[] = {&t};
    comm.allreduce(ts, mode);
    stream.synchronize();
    buf->get_tensor(t, v.data(), 0, t.n_bytes());
    size_t bad = 0;
    for (size_t i = 0; i < v.size(); ++i) {
        float want = value(0, i);
        for (int r = 1; r < static_cast<int>(comm.size()); ++r) want += value(r, i);
        bad += v[i] != want;
    }
    EXPECT_EQ(bad, 0u) << "rank " << rank << ", " << t.n_elements() << " elements";
}

TEST(MpiAllReduce, EveryRankHoldsTheRankOrderSumOnNpuAndCpu) {
    NpuDevice npu("NPU0", Config{});
    Device& cpu = cpu::cpu_device();
    for (Device* dev : {static_cast<Device*>(&npu), &cpu}) {
        SCOPED_TRACE(dev->name());
        auto stream = dev->init_backend({});
        Backend* streams[] = {stream.get()};
        MpiCommunicator comm(streams);
        if (const char* kill = std::getenv("TESSEL_TEST_MPI_KILL_RANK"))
            if (comm.rank() == std::atoi(kill)) std::raise(SIGKILL);
        int size = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        EXPECT_EQ(comm.size(), static_cast<size_t>(size));
        check_sum(*dev, *stream, comm, {1000}, AllReduceMode::Elements);
        check_sum(*dev, *stream, comm, {577, 5, 2}, AllReduceMode::Rows);
        check_sum(*dev, *stream, comm, {576, 512}, AllReduceMode::Elements);
    }
}

TEST(MpiAllReduce, ATensorOfAnotherSizeOnOneRankIsAnErrorOnEvery) {
    NpuDevice npu("NPU0", Config{});
    auto stream = npu.init_backend({});
    // through the registry's table, as a backend user reaches it
    const auto* api = static_cast<const AllReduceApi*>(npu.proc("allreduce_comm_mpi"));
    ASSERT_NE(api, nullptr);
    Backend* streams[] = {stream.get()};
    AllReduceComm* comm = api->init(streams, 1);
    const int rank = static_cast<MpiCommunicator*>(comm)->rank();
    if (comm->size() < 2) {
        api->free(comm);
        GTEST_SKIP() << "one rank: no other rank to differ from (CTest runs this under mpirun -np 2..4)";
    }
    Tensor t;
    t.set_shape(DType::F32, {rank == 1 ? int64_t{300} : int64_t{256}});
    auto buf = npu.buffer_type().alloc_buffer(t.n_bytes());
    buf->init_tensor(t, 0);
    Tensor* ts[] = {&t};
    try {
        api->allreduce_tensor(comm, ts, 1, 0);
        ADD_FAILURE() << "rank " << rank << ": no error";
    } catch (const Error& e) {
        const std::string want = rank == 1 ? "has 300 elements, rank 0's 256" : "has 256 elements, rank 1's 300";
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    EXPECT_THROW(api->init(streams, 2), Error);  // one stream per process
    api->free(comm);
}

}  // namespace
}  // namespace tessel::npu
