#include "npu/host/device_spec.hpp"

#include <algorithm>
#include <charconv>

#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

class Parser {
public:
    Parser(std::string_view s, std::string_view source) : s_(s), source_(source) {}

    std::vector<DeviceEntry> run() {
        std::string_view rest = trim(s_);
        if (rest.empty()) fail("", "a device count 0..16 or a list of NPU<p>, NPU<p>:<v>, NPU[<set>] items");
        if (std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) return count(rest);
        for (std::string_view item : split_items(rest)) add(item);
        return out_;
    }

private:
    [[noreturn]] void fail(std::string_view item, const std::string& why) const {
        // the string as given, cut after kShown characters (an error stays one readable line)
        constexpr size_t kShown = 120;
        const std::string shown = s_.size() > kShown ? std::string(s_.substr(0, kShown)) + "..." : std::string(s_);
        std::string msg = std::string(source_) + "='" + shown + "': ";
        if (!item.empty()) msg += "item '" + std::string(item) + "': ";
        throw Error(ErrorCode::Environment, msg + why);
    }

    static std::string_view trim(std::string_view v) {
        const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
        while (!v.empty() && blank(v.front())) v.remove_prefix(1);
        while (!v.empty() && blank(v.back())) v.remove_suffix(1);
        return v;
    }

    std::vector<DeviceEntry> count(std::string_view v) {
        uint32_t n = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || end != v.data() + v.size() || n > kMaxSessions) fail("", "a device count from 0 to 16");
        for (uint32_t i = 0; i < n; ++i) out_.push_back({"NPU" + std::to_string(i), {{i, 0}}});
        return out_;
    }

    /// Items separated by commas outside brackets.
    std::vector<std::string_view> split_items(std::string_view v) const {
        std::vector<std::string_view> items;
        size_t start = 0;
        int depth = 0;
        for (size_t i = 0; i <= v.size(); ++i) {
            if (i == v.size() && depth != 0) fail(trim(v.substr(start)), "a ']' closing the group");
            if (i == v.size() || (v[i] == ',' && depth == 0)) {
                const std::string_view item = trim(v.substr(start, i - start));
                if (item.empty()) fail("", "no empty item between commas");
                items.push_back(item);
                start = i + 1;
            } else if (v[i] == '[') {
                if (++depth > 1) fail(trim(v.substr(start)), "no bracket inside a group");
            } else if (v[i] == ']') {
                if (--depth < 0) fail(trim(v.substr(start, i + 1 - start)), "']' closes no '['");
            }
        }
        return items;
    }

    /// A whole number 0..15 (no sign, no blanks) or fail naming `item`.
    uint32_t index(std::string_view digits, std::string_view item, const char* what) const {
        uint32_t x = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), x);
        if (digits.empty()) fail(item, std::string(what) + " from 0 to 15, none given");
        if (ec != std::errc() || end != digits.data() + digits.size() || x >= kMaxSessions)
            fail(item, std::string(what) + " from 0 to 15, not '" + std::string(digits) + "'");
        return x;
    }

    void add(std::string_view item) {
        if (item.substr(0, 3) != "NPU") fail(item, "a name starting with NPU");
        std::string_view body = item.substr(3);
        DeviceEntry e;
        if (!body.empty() && body.front() == '[') {
            for (char c : item)  // a group keeps its name as written, blanks dropped
                if (c != ' ' && c != '\t') e.name += c;
            if (body.back() != ']') fail(item, "nothing after the group's ']'");
            std::string_view set = body.substr(1, body.size() - 2);
            uint32_t session = 0;
            if (const size_t colon = set.find(':'); colon != std::string_view::npos) {
                session = index(trim(set.substr(colon + 1)), item, "a session index");
                set = set.substr(0, colon);
            }
            for (uint32_t d : device_set(set, item)) e.members.push_back({d, session});
            if (e.members.size() < kMinGroup || e.members.size() > kMaxGroup) fail(item, "a group of 2 to 4 devices");
        } else {
            const size_t colon = body.find(':');
            const uint32_t device = index(body.substr(0, colon), item, "a device index");
            const uint32_t session = colon == std::string_view::npos ? 0 : index(body.substr(colon + 1), item, "a session index");
            e.members.push_back({device, session});
            e.name = session_name(e.members[0]);  // one name per session: "NPU02" and "NPU2:0" are NPU2
        }
        for (const SessionRef& m : e.members) {
            for (const DeviceEntry& other : out_)
                if (std::find(other.members.begin(), other.members.end(), m) != other.members.end())
                    fail(item, "session NPU" + std::to_string(m.device) + ":" + std::to_string(m.session) + " is already used by '" + other.name + "'");
            if (++n_sessions_ > kMaxSessions) fail(item, "at most 16 sessions in all");
        }
        out_.push_back(std::move(e));
    }

    /// "0-1,3" -> {0, 1, 3}, in the order written; a repeated device is an error.
    std::vector<uint32_t> device_set(std::string_view set, std::string_view item) const {
        std::vector<uint32_t> out;
        size_t start = 0;
        for (;;) {
            const size_t comma = set.find(',', start);
            const std::string_view part = trim(set.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
            if (part.empty()) fail(item, "a device index or range a-b between the brackets' commas");
            const size_t dash = part.find('-');
            const uint32_t lo = index(trim(part.substr(0, dash)), item, "a device index");
            const uint32_t hi = dash == std::string_view::npos ? lo : index(trim(part.substr(dash + 1)), item, "a device index");
            if (hi < lo) fail(item, "a range a-b with a <= b, not '" + std::string(part) + "'");
            for (uint32_t d = lo; d <= hi; ++d) {
                if (std::find(out.begin(), out.end(), d) != out.end()) fail(item, "device " + std::to_string(d) + " named twice in the group");
                out.push_back(d);
            }
            if (comma == std::string_view::npos) return out;
            start = comma + 1;
        }
    }

    std::string_view s_, source_;
    std::vector<DeviceEntry> out_;
    uint32_t n_sessions_ = 0;
};

}  // namespace

std::vector<DeviceEntry> parse_device_string(std::string_view s, std::string_view source) { return Parser(s, source).run(); }

std::string session_name(const SessionRef& s) {
    std::string name = "NPU";
    name += std::to_string(s.device);
    if (s.session) {
        name += ':';
        name += std::to_string(s.session);
    }
    return name;
}

}  // namespace tessel::npu
