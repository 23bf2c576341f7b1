#include "chat_options.hpp"

#include "run_options.hpp"
#include "tessel/errors.hpp"

namespace tessel::cli {

std::vector<CLI::Option*> add_chat_template_options(CLI::App& cmd, ChatTemplateFlags& flags) {
    CLI::Option* name = cmd.add_option("--chat-template", flags.name,
                                       "Built-in chat format instead of the model's template: chatml, llama3, gemma, phi3")
                            ->check(CLI::IsMember({"chatml", "llama3", "gemma", "phi3"}));
    CLI::Option* file = cmd.add_option("--chat-template-file", flags.file,
                                       "Jinja chat template to render instead of the model's (HF transformers' semantics)");
    name->excludes(file);
    file->excludes(name);
    return {name, file};
}

std::string chat_template_for(const Model& model, const ChatTemplateFlags& flags) {
    if (!flags.file.empty()) {
        std::string text = read_text_file(flags.file);
        if (text.empty()) throw Error(ErrorCode::InvalidArgument, "--chat-template-file: '" + flags.file + "' is empty");
        return text;
    }
    return flags.name.empty() ? model.chat_template() : flags.name;
}

}  // namespace tessel::cli
