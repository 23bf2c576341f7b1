#include "vocab/detokenize.hpp"

#include "tessel/errors.hpp"
#include "vocab/byte_level.hpp"
#include "vocab/utf8.hpp"

namespace tessel::vocab {

std::string token_to_piece(const Vocab& vocab, TokenId id, bool special) {
    if (!vocab.valid(id))
        throw Error(ErrorCode::InvalidArgument,
                    "token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(vocab.size()) + " tokens)");
    switch (vocab.type(id)) {
        case TokenType::Normal: return symbols_to_bytes(vocab.text(id));
        case TokenType::UserDefined: return vocab.text(id);
        case TokenType::Control:
        case TokenType::Unknown: return special ? vocab.text(id) : std::string();
        case TokenType::Unused:
        case TokenType::Byte:
        case TokenType::Undefined: break;
    }
    return {};
}

std::string detokenize(const Vocab& vocab, std::span<const TokenId> ids, bool special) {
    std::string out;
    for (const TokenId id : ids) out += token_to_piece(vocab, id, special);
    return out;
}

std::string Utf8Stream::push(std::string_view piece) {
    pending_ += piece;
    const size_t ready = utf8_complete_prefix(pending_);
    std::string out = pending_.substr(0, ready);
    pending_.erase(0, ready);
    return out;
}

std::string Utf8Stream::flush() {
    std::string out;
    out.swap(pending_);
    return out;
}

}  // namespace tessel::vocab
