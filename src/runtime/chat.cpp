// The public chat-template API of include/tessel/chat.hpp.
#include "tessel/chat.hpp"

#include "runtime/chat_template.hpp"

namespace tessel {

std::string chat_template_format(std::string_view chat_template) {
    for (const char* name : {"chatml", "llama3", "gemma", "phi3"})
        if (chat_template == name) return name;
    return runtime::chat_format_name(runtime::detect_chat_template(chat_template).format);
}

}  // namespace tessel
