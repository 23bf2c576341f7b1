// The NPU device string (TESSEL_NPU_DEVICES): counts, lists, virtual sessions, groups, and errors
// that name the bad item.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "backend/registry.hpp"
#include "npu/host/config.hpp"
#include "npu/host/device.hpp"
#include "npu/host/device_spec.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

/// "name=d:s,d:s;name=..." for compact expectations.
std::string describe(const std::vector<DeviceEntry>& v) {
    std::string out;
    for (const DeviceEntry& e : v) {
        if (!out.empty()) out += ";";
        out += e.name + "=";
        for (size_t i = 0; i < e.members.size(); ++i)
            out += (i ? "," : "") + std::to_string(e.members[i].device) + ":" + std::to_string(e.members[i].session);
    }
    return out;
}

TEST(DeviceString, CountsArePhysicalDevicesFromNpu0) {
    EXPECT_EQ(describe(parse_device_string("0")), "");
    EXPECT_EQ(describe(parse_device_string("1")), "NPU0=0:0");
    EXPECT_EQ(describe(parse_device_string("3")), "NPU0=0:0;NPU1=1:0;NPU2=2:0");
    EXPECT_EQ(parse_device_string("16").size(), 16u);
    EXPECT_EQ(parse_device_string("16").back().name, "NPU15");
}

TEST(DeviceString, ListsSessionsAndGroups) {
    EXPECT_EQ(describe(parse_device_string("NPU0,NPU1")), "NPU0=0:0;NPU1=1:0");
    EXPECT_EQ(describe(parse_device_string(" NPU2 , NPU0 ")), "NPU2=2:0;NPU0=0:0");  // any order, blanks ignored
    EXPECT_EQ(describe(parse_device_string("NPU0:1,NPU0:0")), "NPU0:1=0:1;NPU0=0:0");  // session 0 is the device's name
    EXPECT_EQ(describe(parse_device_string("NPU02,NPU3:01")), "NPU2=2:0;NPU3:1=3:1");  // one name per session
    EXPECT_EQ(describe(parse_device_string("NPU0,NPU1\n")), "NPU0=0:0;NPU1=1:0");    // a line end (from a file)
    EXPECT_EQ(describe(parse_device_string("NPU[0-1]")), "NPU[0-1]=0:0,1:0");
    EXPECT_EQ(describe(parse_device_string("NPU[0,2]")), "NPU[0,2]=0:0,2:0");
    EXPECT_EQ(describe(parse_device_string("NPU[3,0-1]")), "NPU[3,0-1]=3:0,0:0,1:0");  // rank order as written
    EXPECT_EQ(describe(parse_device_string("NPU[0-1:1],NPU0,NPU1")), "NPU[0-1:1]=0:1,1:1;NPU0=0:0;NPU1=1:0");
    EXPECT_EQ(describe(parse_device_string("NPU[0 - 3]")), "NPU[0-3]=0:0,1:0,2:0,3:0");
    EXPECT_TRUE(parse_device_string("NPU[0-1]")[0].group());
    EXPECT_FALSE(parse_device_string("NPU0:1")[0].group());
    // sixteen sessions in all, groups included
    EXPECT_EQ(parse_device_string("NPU[0-3],NPU[0-3:1],NPU[0-3:2],NPU[0-3:3]").size(), 4u);
}

/// The error for `s`: an Environment error naming the variable and `item`, saying `why`.
void expect_error(const char* s, const std::string& item, const std::string& why) {
    try {
        const auto v = parse_device_string(s);
        ADD_FAILURE() << "'" << s << "' accepted as " << describe(v);
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.code(), ErrorCode::Environment) << msg;
        EXPECT_EQ(msg.rfind(std::string("TESSEL_NPU_DEVICES='") + s + "'", 0), 0u) << msg;
        if (!item.empty()) {
            EXPECT_NE(msg.find("item '" + item + "'"), std::string::npos) << msg;
        }
        EXPECT_NE(msg.find(why), std::string::npos) << msg;
    }
}

TEST(DeviceString, ErrorsNameTheBadItem) {
    expect_error("", "", "a device count");
    expect_error("17", "", "a device count from 0 to 16");
    expect_error("NPU0,HTP1", "HTP1", "a name starting with NPU");
    expect_error("NPU0,,NPU1", "", "no empty item");
    expect_error("NPU0,", "", "no empty item");
    expect_error("NPU", "NPU", "a device index from 0 to 15, none given");
    expect_error("NPU02,NPU2", "NPU2", "session NPU2:0 is already used by 'NPU2'");
    expect_error("NPU0,NPU0:0", "NPU0:0", "session NPU0:0 is already used by 'NPU0'");
    expect_error("NPU16", "NPU16", "a device index from 0 to 15, not '16'");
    expect_error("NPU-1", "NPU-1", "a device index");
    expect_error("NPU0:", "NPU0:", "a session index from 0 to 15, none given");
    expect_error("NPU0:x", "NPU0:x", "a session index");
    expect_error("NPU0:16", "NPU0:16", "a session index");
    expect_error("NPU1,NPU1", "NPU1", "session NPU1:0 is already used by 'NPU1'");
    expect_error("NPU[0-1],NPU1", "NPU1", "already used by 'NPU[0-1]'");
    expect_error("NPU[0-1", "NPU[0-1", "a ']' closing the group");
    expect_error("NPU0-1]", "NPU0-1]", "']' closes no '['");
    expect_error("NPU[[0]]", "NPU[[0]]", "no bracket inside a group");
    expect_error("NPU[0-1]x", "NPU[0-1]x", "nothing after the group's ']'");
    expect_error("NPU[0]", "NPU[0]", "a group of 2 to 4 devices");
    expect_error("NPU[0-4]", "NPU[0-4]", "a group of 2 to 4 devices");
    expect_error("NPU[1-0]", "NPU[1-0]", "a range a-b with a <= b, not '1-0'");
    expect_error("NPU[0,0]", "NPU[0,0]", "device 0 named twice in the group");
    expect_error("NPU[0-1,1]", "NPU[0-1,1]", "device 1 named twice");
    expect_error("NPU[0,]", "NPU[0,]", "a device index or range");
    expect_error("NPU[0-1:]", "NPU[0-1:]", "a session index");
    expect_error("NPU[0-3],NPU[0-3:1],NPU[0-3:2],NPU[0-3:3],NPU4", "NPU4", "at most 16 sessions");
    // A long string is shown cut, so the error stays one readable line.
    std::string long_list;
    for (int i = 0; i < 100; ++i) long_list += i ? ",NPU0:1" : "NPU0:1";
    try {
        parse_device_string(long_list);
        ADD_FAILURE() << "a repeated session accepted";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_LT(msg.size(), 300u) << msg;
        EXPECT_NE(msg.find("...': item 'NPU0:1': session NPU0:1 is already used"), std::string::npos) << msg;
    }
}

/// register_devices() with TESSEL_NPU_DEVICES=`value` (unset afterwards): the names registered.
std::vector<std::string> registered(const char* value) {
    setenv("TESSEL_NPU_DEVICES", value, 1);
    struct Unset {
        ~Unset() { unsetenv("TESSEL_NPU_DEVICES"); }
    } unset;
    Registry reg;
    register_devices(reg);
    std::vector<std::string> names;
    for (const Device* d : reg.devices()) names.push_back(d->name());
    return names;
}

TEST(DeviceString, TheRegistryOffersTheListedDevices) {
    EXPECT_EQ(registered("2"), (std::vector<std::string>{"NPU0", "NPU1"}));
    EXPECT_EQ(registered("NPU0,NPU2"), (std::vector<std::string>{"NPU0", "NPU2"}));
    EXPECT_EQ(registered("0"), std::vector<std::string>{});
    EXPECT_EQ(config_error(), "");
    // a bad string keeps NPU0 visible so that its first use reports the variable
    EXPECT_EQ(registered("NPU0,NPU9x"), std::vector<std::string>{"NPU0"});
    EXPECT_NE(config_error().find("item 'NPU9x'"), std::string::npos) << config_error();
    EXPECT_EQ(registered("1"), std::vector<std::string>{"NPU0"});
    EXPECT_EQ(config_error(), "");
    EXPECT_EQ(registered("NPU1:2,NPU0,NPU1"), (std::vector<std::string>{"NPU1:2", "NPU0", "NPU1"}));
    EXPECT_EQ(config_error(), "");
}

TEST(DeviceString, AGroupRegistersAsOneDeviceWithItsRanks) {
    setenv("TESSEL_NPU_DEVICES", "NPU[2,0-1:1],NPU3", 1);
    Registry reg;
    register_devices(reg);
    unsetenv("TESSEL_NPU_DEVICES");
    ASSERT_EQ(config_error(), "");
    std::vector<std::string> names;
    for (const Device* d : reg.devices()) names.push_back(d->name());
    EXPECT_EQ(names, (std::vector<std::string>{"NPU[2,0-1:1]", "NPU3"}));
    const auto* group = dynamic_cast<const NpuDevice*>(reg.find("NPU[2,0-1:1]"));
    ASSERT_NE(group, nullptr);
    std::vector<std::string> peers;
    for (const auto& p : group->peers()) peers.push_back(p->name());
    EXPECT_EQ(peers, (std::vector<std::string>{"NPU0:1", "NPU1:1"}));  // rank 0 is NPU2:1, the group's own session
    EXPECT_TRUE(dynamic_cast<const NpuDevice*>(reg.find("NPU3"))->peers().empty());
}

}  // namespace
}  // namespace tessel::npu
