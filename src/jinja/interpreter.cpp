// Evaluates a parsed template (template.hpp): scopes, statements, expressions, globals.
#include <cmath>
#include <cstring>

#include "jinja/builtins.hpp"
#include "jinja/parser.hpp"
#include "jinja/template.hpp"

namespace tessel::jinja {
namespace {

enum class Flow { Normal, Break, Continue };

class Interpreter {
public:
    Interpreter(const Dict& context, const RenderOptions& options) : options_(options) {
        frames_.push_back(std::make_shared<Dict>(context));
    }

    std::string render(const Body& body) {
        exec(body);
        return std::move(out_);
    }

private:
    // --- scopes: the template's frame, then one per loop iteration or macro call -----------------
    Value lookup(const std::string& name) const {
        for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
            if (const Value* v = (*it)->find(name)) return *v;
        if (name == "range" || name == "namespace" || name == "raise_exception" || name == "strftime_now" ||
            name == "dict")
            return global(name);
        return Value::undefined("'" + name + "' is undefined");
    }

    Value global(const std::string& name) const {
        if (name == "raise_exception")
            return Callable{name, [](Args& a, const Pos&) -> Value {
                                throw RaisedError(argument(a, 0, "message", Value("")).to_output());
                            }};
        if (name == "strftime_now")
            return Callable{name, [this](Args& a, const Pos& pos) -> Value {
                                const Value fmt = argument(a, 0, "format");
                                if (!fmt.is_string()) fail(pos, "strftime_now() needs a format string");
                                std::tm tm{};
                                if (options_.now) {
                                    tm = options_.now();
                                } else {
                                    const std::time_t t = std::time(nullptr);
                                    localtime_r(&t, &tm);
                                }
                                char buf[512];
                                const size_t n = std::strftime(buf, sizeof buf, fmt.str().c_str(), &tm);
                                return std::string(buf, n);
                            }};
        if (name == "namespace" || name == "dict")
            return Callable{name, [name](Args& a, const Pos& pos) -> Value {
                                Dict d;
                                for (const Value& p : a.positional) {
                                    if (!p.is_dict()) fail(pos, name + "() takes keyword arguments or a dict");
                                    for (const auto& [k, v] : p.dict().items) d.set(k, v);
                                }
                                for (auto& [k, v] : a.keyword) d.set(k, v);
                                return name == "dict" ? Value(std::move(d)) : Value::make_namespace(std::move(d));
                            }};
        return Callable{name, [](Args& a, const Pos& pos) -> Value {  // range
                            std::vector<int64_t> n;
                            for (const Value& v : a.positional) {
                                if (!v.is_int()) fail(pos, "range() needs integers");
                                n.push_back(v.as_int());
                            }
                            if (n.empty() || n.size() > 3) fail(pos, "range() takes 1 to 3 arguments");
                            const int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1];
                            const int64_t step = n.size() == 3 ? n[2] : 1;
                            if (step == 0) fail(pos, "range() step must not be zero");
                            List out;
                            for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
                                if (out.size() >= 1'000'000) fail(pos, "range() longer than 1000000 items");
                                out.push_back(Value(i));
                                if (__builtin_add_overflow(i, step, &i)) break;  // past int64: past stop too
                            }
                            return out;
                        }};
    }

    void assign(const std::string& name, Value v) { frames_.back()->set(name, std::move(v)); }

    void step(const Pos& pos) {
        if (++steps_ > options_.max_steps)
            fail(pos, "rendering took more than " + std::to_string(options_.max_steps) + " steps");
    }

    void emit(const std::string& text, const Pos& pos) {
        if (out_.size() + text.size() > options_.max_output)
            fail(pos, "output longer than " + std::to_string(options_.max_output) + " bytes");
        out_ += text;
    }

    // --- statements ---------------------------------------------------------------------------
    Flow exec(const Body& body) {
        for (const auto& s : body) {
            const Flow f = exec(*s);
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    // Counts statements and expressions evaluating inside each other: the interpreter's stack.
    struct Nesting {
        Nesting(Interpreter* in, const Pos& pos) : in(in) {
            if (++in->depth_ > in->options_.max_depth)
                fail(pos, "template nested deeper than " + std::to_string(in->options_.max_depth) + " while rendering");
        }
        ~Nesting() { --in->depth_; }
        Interpreter* in;
    };

    Flow exec(const Stmt& s) {
        const Nesting nesting(this, s.pos);
        step(s.pos);
        switch (s.kind) {
            case Stmt::Kind::Text: emit(s.text, s.pos); break;
            case Stmt::Kind::Output: emit(eval(*s.expr).to_output(), s.pos); break;
            case Stmt::Kind::If:
                for (const auto& [cond, body] : s.branches)
                    if (!cond || eval(*cond).truthy()) return exec(body);
                break;
            case Stmt::Kind::For: exec_for(s); break;
            case Stmt::Kind::Set:
                if (s.attr.empty()) {
                    assign(s.targets[0], eval(*s.expr));
                } else {
                    const Value ns = lookup(s.targets[0]);
                    if (ns.kind() != Value::Kind::Namespace)
                        fail(s.pos, "cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
                    ns.dict().set(s.attr, eval(*s.expr));
                }
                break;
            case Stmt::Kind::SetBlock: {
                std::string saved = std::move(out_);
                out_.clear();
                exec(s.body);
                std::string text = std::move(out_);
                out_ = std::move(saved);
                assign(s.targets[0], Value(std::move(text)));
                break;
            }
            case Stmt::Kind::Macro: assign(s.targets[0], macro(s)); break;
            case Stmt::Kind::Break: return Flow::Break;
            case Stmt::Kind::Continue: return Flow::Continue;
        }
        return Flow::Normal;
    }

    void exec_for(const Stmt& s) {
        std::vector<Value> items = iterate(eval(*s.expr), s.expr->pos);
        if (s.filter) {  // `for x in xs if cond`: the loop sees only the items that pass
            std::vector<Value> kept;
            for (Value& item : items) {
                frames_.push_back(std::make_shared<Dict>());
                bind_targets(s, item);
                const bool keep = eval(*s.filter).truthy();
                frames_.pop_back();
                if (keep) kept.push_back(std::move(item));
            }
            items = std::move(kept);
        }
        if (items.empty()) {
            exec(s.else_body);
            return;
        }
        const int64_t n = static_cast<int64_t>(items.size());
        for (int64_t i = 0; i < n; ++i) {
            step(s.pos);
            Dict loop;
            loop.set("index", Value(i + 1));
            loop.set("index0", Value(i));
            loop.set("revindex", Value(n - i));
            loop.set("revindex0", Value(n - i - 1));
            loop.set("first", Value(i == 0));
            loop.set("last", Value(i == n - 1));
            loop.set("length", Value(n));
            loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
            loop.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
            frames_.push_back(std::make_shared<Dict>());
            assign("loop", Value(std::move(loop)));
            bind_targets(s, items[static_cast<size_t>(i)]);
            const Flow f = exec(s.body);
            frames_.pop_back();
            if (f == Flow::Break) break;
        }
    }

    void bind_targets(const Stmt& s, const Value& item) {
        if (s.targets.size() == 1) {
            assign(s.targets[0], item);
            return;
        }
        const std::vector<Value> parts = iterate(item, s.pos);
        if (parts.size() != s.targets.size())
            fail(s.pos, "cannot unpack " + std::to_string(parts.size()) + " values into " +
                            std::to_string(s.targets.size()) + " loop variables");
        for (size_t k = 0; k < parts.size(); ++k) assign(s.targets[k], parts[k]);
    }

    Value macro(const Stmt& s) {
        return Callable{s.targets[0], [this, &s](Args& a, const Pos& pos) -> Value {
                            if (a.positional.size() > s.params.size())
                                fail(pos, "macro '" + s.targets[0] + "' takes " + std::to_string(s.params.size()) +
                                              " arguments");
                            if (++call_depth_ > options_.max_call_depth)
                                fail(pos, "macro calls nested deeper than " + std::to_string(options_.max_call_depth));
                            auto frame = std::make_shared<Dict>();
                            std::vector<std::shared_ptr<Dict>> saved{frames_.front(), frame};
                            std::swap(saved, frames_);  // a macro sees the template's variables and its own
                            for (size_t k = 0; k < s.params.size(); ++k) {
                                const auto& [name, def] = s.params[k];
                                Value v = argument(a, k, name.c_str());
                                if (v.is_undefined() && def) v = eval(*def);
                                if (v.is_undefined()) v = Value::undefined("'" + name + "' is undefined");
                                frame->set(name, std::move(v));
                            }
                            std::string outer = std::move(out_);
                            out_.clear();
                            exec(s.body);
                            std::string text = std::move(out_);
                            out_ = std::move(outer);
                            std::swap(saved, frames_);
                            --call_depth_;
                            return text;
                        }};
    }

    // --- expressions --------------------------------------------------------------------------
    Args call_args(const Expr& e, size_t first) {
        Args a;
        for (size_t k = first; k < e.args.size(); ++k) a.positional.push_back(eval(*e.args[k]));
        for (const auto& [name, arg] : e.kwargs) a.keyword.emplace_back(name, eval(*arg));
        return a;
    }

    Value eval(const Expr& e) {
        const Nesting nesting(this, e.pos);
        switch (e.kind) {
            case Expr::Kind::Literal: return e.value;
            case Expr::Kind::Name: return lookup(e.name);
            case Expr::Kind::List: {
                List l;
                for (const auto& a : e.args) l.push_back(eval(*a));
                return e.name == "tuple" ? Value::make_tuple(std::move(l)) : Value(std::move(l));
            }
            case Expr::Kind::Dict: {
                Dict d;
                for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
                    const Value key = eval(*e.args[k]);
                    if (!key.is_string()) fail_unsupported(e.args[k]->pos, "dict key of type " + std::string(key.type_name()));
                    d.set(key.str(), eval(*e.args[k + 1]));
                }
                return d;
            }
            case Expr::Kind::Attr: return get_attr(eval(*e.args[0]), e.name, e.pos);
            case Expr::Kind::Index: return get_item(eval(*e.args[0]), eval(*e.args[1]), e.pos);
            case Expr::Kind::Slice: return slice(e);
            case Expr::Kind::Call: return call(e);
            case Expr::Kind::Filter: {
                const Value input = eval(*e.args[0]);
                Args a = call_args(e, 1);
                return apply_filter(e.name, input, a, e.pos);
            }
            case Expr::Kind::Test: {
                const Value v = eval(*e.args[0]);
                Args a = call_args(e, 1);
                return Value(apply_test(e.name, v, a, e.pos) != e.negated);
            }
            case Expr::Kind::Unary: {
                const Value v = eval(*e.args[0]);
                if (e.name == "not") return Value(!v.truthy());
                require_defined(v, e.pos);
                if (!v.is_number()) fail(e.pos, "bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
                if (e.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
                return negate(v, e.pos);
            }
            case Expr::Kind::Binary: return binary(e);
            case Expr::Kind::Compare: {
                Value left = eval(*e.args[0]);
                for (size_t k = 0; k < e.ops.size(); ++k) {
                    Value right = eval(*e.args[k + 1]);
                    if (!compare(e.ops[k], left, right, e.pos)) return Value(false);
                    left = std::move(right);
                }
                return Value(true);
            }
            case Expr::Kind::Cond:
                if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
                return e.args[2] ? eval(*e.args[2]) : Value::undefined("the condition was false and there is no else");
        }
        return Value();
    }

    Value call(const Expr& e) {
        const Expr& callee = *e.args[0];
        const Value f = eval(callee);
        if (!f.is_callable()) {
            if (callee.kind == Expr::Kind::Name && f.is_undefined()) fail_unsupported(callee.pos, "function '" + callee.name + "'");
            if (callee.kind == Expr::Kind::Attr && f.is_undefined()) {
                const Value object = eval(*callee.args[0]);
                fail_unsupported(callee.pos, "method '" + callee.name + "' of " + object.type_name());
            }
            require_defined(f, e.pos);
            fail(e.pos, std::string("'") + f.type_name() + "' object is not callable");
        }
        Args a = call_args(e, 1);
        return f.callable().call(a, e.pos);
    }

    Value slice(const Expr& e) {
        const Value target = eval(*e.args[0]);
        require_defined(target, e.pos);
        auto bound = [&](size_t k) -> std::optional<int64_t> {
            if (!e.args[k]) return std::nullopt;
            const Value v = eval(*e.args[k]);
            if (v.is_none()) return std::nullopt;
            if (!v.is_int() && !v.is_bool()) fail(e.args[k]->pos, "slice indices must be integers or none");
            return v.as_int();
        };
        const std::optional<int64_t> start = bound(1), stop = bound(2), stride = bound(3);
        const int64_t st = stride.value_or(1);
        if (st == 0) fail(e.pos, "slice step cannot be zero");
        auto pick = [&](int64_t n, auto&& take) {  // Python's slice.indices
            auto clamp = [&](std::optional<int64_t> v, int64_t def) {
                if (!v) return def;
                int64_t x = *v < 0 ? *v + n : *v;
                if (st > 0) return std::clamp<int64_t>(x, 0, n);
                return std::clamp<int64_t>(x, -1, n - 1);
            };
            const int64_t b = clamp(start, st > 0 ? 0 : n - 1), end = clamp(stop, st > 0 ? n : -1);
            for (int64_t i = b; st > 0 ? i < end : i > end; i += st) take(static_cast<size_t>(i));
        };
        if (target.is_string()) {
            const std::u32string s = utf8_decode(target.str());
            std::u32string out;
            pick(static_cast<int64_t>(s.size()), [&](size_t i) { out += s[i]; });
            return utf8_encode(out);
        }
        if (target.is_list()) {
            List out;
            pick(static_cast<int64_t>(target.list().size()), [&](size_t i) { out.push_back(target.list()[i]); });
            return out;
        }
        fail(e.pos, std::string("'") + target.type_name() + "' object is not subscriptable");
    }

    Value binary(const Expr& e) {
        const std::string& op = e.name;
        if (op == "and") {
            Value a = eval(*e.args[0]);
            return a.truthy() ? eval(*e.args[1]) : a;
        }
        if (op == "or") {
            Value a = eval(*e.args[0]);
            return a.truthy() ? a : eval(*e.args[1]);
        }
        const Value a = eval(*e.args[0]), b = eval(*e.args[1]);
        if (op == "~") return a.to_output() + b.to_output();
        require_defined(a, e.pos);
        require_defined(b, e.pos);
        auto bad = [&]() -> Value {
            fail(e.pos, "unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
        };
        if (op == "+") {
            if (a.is_string() && b.is_string()) return a.str() + b.str();
            if (a.is_list() && b.is_list()) {
                List l = a.list();
                l.insert(l.end(), b.list().begin(), b.list().end());
                return l;
            }
        }
        if (op == "*" && (a.is_string() || a.is_list() || b.is_string() || b.is_list())) {
            const Value& seq = a.is_number() ? b : a;
            const Value& count = a.is_number() ? a : b;
            if (!count.is_number() || count.kind() == Value::Kind::Float || seq.is_number()) return bad();
            const int64_t n = std::max<int64_t>(0, count.as_int());
            if (seq.is_string()) {
                if (static_cast<double>(seq.str().size()) * static_cast<double>(n) > static_cast<double>(options_.max_output))
                    fail(e.pos, "string repetition longer than the output limit");
                std::string out;
                for (int64_t i = 0; i < n; ++i) out += seq.str();
                return out;
            }
            List out;
            for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
            return out;
        }
        if (!a.is_number() || !b.is_number()) return bad();
        return arithmetic(op, a, b, e.pos);
    }

    static bool compare(const std::string& op, const Value& a, const Value& b, const Pos& pos) {
        if (op == "==") return equals(a, b);
        if (op == "!=") return !equals(a, b);
        if (op == "in") return contains(b, a, pos);
        if (op == "not in") return !contains(b, a, pos);
        if (op == "<") return less(a, b, pos);
        if (op == ">") return less(b, a, pos);
        if (op == "<=") return !less(b, a, pos);
        return !less(a, b, pos);  // >=
    }

    const RenderOptions& options_;
    std::vector<std::shared_ptr<Dict>> frames_;
    std::string out_;
    uint64_t steps_ = 0;
    int call_depth_ = 0;
    int depth_ = 0;
};

}  // namespace

Template::Template(std::string_view source) : body_(std::make_shared<const Body>(parse(source))) {}

std::string Template::render(const Dict& context, const RenderOptions& options) const {
    return Interpreter(context, options).render(*body_);
}

}  // namespace tessel::jinja
