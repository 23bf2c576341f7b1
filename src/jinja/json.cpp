// JSON in and out: tojson as HF transformers defines it (Python's json.dumps with
// ensure_ascii=False), and JSON text (a chat's messages and tools) as template values.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "jinja/builtins.hpp"
#include "jinja/template.hpp"

namespace tessel::jinja {
namespace {

// json.dumps escapes only '"', '\\' and control characters when ensure_ascii is false.
void json_string(const std::string& s, std::string& out) {
    out += '"';
    for (const unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

void dump(const Value& v, int indent, int level, std::string& out, const Pos& pos) {
    if (level > 200) fail(pos, "tojson: value nested too deeply");
    const auto newline = [&](int lvl) {
        if (indent < 0) return;
        out += '\n';
        out.append(static_cast<size_t>(indent * lvl), ' ');
    };
    const char* item_sep = indent >= 0 ? "," : ", ";
    switch (v.kind()) {
        case Value::Kind::None: out += "null"; return;
        case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
        case Value::Kind::Int: out += std::to_string(v.as_int()); return;
        case Value::Kind::Float: {
            const double d = v.as_float();
            out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : float_repr(d);
            return;
        }
        case Value::Kind::String: json_string(v.str(), out); return;
        case Value::Kind::List: {
            if (v.list().empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t i = 0; i < v.list().size(); ++i) {
                if (i) out += item_sep;
                newline(level + 1);
                dump(v.list()[i], indent, level + 1, out, pos);
            }
            newline(level);
            out += ']';
            return;
        }
        case Value::Kind::Dict: {
            if (v.dict().items.empty()) {
                out += "{}";
                return;
            }
            out += '{';
            bool first = true;
            for (const auto& [k, item] : v.dict().items) {
                if (!first) out += item_sep;
                first = false;
                newline(level + 1);
                json_string(k, out);
                out += ": ";
                dump(item, indent, level + 1, out, pos);
            }
            newline(level);
            out += '}';
            return;
        }
        case Value::Kind::Undefined: fail(pos, "tojson: " + (v.str().empty() ? std::string("value is undefined") : v.str()));
        default: fail(pos, std::string("tojson: object of type ") + v.type_name() + " is not JSON serializable");
    }
}

Value from_json(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value::none();
        case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const uint64_t u = j.get<uint64_t>();
            return u > static_cast<uint64_t>(INT64_MAX) ? Value(static_cast<double>(u)) : Value(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            List l;
            for (const auto& item : j) l.push_back(from_json(item));
            return l;
        }
        case nlohmann::ordered_json::value_t::object: {
            Dict d;
            for (const auto& [k, item] : j.items()) d.set(k, from_json(item));
            return d;
        }
        default: return Value::none();
    }
}

}  // namespace

std::string to_json(const Value& v, int indent, const Pos& pos) {
    std::string out;
    dump(v, indent, 0, out, pos);
    return out;
}

Value value_from_json(std::string_view json) {
    try {
        return from_json(nlohmann::ordered_json::parse(json));
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorCode::InvalidArgument, std::string("invalid JSON: ") + e.what());
    }
}

}  // namespace tessel::jinja
