#include "vocab/vocab.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "tessel/errors.hpp"
#include "vocab/byte_token.hpp"

namespace tessel::vocab {
namespace {

using gguf::Value;
using gguf::ValueType;

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kTokenType = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";
constexpr const char* kPre = "tokenizer.ggml.pre";
constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddEos = "tokenizer.ggml.add_eos_token";
constexpr const char* kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
constexpr const char* kScores = "tokenizer.ggml.scores";

/// An integer value as int64 with UINT64 values beyond its range clamped to INT64_MAX (as_i64 would
/// throw an error naming no key): for callers that range-check the result.
int64_t clamped_i64(const Value& v) {
    if (v.type() == ValueType::UINT64) return static_cast<int64_t>(std::min<uint64_t>(v.as_u64(), std::numeric_limits<int64_t>::max()));
    return v.as_i64();
}

/// `text` in single quotes for an error message, bytes outside printable ASCII as \xNN.
std::string quoted(std::string_view text) {
    constexpr char kHex[] = "0123456789abcdef";
    std::string out = "'";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7F && c != '\\')
            out += c;
        else
            out += std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
    }
    return out + "'";
}

/// Whether general.name names a Phi-3 model (llama.cpp's test: "phi-3" or "phi3", any case).
bool is_phi3(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; });
    return lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos;
}

/// Reads the tokenizer keys of one file; every error names the file and the key.
class KeyReader {
public:
    explicit KeyReader(const gguf::File& f) : file_(f) {}

    [[noreturn]] void fail(ErrorCode code, const std::string& key, const std::string& what) const {
        throw Error(code, file_.name() + ": " + key + ": " + what);
    }

    const Value& require(const char* key) const {
        const Value* v = file_.find(key);
        if (!v) fail(ErrorCode::InvalidArgument, key, "missing (not a tokenizer GGUF file?)");
        return *v;
    }

    const std::string* string(const char* key) const {
        const Value* v = file_.find(key);
        if (!v) return nullptr;
        if (v->type() != ValueType::STRING) wrong_type(key, *v, "STRING");
        return &v->as_string();
    }

    /// An array whose elements are strings.
    const Value& strings(const char* key) const {
        const Value& v = require(key);
        if (v.type() != ValueType::ARRAY || v.array_type() != ValueType::STRING) wrong_type(key, v, "array of STRING");
        return v;
    }

    /// An optional integer array (nullptr when absent).
    const Value* integers(const char* key) const {
        const Value* v = file_.find(key);
        if (!v) return nullptr;
        if (v->type() != ValueType::ARRAY || !is_integer(v->array_type())) wrong_type(key, *v, "array of integers");
        return v;
    }

    /// An optional FLOAT32 array (nullptr when absent).
    const Value* floats(const char* key) const {
        const Value* v = file_.find(key);
        if (!v) return nullptr;
        if (v->type() != ValueType::ARRAY || v->array_type() != ValueType::FLOAT32) wrong_type(key, *v, "array of FLOAT32");
        return v;
    }

    /// An optional token id, checked against the vocabulary size; `fallback` when absent.
    TokenId token_id(const std::string& key, size_t n_tokens, TokenId fallback) const {
        const Value* v = file_.find(key);
        if (!v) return fallback;
        if (!is_integer(v->type())) wrong_type(key, *v, "an integer");
        const int64_t id = clamped_i64(*v);
        if (id < 0 || static_cast<uint64_t>(id) >= n_tokens)
            fail(ErrorCode::InvalidArgument, key,
                 "token id " + v->to_string() + " is outside the vocabulary (" + std::to_string(n_tokens) + " tokens)");
        return static_cast<TokenId>(id);
    }

    /// An optional bool, `fallback` when absent.
    bool flag(const char* key, bool fallback) const {
        const Value* v = file_.find(key);
        if (!v) return fallback;
        if (v->type() != ValueType::BOOL) wrong_type(key, *v, "BOOL");
        return v->as_bool();
    }

private:
    static bool is_integer(ValueType t) {
        return t != ValueType::FLOAT32 && t != ValueType::FLOAT64 && t != ValueType::BOOL &&
               t != ValueType::STRING && t != ValueType::ARRAY;
    }

    [[noreturn]] void wrong_type(const std::string& key, const Value& v, const char* wanted) const {
        std::string got = gguf::value_type_name(v.type());
        if (v.type() == ValueType::ARRAY) got = std::string("array of ") + gguf::value_type_name(v.array_type());
        fail(ErrorCode::GgufWrongValueType, key, std::string("expected ") + wanted + ", got " + got);
    }

    const gguf::File& file_;
};

}  // namespace

Vocab Vocab::load(const gguf::File& file) {
    const KeyReader keys(file);
    Vocab v;

    const std::string* model_ptr = keys.string(kModel);
    if (!model_ptr) keys.fail(ErrorCode::InvalidArgument, kModel, "missing (not a tokenizer GGUF file?)");
    const std::string& model_name = *model_ptr;
    if (model_name == "gpt2" || model_name == "gemma4")
        v.model_ = VocabModel::Bpe;
    else if (model_name == "llama")
        v.model_ = VocabModel::Spm;
    else
        keys.fail(ErrorCode::Unsupported, kModel,
                  "unknown tokenizer model '" + model_name + "' (supported: gpt2, llama, gemma4)");
    const bool spm = v.model_ == VocabModel::Spm;

    const std::string* pre = keys.string(kPre);
    v.pre_ = model_name == "gemma4" ? "gemma4" : pre ? *pre : "default";  // gemma4 implies its pre-tokenizer
    v.pre_spec_ = find_pre_tokenizer(spm ? "default" : v.pre_);  // SentencePiece has no pre-tokenizer
    if (!v.pre_spec_)
        keys.fail(ErrorCode::Unsupported, kPre,
                  "unknown pre-tokenizer '" + v.pre_ + "' (supported: " + supported_pre_tokenizers() + ")");

    const Value& tokens = keys.strings(kTokens);
    if (tokens.array_size() == 0) keys.fail(ErrorCode::InvalidArgument, kTokens, "the vocabulary is empty");
    if (tokens.array_size() > static_cast<size_t>(std::numeric_limits<TokenId>::max()))
        keys.fail(ErrorCode::InvalidArgument, kTokens, std::to_string(tokens.array_size()) + " tokens is too many");
    const size_t n = tokens.array_size();
    v.texts_.reserve(n);
    v.ids_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        v.texts_.emplace_back(tokens.string_at(i));
        v.ids_.insert_or_assign(v.texts_.back(), static_cast<TokenId>(i));  // a repeated text: the last id wins
    }

    v.types_.assign(n, TokenType::Normal);
    if (const Value* types = keys.integers(kTokenType)) {
        if (types->array_size() != n)
            keys.fail(ErrorCode::InvalidArgument, kTokenType,
                      std::to_string(types->array_size()) + " entries for " + std::to_string(n) + " tokens");
        for (size_t i = 0; i < n; ++i) {
            const int64_t t = types->at(i).as_i64();
            if (t < 0 || t > static_cast<int64_t>(TokenType::Byte))
                keys.fail(ErrorCode::InvalidArgument, kTokenType,
                          "token " + std::to_string(i) + " has unknown type " + std::to_string(t));
            v.types_[i] = static_cast<TokenType>(t);
            if (v.types_[i] == TokenType::Byte && parse_byte_token(v.texts_[i]) < 0)
                keys.fail(ErrorCode::InvalidArgument, kTokenType,
                          "token " + std::to_string(i) + " has type BYTE but its text " + quoted(v.texts_[i]) +
                              " is not <0xXX> (two hex digits)");
        }
    }

    if (const Value* scores = keys.floats(kScores)) {
        if (scores->array_size() != n)
            keys.fail(ErrorCode::InvalidArgument, kScores,
                      std::to_string(scores->array_size()) + " entries for " + std::to_string(n) + " tokens");
        v.scores_.resize(n);
        std::memcpy(v.scores_.data(), scores->packed_bytes().data(), n * sizeof(float));  // GGUF is little-endian, as x86
        for (size_t i = 0; i < n; ++i)
            if (std::isnan(v.scores_[i]))
                keys.fail(ErrorCode::InvalidArgument, kScores, "token " + std::to_string(i) + " has score NaN");
    }

    if (!spm) {
        const Value& merges = keys.strings(kMerges);
        v.merges_.reserve(merges.array_size());
        for (size_t i = 0; i < merges.array_size(); ++i) {
            const std::string_view m = merges.string_at(i);
            const size_t space = m.empty() ? std::string::npos : m.find(' ', 1);
            if (space == std::string::npos)
                keys.fail(ErrorCode::InvalidArgument, kMerges,
                          "entry " + std::to_string(i) + " is not two texts separated by a space");
            v.merges_.emplace_back(m.substr(0, space), m.substr(space + 1));
        }
    }

    for (int b = 0; b < 256; ++b) {
        TokenId id = v.find(byte_token_text(static_cast<uint8_t>(b)));
        if (id == kNoToken) id = v.find(std::string(1, static_cast<char>(b)));
        v.byte_tokens_[static_cast<size_t>(b)] = id;
    }

    if (const std::string* name = keys.string("general.name"); name && is_phi3(*name)) {
        v.rstrip_.assign(n, false);
        for (size_t i = 0; i < n; ++i)
            v.rstrip_[i] = v.types_[i] == TokenType::Control || v.types_[i] == TokenType::UserDefined ||
                           v.types_[i] == TokenType::Unknown || v.texts_[i] == "</s>";
        for (const char* keep : {"<unk>", "<s>", "<|endoftext|>"})
            if (const TokenId id = v.find(keep); id != kNoToken) v.rstrip_[static_cast<size_t>(id)] = false;
    }

    // llama.cpp's SentencePiece defaults for absent ids: <unk> 0, <s> 1, </s> 2.
    const auto default_id = [&](TokenId id) { return spm && static_cast<size_t>(id) < n ? id : kNoToken; };
    v.bos_ = keys.token_id("tokenizer.ggml.bos_token_id", n, default_id(1));
    v.eos_ = keys.token_id("tokenizer.ggml.eos_token_id", n, default_id(2));
    v.eot_ = keys.token_id("tokenizer.ggml.eot_token_id", n, kNoToken);
    v.pad_ = keys.token_id("tokenizer.ggml.padding_token_id", n, kNoToken);
    v.unk_ = keys.token_id("tokenizer.ggml.unknown_token_id", n, default_id(0));
    v.add_bos_ = keys.flag(kAddBos, (spm || v.pre_spec_->add_bos) && v.bos_ != kNoToken);
    if (v.pre_spec_->spm_style && v.bos_ != kNoToken) v.add_bos_ = true;  // llama.cpp overrides add_bos_token = false for gemma4
    v.add_eos_ = keys.flag(kAddEos, false);
    v.add_space_prefix_ = keys.flag(kAddSpacePrefix, spm);
    if (v.add_bos_ && v.bos_ == kNoToken)
        keys.fail(ErrorCode::InvalidArgument, kAddBos, "BOS is to be added but tokenizer.ggml.bos_token_id is missing");
    if (v.add_eos_ && v.eos_ == kNoToken)
        keys.fail(ErrorCode::InvalidArgument, kAddEos, "EOS is to be added but tokenizer.ggml.eos_token_id is missing");
    return v;
}

int Vocab::byte_value(TokenId id) const {
    return type(id) == TokenType::Byte ? parse_byte_token(text(id)) : -1;
}

TokenId Vocab::find(std::string_view text) const {
    const auto it = ids_.find(text);
    return it == ids_.end() ? kNoToken : it->second;
}

}  // namespace tessel::vocab
