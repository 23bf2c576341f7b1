// The NPU device string (TESSEL_NPU_DEVICES; docs/npu.md, "Devices"): which devices the registry
// offers and what each is made of. Parsing only; nothing is opened here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessel::npu {

/// Most sessions one device string may name, group members included.
inline constexpr uint32_t kMaxSessions = 16;
/// Fewest and most members of a group (the all-reduce communicator's rank range).
inline constexpr uint32_t kMinGroup = 2, kMaxGroup = 4;

/// One session: virtual session `session` on physical device (device runtime) `device`.
struct SessionRef {
    uint32_t device = 0;
    uint32_t session = 0;
    bool operator==(const SessionRef&) const = default;
};

/// One registry entry: a single session ("NPU1", "NPU0:1") or a group ("NPU[0-1]", "NPU[0,2:1]"),
/// one logical device whose batches go to every member, each doing its rank's rows.
struct DeviceEntry {
    std::string name;                  ///< the registry name: "NPU<p>" or "NPU<p>:<v>" (v > 0); a group's as written without blanks
    std::vector<SessionRef> members;   ///< one for a single session; kMinGroup..kMaxGroup for a group, rank order
    bool group() const { return members.size() > 1; }
};

/// The registry name of session `s`: "NPU<p>", or "NPU<p>:<v>" for v > 0.
std::string session_name(const SessionRef& s);

/// Parses a device string:
///   - a count "0".."16": NPU0..NPU(n-1), n physical devices (unlike the seed, where a count means
///     n virtual sessions of device 0);
///   - a comma list of items (blanks, tabs and line ends around items and group members ignored):
///       NPU<p>        session 0 of physical device p (0..15), named "NPU<p>" (leading zeros dropped);
///       NPU<p>:<v>    virtual session v (0..15) of device p, sharing p's device runtime ("NPU<p>:0" is NPU<p>);
///       NPU[<set>]    a group of session 0 of every device in <set>;
///       NPU[<set>:<v>] a group of session v of every device in <set>;
///     where <set> is a comma list of indices and ranges a-b (a <= b), e.g. "0-1", "0,2", "0-1,3".
/// Errors (tessel::Error(Environment)), each naming the bad item: an unknown item, an index out of
/// range, a reversed range, an empty or repeated group member, a group of fewer than kMinGroup or
/// more than kMaxGroup members, a session named twice (alone or in groups), more than kMaxSessions
/// sessions, an empty string or item. The message starts with `source`='s' (the variable or flag;
/// s cut after 120 characters).
std::vector<DeviceEntry> parse_device_string(std::string_view s, std::string_view source = "TESSEL_NPU_DEVICES");

}  // namespace tessel::npu
