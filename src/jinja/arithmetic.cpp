// Python's arithmetic on jinja values. Python's ints are unbounded; tessel's are int64, so a
// result that does not fit is an error rather than wrapped (or undefined behaviour).
#include <cmath>
#include <limits>

#include "jinja/builtins.hpp"

namespace tessel::jinja {

namespace {

[[noreturn]] void overflow(const Pos& pos, const std::string& op) {
    fail(pos, "integer overflow in '" + op + "' (tessel's integers are 64-bit)");
}

int64_t int_power(int64_t base, int64_t exp, const Pos& pos) {  // exp >= 0, by squaring
    int64_t result = 1;
    for (;;) {
        if ((exp & 1) && __builtin_mul_overflow(result, base, &result)) overflow(pos, "**");
        exp >>= 1;
        if (exp == 0) return result;
        if (__builtin_mul_overflow(base, base, &base)) overflow(pos, "**");
    }
}

}  // namespace

Value arithmetic(const std::string& op, const Value& a, const Value& b, const Pos& pos) {
    const bool floats = a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float;
    const double x = a.as_float(), y = b.as_float();
    const int64_t i = a.as_int(), j = b.as_int();
    if ((op == "/" || op == "//" || op == "%") && y == 0) fail(pos, "division by zero");
    if (op == "/") return Value(x / y);
    if (floats) {
        if (op == "+") return Value(x + y);
        if (op == "-") return Value(x - y);
        if (op == "*") return Value(x * y);
        if (op == "//") return Value(std::floor(x / y));
        if (op == "%") {
            const double r = std::fmod(x, y);
            return Value(r != 0 && ((r < 0) != (y < 0)) ? r + y : r);
        }
        if (op == "**") return Value(std::pow(x, y));
        fail(pos, "unknown operator '" + op + "'");
    }
    int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(i, j, &r)) return Value(r);
    if (op == "-" && !__builtin_sub_overflow(i, j, &r)) return Value(r);
    if (op == "*" && !__builtin_mul_overflow(i, j, &r)) return Value(r);
    if (op == "//" || op == "%") {
        if (j == -1) {  // the one quotient that overflows; the remainder is always 0
            if (op == "%") return Value(int64_t{0});
            if (i == std::numeric_limits<int64_t>::min()) overflow(pos, op);
            return Value(-i);
        }
        const int64_t q = i / j, rem = i % j;
        const bool down = rem != 0 && ((rem < 0) != (j < 0));  // Python floors toward -inf
        return op == "//" ? Value(q - (down ? 1 : 0)) : Value(down ? rem + j : rem);
    }
    if (op == "**") return j >= 0 ? Value(int_power(i, j, pos)) : Value(std::pow(x, y));
    if (op == "+" || op == "-" || op == "*") overflow(pos, op);
    fail(pos, "unknown operator '" + op + "'");
}

Value negate(const Value& v, const Pos& pos) {
    if (v.kind() == Value::Kind::Float) return Value(-v.as_float());
    if (v.as_int() == std::numeric_limits<int64_t>::min()) overflow(pos, "-");
    return Value(-v.as_int());
}

int64_t float_to_int(double d, const Pos& pos) {
    const double t = std::trunc(d);
    if (!(t >= -0x1p63 && t < 0x1p63)) fail(pos, "cannot convert float " + float_repr(d) + " to a 64-bit integer");
    return static_cast<int64_t>(t);
}

}  // namespace tessel::jinja
