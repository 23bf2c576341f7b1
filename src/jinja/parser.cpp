#include "jinja/parser.hpp"

#include <algorithm>
#include <initializer_list>
#include <utility>

#include "jinja/lexer.hpp"

namespace tessel::jinja {
namespace {

constexpr int kMaxDepth = 200;  // nesting of expressions and blocks: bounds the parser's stack

// Parses the tokens of one tag.
class ExprParser {
public:
    explicit ExprParser(const std::vector<Token>& tokens) : t_(tokens) {}

    const Token& cur() const { return t_[i_]; }
    bool at_end() const { return cur().type == Token::Type::End; }
    bool is_op(std::string_view op) const { return cur().type == Token::Type::Op && cur().text == op; }
    bool is_name(std::string_view n) const { return cur().type == Token::Type::Name && cur().text == n; }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        ++i_;
        return true;
    }
    bool skip_name(std::string_view n) {
        if (!is_name(n)) return false;
        ++i_;
        return true;
    }
    [[noreturn]] void unexpected(const std::string& expected) const {
        const std::string got = at_end() ? "end of tag" : "'" + cur().text + "'";
        fail(cur().pos, "expected " + expected + ", got " + got);
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op)) unexpected("'" + std::string(op) + "'");
    }
    std::string expect_name() {
        if (cur().type != Token::Type::Name) unexpected("a name");
        return t_[i_++].text;
    }
    void expect_end() {
        if (!at_end()) unexpected("end of tag");
    }

    ExprPtr expression(bool with_cond = true) {
        Guard g(this);
        ExprPtr e = or_expr();
        while (with_cond && is_name("if")) {
            const Pos pos = cur().pos;
            ++i_;
            ExprPtr cond = or_expr();
            ExprPtr otherwise = skip_name("else") ? expression() : nullptr;
            ExprPtr c = node(Expr::Kind::Cond, pos);
            c->args.push_back(std::move(e));
            c->args.push_back(std::move(cond));
            c->args.push_back(std::move(otherwise));
            e = std::move(c);
        }
        return e;
    }

private:
    // Bounds recursion: every nested expression passes through expression() or unary().
    struct Guard {
        explicit Guard(ExprParser* p) : p(p) {
            if (++p->depth_ > kMaxDepth) fail(p->cur().pos, "expression nested too deeply");
        }
        ~Guard() { --p->depth_; }
        ExprParser* p;
    };

    static ExprPtr node(Expr::Kind kind, Pos pos) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->pos = pos;
        return e;
    }
    static ExprPtr binary(std::string op, Pos pos, ExprPtr a, ExprPtr b) {
        ExprPtr e = node(Expr::Kind::Binary, pos);
        e->name = std::move(op);
        e->args.push_back(std::move(a));
        e->args.push_back(std::move(b));
        return e;
    }

    ExprPtr or_expr() {
        ExprPtr e = and_expr();
        while (is_name("or")) {
            const Pos pos = t_[i_++].pos;
            e = binary("or", pos, std::move(e), and_expr());
        }
        return e;
    }
    ExprPtr and_expr() {
        ExprPtr e = not_expr();
        while (is_name("and")) {
            const Pos pos = t_[i_++].pos;
            e = binary("and", pos, std::move(e), not_expr());
        }
        return e;
    }
    ExprPtr not_expr() {
        if (is_name("not")) {
            Guard g(this);
            ExprPtr e = node(Expr::Kind::Unary, t_[i_++].pos);
            e->name = "not";
            e->args.push_back(not_expr());
            return e;
        }
        return compare();
    }
    ExprPtr compare() {
        ExprPtr first = math1();
        ExprPtr e;
        for (;;) {
            std::string op;
            const Pos pos = cur().pos;
            if (cur().type == Token::Type::Op &&
                (is_op("==") || is_op("!=") || is_op("<") || is_op("<=") || is_op(">") || is_op(">="))) {
                op = t_[i_++].text;
            } else if (is_name("in")) {
                ++i_;
                op = "in";
            } else if (is_name("not") && i_ + 1 < t_.size() && t_[i_ + 1].type == Token::Type::Name &&
                       t_[i_ + 1].text == "in") {
                i_ += 2;
                op = "not in";
            } else {
                break;
            }
            if (!e) {
                e = node(Expr::Kind::Compare, pos);
                e->args.push_back(std::move(first));
            }
            e->ops.push_back(op);
            e->args.push_back(math1());
        }
        return e ? std::move(e) : std::move(first);
    }
    ExprPtr math1() {
        ExprPtr e = concat();
        while (is_op("+") || is_op("-")) {
            const Token& op = t_[i_++];
            e = binary(op.text, op.pos, std::move(e), concat());
        }
        return e;
    }
    ExprPtr concat() {
        ExprPtr e = math2();
        while (is_op("~")) {
            const Pos pos = t_[i_++].pos;
            e = binary("~", pos, std::move(e), math2());
        }
        return e;
    }
    ExprPtr math2() {
        ExprPtr e = power();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& op = t_[i_++];
            e = binary(op.text, op.pos, std::move(e), power());
        }
        return e;
    }
    ExprPtr power() {
        ExprPtr e = unary(true);
        while (is_op("**")) {
            const Pos pos = t_[i_++].pos;
            e = binary("**", pos, std::move(e), unary(true));
        }
        return e;
    }
    ExprPtr unary(bool with_filter) {
        Guard g(this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            e = node(Expr::Kind::Unary, cur().pos);
            e->name = t_[i_++].text;
            e->args.push_back(unary(false));
        } else {
            e = primary();
        }
        e = postfix(std::move(e));
        if (with_filter) e = filters(std::move(e));
        return e;
    }

    ExprPtr primary() {
        const Token& tok = cur();
        switch (tok.type) {
            case Token::Type::Name: {
                ++i_;
                ExprPtr e = node(Expr::Kind::Literal, tok.pos);
                if (tok.text == "true" || tok.text == "True") e->value = Value(true);
                else if (tok.text == "false" || tok.text == "False") e->value = Value(false);
                else if (tok.text == "none" || tok.text == "None") e->value = Value::none();
                else {
                    e->kind = Expr::Kind::Name;
                    e->name = tok.text;
                }
                return e;
            }
            case Token::Type::String: {
                ExprPtr e = node(Expr::Kind::Literal, tok.pos);
                std::string s;
                while (cur().type == Token::Type::String) s += t_[i_++].text;  // adjacent literals join
                e->value = Value(std::move(s));
                return e;
            }
            case Token::Type::Int:
            case Token::Type::Float: {
                ++i_;
                ExprPtr e = node(Expr::Kind::Literal, tok.pos);
                try {
                    e->value = tok.type == Token::Type::Int ? Value(static_cast<int64_t>(std::stoll(tok.text)))
                                                            : Value(std::stod(tok.text));
                } catch (const std::exception&) {
                    fail(tok.pos, "number out of range: " + tok.text);
                }
                return e;
            }
            case Token::Type::Op:
                if (tok.text == "(") {
                    ++i_;
                    ExprPtr e = expression();
                    if (is_op(",")) {  // a tuple: a list value
                        ExprPtr tuple = node(Expr::Kind::List, tok.pos);
                        tuple->name = "tuple";
                        tuple->args.push_back(std::move(e));
                        while (skip_op(",") && !is_op(")")) tuple->args.push_back(expression());
                        e = std::move(tuple);
                    }
                    expect_op(")");
                    return e;
                }
                if (tok.text == "[") {
                    ++i_;
                    ExprPtr e = node(Expr::Kind::List, tok.pos);
                    while (!is_op("]")) {
                        e->args.push_back(expression());
                        if (!skip_op(",")) break;
                    }
                    expect_op("]");
                    return e;
                }
                if (tok.text == "{") {
                    ++i_;
                    ExprPtr e = node(Expr::Kind::Dict, tok.pos);
                    while (!is_op("}")) {
                        e->args.push_back(expression());
                        expect_op(":");
                        e->args.push_back(expression());
                        if (!skip_op(",")) break;
                    }
                    expect_op("}");
                    return e;
                }
                break;
            case Token::Type::End: break;
        }
        unexpected("an expression");
    }

    ExprPtr postfix(ExprPtr e) {
        for (;;) {
            if (is_op(".")) {
                const Pos pos = t_[i_++].pos;
                if (cur().type == Token::Type::Int) {  // x.0 is x[0]
                    ExprPtr idx = node(Expr::Kind::Index, pos);
                    idx->args.push_back(std::move(e));
                    idx->args.push_back(primary());
                    e = std::move(idx);
                    continue;
                }
                ExprPtr a = node(Expr::Kind::Attr, pos);
                a->name = expect_name();
                a->args.push_back(std::move(e));
                e = std::move(a);
            } else if (is_op("[")) {
                e = subscript(std::move(e));
            } else if (is_op("(")) {
                ExprPtr c = node(Expr::Kind::Call, cur().pos);
                c->args.push_back(std::move(e));
                call_args(*c);
                e = std::move(c);
            } else {
                return e;
            }
        }
    }

    ExprPtr subscript(ExprPtr target) {
        const Pos pos = t_[i_++].pos;  // '['
        ExprPtr start = is_op(":") ? nullptr : expression();
        if (skip_op("]")) {
            ExprPtr e = node(Expr::Kind::Index, pos);
            e->args.push_back(std::move(target));
            e->args.push_back(std::move(start));
            return e;
        }
        expect_op(":");
        ExprPtr e = node(Expr::Kind::Slice, pos);
        e->args.push_back(std::move(target));
        e->args.push_back(std::move(start));
        e->args.push_back(is_op(":") || is_op("]") ? nullptr : expression());
        ExprPtr step;
        if (skip_op(":") && !is_op("]")) step = expression();
        e->args.push_back(std::move(step));
        expect_op("]");
        return e;
    }

    void call_args(Expr& call) {
        expect_op("(");
        while (!is_op(")")) {
            if (cur().type == Token::Type::Name && i_ + 1 < t_.size() && t_[i_ + 1].type == Token::Type::Op &&
                t_[i_ + 1].text == "=") {
                std::string key = t_[i_].text;
                i_ += 2;
                call.kwargs.emplace_back(std::move(key), expression());
            } else {
                if (!call.kwargs.empty()) fail(cur().pos, "positional argument after keyword argument");
                call.args.push_back(expression());
            }
            if (!skip_op(",")) break;
        }
        expect_op(")");
    }

    ExprPtr filters(ExprPtr e) {
        for (;;) {
            if (is_op("|")) {
                ++i_;
                ExprPtr f = node(Expr::Kind::Filter, cur().pos);
                f->name = expect_name();
                f->args.push_back(std::move(e));
                if (is_op("(")) call_args(*f);
                e = std::move(f);
            } else if (is_name("is")) {
                ++i_;
                ExprPtr t = node(Expr::Kind::Test, cur().pos);
                t->negated = skip_name("not");
                t->name = expect_name();
                t->args.push_back(std::move(e));
                if (is_op("(")) {
                    call_args(*t);
                } else if ((cur().type == Token::Type::String || cur().type == Token::Type::Int ||
                            cur().type == Token::Type::Float || is_op("(") || is_op("[") || is_op("{") ||
                            cur().type == Token::Type::Name) &&
                           !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if") &&
                           !is_name("is") && !is_name("in") && !is_name("not")) {
                    t->args.push_back(postfix(primary()));  // `x is divisibleby 3`
                }
                e = std::move(t);
            } else if (is_op("(")) {
                ExprPtr c = node(Expr::Kind::Call, cur().pos);
                c->args.push_back(std::move(e));
                call_args(*c);
                e = std::move(c);
            } else {
                return e;
            }
        }
    }

    const std::vector<Token>& t_;
    size_t i_ = 0;
    int depth_ = 0;
};

// Builds the statement tree from the pieces.
class StmtParser {
public:
    explicit StmtParser(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {}

    Body run() {
        Body body = block({}, nullptr);
        return body;
    }

private:
    static std::unique_ptr<Stmt> stmt(Stmt::Kind kind, Pos pos) {
        auto s = std::make_unique<Stmt>();
        s->kind = kind;
        s->pos = pos;
        return s;
    }

    // Consumes the end tag block() stopped at; nothing may follow its name.
    void close_tag() {
        const Piece& tag = pieces_[i_++];
        ExprParser tp(tag.tokens);
        tp.skip_name(tag_name(tag));
        tp.expect_end();
    }

    static bool is_end_tag(std::string_view name) {
        for (const char* end : {"elif", "else", "endif", "endfor", "endset", "endmacro"})
            if (name == end) return true;
        return false;
    }

    static std::string tag_name(const Piece& p) {
        const Token& t = p.tokens.front();
        if (t.type != Token::Type::Name) fail(t.pos, "expected a tag name");
        return t.text;
    }

    // Parses statements up to a tag named in `ends` (left unconsumed; its name stored in *end).
    // At the top level (`ends` empty) a stray end tag is an error.
    Body block(std::initializer_list<std::string_view> ends, std::string* end, const Piece* opener = nullptr) {
        if (++depth_ > kMaxDepth) fail(pieces_[std::min(i_, pieces_.size() - 1)].pos, "blocks nested too deeply");
        Body body;
        while (i_ < pieces_.size()) {
            const Piece& p = pieces_[i_];
            if (p.type == Piece::Type::Text) {
                auto s = stmt(Stmt::Kind::Text, p.pos);
                s->text = p.text;
                body.push_back(std::move(s));
                ++i_;
                continue;
            }
            if (p.type == Piece::Type::Output) {
                ExprParser ep(p.tokens);
                auto s = stmt(Stmt::Kind::Output, p.pos);
                s->expr = ep.expression();
                ep.expect_end();
                body.push_back(std::move(s));
                ++i_;
                continue;
            }
            const std::string name = tag_name(p);
            if (std::find(ends.begin(), ends.end(), name) != ends.end()) {
                *end = name;
                --depth_;
                return body;
            }
            if (opener && is_end_tag(name))  // another block's end: this one was left open
                fail(opener->pos, "unclosed '" + tag_name(*opener) + "' block: missing {% " + std::string(*(ends.end() - 1)) + " %}");
            body.push_back(statement(p, name));
        }
        if (opener) fail(opener->pos, "unclosed '" + tag_name(*opener) + "' block: missing {% " + std::string(*(ends.end() - 1)) + " %}");
        --depth_;
        return body;
    }

    std::unique_ptr<Stmt> statement(const Piece& p, const std::string& name) {
        ExprParser ep(p.tokens);
        ep.skip_name(name);
        ++i_;
        std::string end;
        if (name == "if") {
            auto s = stmt(Stmt::Kind::If, p.pos);
            ExprPtr cond = ep.expression(false);
            ep.expect_end();
            for (;;) {
                Body b = block({"elif", "else", "endif"}, &end, &p);
                s->branches.emplace_back(std::move(cond), std::move(b));
                const Piece& tag = pieces_[i_++];
                ExprParser tp(tag.tokens);
                tp.skip_name(end);
                if (end == "endif") {
                    tp.expect_end();
                    break;
                }
                if (end == "elif") {
                    cond = tp.expression(false);
                    tp.expect_end();
                    continue;
                }
                tp.expect_end();
                Body else_body = block({"endif"}, &end, &p);
                close_tag();
                s->branches.emplace_back(nullptr, std::move(else_body));
                break;
            }
            return s;
        }
        if (name == "for") {
            auto s = stmt(Stmt::Kind::For, p.pos);
            do s->targets.push_back(ep.expect_name());
            while (ep.skip_op(","));
            if (!ep.skip_name("in")) ep.unexpected("'in'");
            s->expr = ep.expression(false);
            if (ep.skip_name("if")) s->filter = ep.expression(false);
            if (ep.is_name("recursive")) fail_unsupported(ep.cur().pos, "recursive for loop");
            ep.expect_end();
            ++loops_;
            s->body = block({"else", "endfor"}, &end, &p);
            --loops_;
            close_tag();
            if (end == "else") {
                s->else_body = block({"endfor"}, &end, &p);
                close_tag();
            }
            return s;
        }
        if (name == "set") {
            const std::string target = ep.expect_name();
            std::string attr;
            if (ep.skip_op(".")) attr = ep.expect_name();
            if (ep.is_op(",")) fail_unsupported(ep.cur().pos, "tuple assignment in set");
            if (ep.at_end() && attr.empty()) {
                auto s = stmt(Stmt::Kind::SetBlock, p.pos);
                s->targets.push_back(target);
                s->body = block({"endset"}, &end, &p);
                close_tag();
                return s;
            }
            auto s = stmt(Stmt::Kind::Set, p.pos);
            s->targets.push_back(target);
            s->attr = attr;
            ep.expect_op("=");
            s->expr = ep.expression();
            ep.expect_end();
            return s;
        }
        if (name == "macro") {
            auto s = stmt(Stmt::Kind::Macro, p.pos);
            s->targets.push_back(ep.expect_name());
            ep.expect_op("(");
            while (!ep.is_op(")")) {
                std::string param = ep.expect_name();
                ExprPtr def = ep.skip_op("=") ? ep.expression() : nullptr;
                s->params.emplace_back(std::move(param), std::move(def));
                if (!ep.skip_op(",")) break;
            }
            ep.expect_op(")");
            ep.expect_end();
            const int loops = std::exchange(loops_, 0);  // a loop around the macro is not the body's
            s->body = block({"endmacro"}, &end, &p);
            loops_ = loops;
            close_tag();
            return s;
        }
        if (name == "break" || name == "continue") {
            if (loops_ == 0) fail(p.pos, "'" + name + "' outside a for loop");
            ep.expect_end();
            return stmt(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, p.pos);
        }
        if (is_end_tag(name)) fail(p.pos, "unexpected '" + name + "' tag");
        fail_unsupported(p.pos, "tag '" + name + "'");
    }

    std::vector<Piece> pieces_;
    size_t i_ = 0;
    int depth_ = 0;
    int loops_ = 0;  ///< for bodies being parsed: where break and continue may stand
};

}  // namespace

Body parse(std::string_view source) {
    std::vector<Piece> pieces = lex(source);
    for (const Piece& p : pieces)
        if (p.type == Piece::Type::Statement && p.tokens.front().type == Token::Type::End) fail(p.pos, "empty tag");
    return StmtParser(std::move(pieces)).run();
}

}  // namespace tessel::jinja
