// JSON Schema (draft 2020-12 keywords, the subset below) -> GBNF text for parse_gbnf.
//
// Each schema becomes a rule. Values are JSON without whitespace inside tokens and up to
// kSpace of [ \t\n] between them; objects list their properties in the schema's order.
#include "sample/json_schema.hpp"

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessel/errors.hpp"
#include "tessel/sampling.hpp"

namespace tessel {
namespace sample {
namespace {

using Json = nlohmann::ordered_json;

// Shared rules, defined when first used. Numbers are bounded (16 integral and fraction digits,
// 3 exponent digits) and so is whitespace, so a model cannot run on forever inside one token.
const std::map<std::string, std::string> kPrimitives = {
    {"ws", "[ \\t\\n]{0,12}"},
    {"json-char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})"},
    {"json-string", "\"\\\"\" json-char* \"\\\"\""},
    {"json-int", "\"-\"? (\"0\" | [1-9] [0-9]{0,15})"},
    {"json-uint", "\"0\" | [1-9] [0-9]{0,15}"},
    {"json-number", "json-int (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?"},
    {"json-boolean", "\"true\" | \"false\""},
    {"json-null", "\"null\""},
    {"json-value", "json-object | json-array | json-string | json-number | json-boolean | json-null"},
    {"json-object", "\"{\" ws (json-member (\",\" ws json-member)*)? \"}\""},
    {"json-member", "json-string ws \":\" ws json-value ws"},
    {"json-array", "\"[\" ws (json-value ws (\",\" ws json-value ws)*)? \"]\""},
};

// Which primitives each primitive uses (so defining one defines its dependencies).
const std::map<std::string, std::vector<std::string>> kPrimitiveUses = {
    {"json-string", {"json-char"}},
    {"json-number", {"json-int"}},
    {"json-value", {"json-object", "json-array", "json-string", "json-number", "json-boolean", "json-null"}},
    {"json-object", {"ws", "json-member"}},
    {"json-member", {"json-string", "ws", "json-value"}},
    {"json-array", {"ws", "json-value"}},
};

// Keywords that only annotate: they do not constrain the value.
const std::set<std::string> kAnnotations = {"$schema", "$id", "$comment", "title", "description", "default",
                                            "examples", "deprecated", "readOnly", "writeOnly", "$defs",
                                            "definitions"};

const std::set<std::string> kKeywords = {"type", "enum", "const", "anyOf", "oneOf", "$ref", "properties",
                                         "required", "additionalProperties", "items", "minItems", "maxItems",
                                         "minLength", "maxLength", "pattern", "minimum"};

[[noreturn]] void unsupported(const std::string& pointer, const std::string& what) {
    throw Error(ErrorCode::Unsupported, "json schema: " + what + " at '" + pointer + "' is not supported");
}

[[noreturn]] void invalid(const std::string& pointer, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, "json schema: '" + pointer + "' " + what);
}

std::string child(const std::string& pointer, const std::string& token) {
    std::string escaped;
    for (const char c : token) escaped += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return pointer + "/" + escaped;
}

class Converter {
public:
    explicit Converter(const Json& doc) : doc_(doc) {}

    std::string run() {
        const std::string root = visit(doc_, "", "root");
        std::string out = root == "root" ? "" : "root ::= " + root + "\n";
        for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
        return out;
    }

private:
    const Json& doc_;
    std::vector<std::pair<std::string, std::string>> rules_;  // in creation order
    std::set<std::string> names_;
    std::map<std::string, std::string> refs_;  // $ref target pointer -> its rule
    static constexpr int kMaxDepth = 100;       // schemas inside schemas (bounds the recursion)
    int depth_ = 0;

    std::string primitive(const std::string& name) {
        if (names_.insert(name).second) {
            rules_.emplace_back(name, kPrimitives.at(name));
            const auto uses = kPrimitiveUses.find(name);
            if (uses != kPrimitiveUses.end())
                for (const std::string& u : uses->second) primitive(u);
        }
        return name;
    }

    // A new rule named after `hint` (made unique); returns its index in rules_.
    size_t reserve(const std::string& hint) {
        std::string base;
        for (const char c : hint) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
            base += ok ? c : '-';
        }
        std::string name = base;
        for (int n = 2; !names_.insert(name).second; ++n) name = base + "-" + std::to_string(n);
        rules_.emplace_back(name, "");
        return rules_.size() - 1;
    }

    std::string rule(const std::string& hint, const std::string& body) {
        const size_t i = reserve(hint);
        rules_[i].second = body;
        return rules_[i].first;
    }

    static uint64_t count_of(const Json& s, const char* key, const std::string& pointer, uint64_t fallback) {
        if (!s.contains(key)) return fallback;
        const Json& v = s[key];
        if (!v.is_number_unsigned()) invalid(child(pointer, key), "must be a non-negative integer");
        const uint64_t n = v.get<uint64_t>();
        if (n > kMaxCount) unsupported(child(pointer, key), std::string(key) + " over " + std::to_string(kMaxCount));
        return n;
    }
    static constexpr uint64_t kMaxCount = 100000;  // the GBNF parser's repetition limit
    static constexpr uint64_t kUnbounded = ~uint64_t{0};

    // x{min,max} in GBNF, max == kUnbounded for no bound.
    static std::string repeat(const std::string& x, uint64_t min, uint64_t max) {
        if (min == 0 && max == kUnbounded) return "(" + x + ")*";
        if (max == kUnbounded) return "(" + x + "){" + std::to_string(min) + ",}";
        return "(" + x + "){" + std::to_string(min) + "," + std::to_string(max) + "}";
    }

    std::string visit(const Json& s, const std::string& pointer, const std::string& hint) {
        if (++depth_ > kMaxDepth) unsupported(pointer, "a schema nested deeper than " + std::to_string(kMaxDepth));
        const std::string out = visit_schema(s, pointer, hint);
        --depth_;
        return out;
    }

    std::string visit_schema(const Json& s, const std::string& pointer, const std::string& hint) {
        if (s.is_boolean()) {
            if (s.get<bool>()) return primitive("json-value");
            unsupported(pointer, "the schema 'false' (it matches nothing)");
        }
        if (!s.is_object()) invalid(pointer, "must be a schema (an object or a boolean)");
        for (const auto& [key, value] : s.items())
            if (!kKeywords.count(key) && !kAnnotations.count(key)) unsupported(child(pointer, key), "keyword '" + key + "'");
        if (s.contains("$ref")) return ref(s, pointer);
        if (s.contains("const")) return rule(hint, gbnf_literal(s["const"].dump()));
        if (s.contains("enum")) {
            const Json& values = s["enum"];
            if (!values.is_array() || values.empty()) invalid(child(pointer, "enum"), "must be a non-empty array");
            std::string body;
            for (const Json& v : values) body += (body.empty() ? "" : " | ") + gbnf_literal(v.dump());
            return rule(hint, body);
        }
        for (const char* key : {"anyOf", "oneOf"}) {
            if (!s.contains(key)) continue;
            const Json& options = s[key];
            if (!options.is_array() || options.empty()) invalid(child(pointer, key), "must be a non-empty array");
            std::string body;
            for (size_t i = 0; i < options.size(); ++i)
                body += (i ? " | " : "") + visit(options[i], child(pointer, key) + "/" + std::to_string(i),
                                                 hint + "-" + std::to_string(i));
            return rule(hint, body);
        }
        if (!s.contains("type")) return typed(s, inferred_type(s), pointer, hint);
        const Json& type = s["type"];
        if (type.is_string()) return typed(s, type.get<std::string>(), pointer, hint);
        if (!type.is_array() || type.empty()) invalid(child(pointer, "type"), "must be a string or a non-empty array of strings");
        std::string body;
        for (size_t i = 0; i < type.size(); ++i) {
            if (!type[i].is_string()) invalid(child(pointer, "type") + "/" + std::to_string(i), "must be a string");
            body += (i ? " | " : "") + typed(s, type[i].get<std::string>(), pointer, hint + "-" + type[i].get<std::string>());
        }
        return rule(hint, body);
    }

    static std::string inferred_type(const Json& s) {
        for (const char* k : {"properties", "required", "additionalProperties"})
            if (s.contains(k)) return "object";
        for (const char* k : {"items", "minItems", "maxItems"})
            if (s.contains(k)) return "array";
        for (const char* k : {"minLength", "maxLength", "pattern"})
            if (s.contains(k)) return "string";
        return "";
    }

    std::string typed(const Json& s, const std::string& type, const std::string& pointer, const std::string& hint) {
        if (type.empty()) return primitive("json-value");
        if (type == "object") return object(s, pointer, hint);
        if (type == "array") return array(s, pointer, hint);
        if (type == "string") return string(s, pointer, hint);
        if (type == "boolean") return primitive("json-boolean");
        if (type == "null") return primitive("json-null");
        if (type == "number" || type == "integer") {
            const bool integer = type == "integer";
            if (s.contains("minimum")) {
                const Json& m = s["minimum"];
                if (!integer || !m.is_number() || m.get<double>() != 0.0)
                    unsupported(child(pointer, "minimum"), "'minimum' other than 0 on an integer");
                return primitive("json-uint");
            }
            return primitive(integer ? "json-int" : "json-number");
        }
        invalid(child(pointer, "type"), "names an unknown type '" + type +
                                            "' (expected object, array, string, number, integer, boolean or null)");
    }

    std::string string(const Json& s, const std::string& pointer, const std::string& hint) {
        const uint64_t min = count_of(s, "minLength", pointer, 0);
        const uint64_t max = count_of(s, "maxLength", pointer, kUnbounded);
        if (min > max) invalid(pointer, "has minLength > maxLength");
        if (s.contains("pattern")) {
            if (s.contains("minLength") || s.contains("maxLength"))
                unsupported(pointer, "'pattern' together with minLength/maxLength");
            const Json& p = s["pattern"];
            if (!p.is_string()) invalid(child(pointer, "pattern"), "must be a string");
            return rule(hint, "\"\\\"\" " + pattern_to_gbnf(p.get<std::string>(), child(pointer, "pattern")) + " \"\\\"\"");
        }
        if (min == 0 && max == kUnbounded) return primitive("json-string");
        primitive("json-char");
        return rule(hint, "\"\\\"\" " + repeat("json-char", min, max) + " \"\\\"\"");
    }

    std::string array(const Json& s, const std::string& pointer, const std::string& hint) {
        const uint64_t min = count_of(s, "minItems", pointer, 0);
        const uint64_t max = count_of(s, "maxItems", pointer, kUnbounded);
        if (min > max) invalid(pointer, "has minItems > maxItems");
        primitive("ws");
        if (max == 0) return rule(hint, "\"[\" ws \"]\"");
        const std::string item =
            (s.contains("items") ? visit(s["items"], child(pointer, "items"), hint + "-item") : primitive("json-value")) +
            " ws";
        const std::string more = repeat("\",\" ws " + item, min == 0 ? 0 : min - 1, max == kUnbounded ? max : max - 1);
        const std::string list = item + " " + more;
        return rule(hint, "\"[\" ws " + (min == 0 ? "(" + list + ")?" : list) + " \"]\"");
    }

    // Properties in the schema's order, each required one present; with additional properties
    // allowed, any other string keys follow them. first-i: properties i.. with none written yet;
    // rest-i: properties i.. after one was written (so each starts with a comma).
    std::string object(const Json& s, const std::string& pointer, const std::string& hint) {
        const Json empty = Json::object();
        const Json& props = s.contains("properties") ? s["properties"] : empty;
        if (!props.is_object()) invalid(child(pointer, "properties"), "must be an object");
        std::set<std::string> required;
        if (s.contains("required")) {
            const Json& r = s["required"];
            if (!r.is_array()) invalid(child(pointer, "required"), "must be an array of strings");
            for (const Json& name : r) {
                if (!name.is_string()) invalid(child(pointer, "required"), "must be an array of strings");
                if (!props.contains(name.get<std::string>()))
                    unsupported(child(pointer, "required"), "a required property without a 'properties' entry ('" +
                                                                name.get<std::string>() + "')");
                required.insert(name.get<std::string>());
            }
        }
        primitive("ws");
        std::string extra;  // the member rule of additional properties, if allowed
        const bool listed = s.contains("properties");
        if (s.contains("additionalProperties")) {
            const Json& a = s["additionalProperties"];
            if (!(a.is_boolean() && !a.get<bool>())) {
                const std::string value = visit(a, child(pointer, "additionalProperties"), hint + "-extra");
                extra = rule(hint + "-extra-kv", primitive("json-string") + " ws \":\" ws " + value + " ws");
            }
        } else if (!listed) {
            extra = primitive("json-member");
        }
        std::vector<std::string> members;
        std::vector<bool> is_required;
        for (const auto& [name, schema] : props.items()) {
            const std::string value = visit(schema, child(child(pointer, "properties"), name), hint + "-" + name);
            members.push_back(gbnf_literal(Json(name).dump()) + " ws \":\" ws " + value + " ws");
            is_required.push_back(required.count(name) > 0);
        }
        const size_t n = members.size();
        std::string rest = extra.empty() ? "" : "(\",\" ws " + extra + ")*";
        std::string first = extra.empty() ? "" : "(" + extra + " " + rest + ")?";
        for (size_t i = n; i-- > 0;) {
            const std::string rest_rule = rest.empty() ? std::string() : std::string(" ") + rule(hint + "-rest", rest);
            const std::string here = members[i] + rest_rule;
            if (is_required[i]) first = here;
            else if (first.empty()) first = "(" + here + ")?";
            else first = "(" + here + " | " + rule(hint + "-first", first) + ")";
            rest = is_required[i] ? "\",\" ws " + members[i] : "(\",\" ws " + members[i] + ")?";
            rest += rest_rule;
        }
        return rule(hint, "\"{\" ws " + (first.empty() ? "" : first + " ") + "\"}\"");
    }

    // "#", "#/$defs/name", any JSON pointer into this document.
    std::string ref(const Json& s, const std::string& pointer) {
        const Json& r = s["$ref"];
        if (!r.is_string() || r.get<std::string>().rfind('#', 0) != 0)
            unsupported(child(pointer, "$ref"), "a $ref outside this document");
        const std::string target = r.get<std::string>().substr(1);
        const auto known = refs_.find(target);
        if (known != refs_.end()) return known->second;
        const Json* node = nullptr;
        try {
            node = &doc_.at(Json::json_pointer(target));
        } catch (const nlohmann::json::exception&) {
            invalid(child(pointer, "$ref"), "points to '" + target + "', which is not in the document");
        }
        const size_t i = reserve("ref" + target);  // reserved first: the target may refer to itself
        refs_[target] = rules_[i].first;
        const std::string body = visit(*node, target, rules_[i].first + "-value");
        rules_[i].second = body;
        return rules_[i].first;
    }
};

}  // namespace

std::string gbnf_literal(std::string_view bytes) {
    std::string out = "\"";
    for (const char c : bytes) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (u < 0x20 || u == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", u);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace sample

std::string json_schema_to_grammar(std::string_view schema_json) {
    // nlohmann's messages start with "[json.exception.<kind>.<id>] "; the rest names the position.
    const auto message = [](const nlohmann::json::exception& e) {
        const std::string what = e.what();
        const size_t skip = what.find("] ");
        return "json schema: " + (skip == std::string::npos ? what : what.substr(skip + 2));
    };
    try {
        const sample::Json doc = sample::Json::parse(schema_json);
        return sample::Converter(doc).run();
    } catch (const nlohmann::json::exception& e) {  // parse errors, numbers out of range
        throw Error(ErrorCode::InvalidArgument, message(e));
    }
}

}  // namespace tessel
