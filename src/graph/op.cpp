#include "graph/op.hpp"

namespace tessel {

const char* op_name(Op op) {
    switch (op) {
        case Op::NONE: return "NONE";
        case Op::GET_ROWS: return "GET_ROWS";
        case Op::SET_ROWS: return "SET_ROWS";
        case Op::CPY: return "CPY";
        case Op::CONT: return "CONT";
        case Op::DUP: return "DUP";
        case Op::RESHAPE: return "RESHAPE";
        case Op::VIEW: return "VIEW";
        case Op::PERMUTE: return "PERMUTE";
        case Op::TRANSPOSE: return "TRANSPOSE";
        case Op::ADD: return "ADD";
        case Op::SUB: return "SUB";
        case Op::MUL: return "MUL";
        case Op::DIV: return "DIV";
        case Op::ADD_ID: return "ADD_ID";
        case Op::SCALE: return "SCALE";
        case Op::CLAMP: return "CLAMP";
        case Op::SQR: return "SQR";
        case Op::SQRT: return "SQRT";
        case Op::LOG: return "LOG";
        case Op::UNARY: return "UNARY";
        case Op::GLU: return "GLU";
        case Op::SUM_ROWS: return "SUM_ROWS";
        case Op::MEAN: return "MEAN";
        case Op::ARGMAX: return "ARGMAX";
        case Op::ARGSORT: return "ARGSORT";
        case Op::NORM: return "NORM";
        case Op::RMS_NORM: return "RMS_NORM";
        case Op::L2_NORM: return "L2_NORM";
        case Op::MUL_MAT: return "MUL_MAT";
        case Op::MUL_MAT_ID: return "MUL_MAT_ID";
        case Op::ROPE: return "ROPE";
        case Op::SOFT_MAX: return "SOFT_MAX";
        case Op::FLASH_ATTN_EXT: return "FLASH_ATTN_EXT";
        case Op::CONCAT: return "CONCAT";
        case Op::REPEAT: return "REPEAT";
        case Op::PAD: return "PAD";
        case Op::CUMSUM: return "CUMSUM";
        case Op::FILL: return "FILL";
        case Op::DIAG: return "DIAG";
        case Op::TRI: return "TRI";
        case Op::ALLREDUCE: return "ALLREDUCE";
        case Op::COUNT_: break;
    }
    return "?";
}

const char* unary_op_name(UnaryOp op) {
    switch (op) {
        case UnaryOp::SILU: return "SILU";
        case UnaryOp::GELU: return "GELU";
        case UnaryOp::GELU_ERF: return "GELU_ERF";
        case UnaryOp::GELU_QUICK: return "GELU_QUICK";
        case UnaryOp::SIGMOID: return "SIGMOID";
        case UnaryOp::NEG: return "NEG";
        case UnaryOp::EXP: return "EXP";
        case UnaryOp::SOFTPLUS: return "SOFTPLUS";
        case UnaryOp::TANH: return "TANH";
        case UnaryOp::ABS: return "ABS";
        case UnaryOp::RELU: return "RELU";
        case UnaryOp::COUNT_: break;
    }
    return "?";
}

const char* glu_op_name(GluOp op) {
    switch (op) {
        case GluOp::SWIGLU: return "SWIGLU";
        case GluOp::GEGLU: return "GEGLU";
        case GluOp::SWIGLU_OAI: return "SWIGLU_OAI";
        case GluOp::COUNT_: break;
    }
    return "?";
}

bool op_is_view(Op op) {
    return op == Op::NONE || op == Op::RESHAPE || op == Op::VIEW || op == Op::PERMUTE || op == Op::TRANSPOSE;
}

}  // namespace tessel
