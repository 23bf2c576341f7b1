#include "npu/host/device.hpp"

#include <map>
#include <regex>

#include "backend/registry.hpp"
#include "npu/host/allreduce.hpp"
#ifdef TESSEL_MPI
#include "npu/host/allreduce_mpi.hpp"
#endif
#include "npu/host/backend.hpp"
#include "npu/host/session.hpp"
#include "npu/host/translate.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

std::string& config_error_text() {
    static std::string text;
    return text;
}

}  // namespace

struct NpuDevice::OpFilter {
    std::regex re;
};

NpuDevice::NpuDevice(std::string name, const Config& cfg, std::shared_ptr<SharedDevice> shared)
    : NpuDevice(name, name, cfg, std::move(shared), {}) {}

NpuDevice::NpuDevice(std::string name, std::string lead, const Config& cfg, std::shared_ptr<SharedDevice> shared,
                     std::vector<std::unique_ptr<NpuDevice>> peers)
    : name_(std::move(name)),
      session_name_(std::move(lead)),
      cfg_(cfg),
      device_buft_(*this, false),
      host_buft_(*this, true),
      shared_(std::move(shared)),
      peers_(std::move(peers)) {
    if (!cfg_.opfilter.empty()) opfilter_ = std::make_unique<OpFilter>(OpFilter{std::regex(cfg_.opfilter)});
}

NpuDevice::~NpuDevice() = default;

std::string NpuDevice::description() const {
    if (cfg_.link == LinkKind::Hexagon) return "tessel NPU on Hexagon under QEMU (hexagon link)";
    return std::string("tessel virtual NPU (") + link_kind_name(cfg_.link) + " link)";
}

void NpuDevice::memory(size_t& free, size_t& total) const { free = total = static_cast<size_t>(cfg_.max_mapped); }

Session& NpuDevice::session() {
    std::lock_guard lock(mu_);
    if (!config_error().empty()) throw Error(ErrorCode::InvalidArgument, config_error());
    if (!open_error_.empty()) throw Error(ErrorCode::Device, open_error_);
    if (!session_) {
        try {
            session_ = std::make_unique<Session>(session_name_, cfg_, shared_.get());
        } catch (const Error& e) {
            open_error_ = e.what();
            throw;
        }
    }
    return *session_;
}

DeviceBudget NpuDevice::budget() const {
    std::lock_guard lock(mu_);
    DeviceBudget b = session_ ? budget_of(session_->hwinfo()) : DeviceBudget{cfg_.vtcm_bytes, cfg_.n_threads};
    b.mm_kernels = cfg_.mm_select;
    b.matrix_unit = b.matrix_unit && cfg_.matrix;
    b.dma = cfg_.dma;
    return b;
}

bool NpuDevice::supports_op(const Tensor& t) const {
    if (!device_supports(t, budget())) return false;
    return !(opfilter_ && std::regex_search(op_name(t.op), opfilter_->re));
}

KernelKind NpuDevice::declared_kernel(const Tensor& t) const {
    return device_supports(t, budget()) ? KernelKind::Fast : KernelKind::None;
}

void* NpuDevice::proc(const std::string& name) {
    if (name == "host_buffer_type") return static_cast<BufferType*>(&host_buft_);
    if (name == "cpu_compute_buffer_type" && cfg_.hostbuf) return static_cast<BufferType*>(&host_buft_);
    if (name == "allreduce_comm") return const_cast<AllReduceApi*>(&allreduce_api());
#ifdef TESSEL_MPI
    if (name == "allreduce_comm_mpi") return const_cast<AllReduceApi*>(&mpi_allreduce_api());
#endif
    return nullptr;
}

std::unique_ptr<Backend> NpuDevice::init_backend(const BackendParams& params) {
    auto backend = std::make_unique<NpuBackend>(*this, session());
#ifdef TESSEL_MPI
    // started by mpirun with several ranks: each process's device computes its part of the rows
    if (params.split_rows && peers_.empty() && launched_as_mpi_ranks()) {
        Backend* stream = backend.get();
        backend->set_remote_ranks(std::make_unique<MpiCommunicator>(std::span<Backend* const>(&stream, 1), cfg_.timeout_ms));
    }
#endif
    if (params.split_rows)
        for (const auto& peer : peers_) {
            // each side waits for the other's fences
            session().map_peer_fences(peer->session());
            peer->session().map_peer_fences(session());
            backend->add_peer(std::make_unique<NpuBackend>(*peer, peer->session()));
        }
    return backend;
}

std::unique_ptr<Event> NpuDevice::new_event() { return std::make_unique<NpuEvent>(); }

const std::string& config_error() { return config_error_text(); }

void register_devices(Registry& registry) {
    Config cfg;
    config_error_text().clear();
    try {
        cfg = config_from_env();
    } catch (const Error& e) {
        // Keep NPU0 visible so its first use reports the bad variable instead of "no such device".
        config_error_text() = e.what();
        registry.add(std::make_unique<NpuDevice>("NPU0", Config{}));
        return;
    }
    // One device runtime per physical device that has several sessions, shared by them.
    std::map<uint32_t, uint32_t> sessions;
    for (const DeviceEntry& e : cfg.devices)
        for (const SessionRef& m : e.members) ++sessions[m.device];
    std::map<uint32_t, std::shared_ptr<SharedDevice>> shared;
    for (const auto& [device, n] : sessions)
        if (n > 1) shared[device] = std::make_shared<SharedDevice>("NPU" + std::to_string(device), n);
    auto runtime_of = [&](const SessionRef& m) {
        const auto it = shared.find(m.device);
        return it != shared.end() ? it->second : nullptr;
    };
    for (const DeviceEntry& e : cfg.devices) {
        std::vector<std::unique_ptr<NpuDevice>> peers;
        for (size_t r = 1; r < e.members.size(); ++r)
            peers.push_back(std::make_unique<NpuDevice>(session_name(e.members[r]), cfg, runtime_of(e.members[r])));
        registry.add(std::make_unique<NpuDevice>(e.name, session_name(e.members[0]), cfg, runtime_of(e.members[0]), std::move(peers)));
    }
}

}  // namespace tessel::npu
