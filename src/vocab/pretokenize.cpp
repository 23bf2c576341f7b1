#include "vocab/pretokenize.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tessel/errors.hpp"

namespace tessel::vocab {
namespace {

// Word pattern of GPT-2: contractions, optionally space-led letter / digit / other runs, and
// whitespace not followed by a non-space (so the last space joins the next word).
constexpr const char* kGpt2Words = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// Contractions of the cl100k-style patterns, ASCII case-insensitive.
constexpr const char* kContractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";

const std::vector<PreTokenizerSpec>& table() {
    static const std::vector<PreTokenizerSpec> specs = {
        {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Words, R"(\p{N}+)", "[0-9][0-9][0-9]"}, false, false},
        {{"gpt-2", "mpt", "olmo"}, {kGpt2Words}, false, false},
        {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2Words, "[0-9][0-9][0-9]"}, false, false},
        {{"smollm", "starcoder", "refact", "command-r"}, {R"(\p{N})", kGpt2Words}, false, false},
        {{"llama3", "llama-v3", "llama-bpe"},
         {std::string(kContractions) +
          R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
         true, true},
        {{"qwen2", "deepseek-r1-qwen"},
         {std::string(kContractions) + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
         false, false},
        {{"qwen35"},
         {std::string(kContractions) +
          R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
         false, false},
        {{"deepseek-coder"},
         {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)",
          R"(\p{N})"},
         false, false},
        // gemma4: the text is one word per run of non-newlines and per run of newlines.
        {{"gemma4"}, {R"([^\n]+|\n+)"}, false, true, true},
    };
    return specs;
}

std::string pcre2_message(int code) {
    PCRE2_UCHAR buf[256];
    if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "PCRE2 error " + std::to_string(code);
    return reinterpret_cast<const char*>(buf);
}

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer(std::string_view pre) {
    for (const PreTokenizerSpec& spec : table())
        for (const std::string& name : spec.names)
            if (name == pre) return &spec;
    return nullptr;
}

std::string supported_pre_tokenizers() {
    std::string out;
    for (const PreTokenizerSpec& spec : table())
        for (const std::string& name : spec.names) out += (out.empty() ? "" : ", ") + name;
    return out;
}

struct PreTokenizer::Compiled {
    std::string pattern;
    pcre2_code* code = nullptr;

    explicit Compiled(std::string p) : pattern(std::move(p)) {
        int err = 0;
        PCRE2_SIZE at = 0;
        code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &err,
                             &at, nullptr);
        if (!code)
            throw Error(ErrorCode::InvalidArgument, "pre-tokenizer regex /" + pattern + "/ does not compile at offset " +
                                                        std::to_string(at) + ": " + pcre2_message(err));
        // JIT is an optimization only: where it is unavailable pcre2_match interprets.
        (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    }
    ~Compiled() { pcre2_code_free(code); }
    Compiled(const Compiled&) = delete;
    Compiled& operator=(const Compiled&) = delete;
};

PreTokenizer::PreTokenizer(const PreTokenizerSpec& spec) {
    for (const std::string& re : spec.regexes) regexes_.push_back(std::make_unique<Compiled>(re));
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

std::vector<TextSpan> PreTokenizer::split(std::string_view text) const {
    std::vector<TextSpan> pieces;
    if (!text.empty()) pieces.push_back({0, text.size()});
    std::vector<TextSpan> next;
    for (const auto& re : regexes_) {
        std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
            pcre2_match_data_create_from_pattern(re->code, nullptr), &pcre2_match_data_free);
        if (!md) throw Error(ErrorCode::InvalidArgument, "pre-tokenizer: out of memory for PCRE2 match data");
        next.clear();
        for (const TextSpan& piece : pieces) {
            // The subject is the piece alone: lookaheads must not see the next piece.
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + piece.offset);
            size_t pos = 0;     // where the next search starts
            size_t emitted = 0;  // end of the last span pushed, relative to the piece
            while (pos < piece.length) {
                const int rc = pcre2_match(re->code, subject, piece.length, pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
                if (rc == PCRE2_ERROR_NOMATCH) break;
                if (rc < 0)
                    throw Error(ErrorCode::InvalidArgument,
                                "pre-tokenizer regex /" + re->pattern + "/ failed: " + pcre2_message(rc));
                const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
                const size_t begin = ov[0], end = ov[1];
                if (end == begin) {  // an empty match splits nothing: step over one code point
                    pos = begin + 1;
                    while (pos < piece.length && (static_cast<unsigned char>(subject[pos]) & 0xC0) == 0x80) ++pos;
                    continue;
                }
                if (begin > emitted) next.push_back({piece.offset + emitted, begin - emitted});
                next.push_back({piece.offset + begin, end - begin});
                emitted = pos = end;
            }
            if (emitted < piece.length) next.push_back({piece.offset + emitted, piece.length - emitted});
        }
        pieces.swap(next);
    }
    return pieces;
}

}  // namespace tessel::vocab
