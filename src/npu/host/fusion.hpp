// Enqueue-time op fusion (docs/npu.md, "Fusion"): graph_compute asks for the device op that starts
// at a node, and a table of patterns may answer with one op computing several consecutive nodes
// (a norm and the MUL by its weight, a matmul and its bias ADD, matmuls sharing their activations).
// A pattern is a match function (which nodes) and an emit function (the op); a later pattern
// (e.g. ALLREDUCE+ADD) is one more table entry.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/tensor.hpp"
#include "npu/host/plan.hpp"
#include "npu/host/translate.hpp"

namespace tessel::npu {

/// Kinds of fusion, the bits of TESSEL_NPU_OPFUSION (value 1 enables all; bit 0 names no kind).
enum FusionKind : uint32_t {
    kFuseNormMul = 1u << 1,        ///< RMS_NORM / NORM followed by MUL of its output with a weight
    kFuseMatmulBias = 1u << 2,     ///< MUL_MAT followed by ADD of a bias row [N]
    kFuseSharedMatmul = 1u << 3,   ///< MUL_MATs (MUL_MAT_IDs) sharing activations (and ids), weight type and K
};
inline constexpr uint32_t kFuseAll = kFuseNormMul | kFuseMatmulBias | kFuseSharedMatmul;

/// The nodes of one graph_compute call as the patterns see them: their order and, per tensor, how
/// many nodes read it (directly or through a view of it).
class FusionGraph {
public:
    explicit FusionGraph(const std::vector<Tensor*>& nodes);
    const std::vector<Tensor*>& nodes() const { return nodes_; }
    /// Index of the first node at or after i that computes something (is_no_op false), or nodes().size().
    size_t next_op(size_t i) const;
    /// True when t may be fused away: one node of the list reads it (a view of t counts as a reader),
    /// no node of another split does (kFlagSplitOutput), it is no graph output (kFlagOutput) and no
    /// view itself.
    bool sole_reader(const Tensor& t) const;

private:
    const std::vector<Tensor*>& nodes_;
    std::unordered_map<const Tensor*, int> readers_;
};

/// A device op and the nodes it computes: one node, or several fused.
struct FusedOp {
    DeviceOp op;
    std::string name;                  ///< "MUL_MAT", or e.g. "RMS_NORM+MUL", "MUL_MAT+ADD", "MUL_MAT x3"
    std::vector<const Tensor*> nodes;  ///< the original nodes, in graph order
    const int32_t* params = nullptr;   ///< op_params the descriptor carries (the first node's)
};

/// What a pattern sees: the graph, the device's budget, the enabled kinds.
struct FusionContext {
    const FusionGraph& graph;
    const DeviceBudget& budget;
    uint32_t kinds;
};

/// One pattern of the table. match looks at the computing node at index `first` and, when the
/// pattern applies, fills `members` with the indices of the nodes it fuses (ascending, `first`
/// first, only no-op nodes between them) and returns true. emit builds the op of those members.
struct FusionPattern {
    uint32_t kind;  ///< its FusionKind bit
    bool (*match)(const FusionContext& ctx, size_t first, std::vector<size_t>& members);
    FusedOp (*emit)(const FusionContext& ctx, const std::vector<size_t>& members);
};

/// The table, in the order patterns are tried (the first that matches and fits wins).
const std::vector<FusionPattern>& fusion_patterns();

/// The device op starting at computing node `first`: the first enabled pattern (ctx.kinds) that
/// matches, whose outputs overlap none of its operands' bytes or each other, and that `fits`
/// (e.g. an empty batch); otherwise the node alone (translate). Sets *next to the index after its
/// last node. Throws what translate throws for a node the device does not implement.
FusedOp next_device_op(const FusionContext& ctx, size_t first, const std::function<bool(const DeviceOp&)>& fits, size_t* next);

}  // namespace tessel::npu
