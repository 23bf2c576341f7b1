// `tessel render-template TEMPLATE.jinja CONTEXT.json [--date YYYY-MM-DD]`: renders a Jinja
// template with tessel's interpreter (src/jinja) and a JSON object as its variables, to stdout
// byte for byte. scripts/check_chat_templates.py compares it with Python's jinja2.
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "dev/commands.hpp"
#include "jinja/template.hpp"
#include "run_options.hpp"
#include "tessel/errors.hpp"

namespace tessel::cli::dev {

void add_render_template_command(CLI::App& app) {
    struct Options {
        std::string template_file, context_file, date;
    };
    auto o = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("render-template", "Render a Jinja chat template with a JSON object as its variables");
    cmd->group(kDeveloperGroup);
    cmd->add_option("template", o->template_file, "Jinja template file")->required();
    cmd->add_option("context", o->context_file, "JSON file: an object whose keys are the template's variables")->required();
    cmd->add_option("--date", o->date, "The date strftime_now() formats, YYYY-MM-DD (default: now)");
    cmd->callback([o] {
        const jinja::Template tmpl(read_text_file(o->template_file));
        const jinja::Value context = jinja::value_from_json(read_text_file(o->context_file));
        if (!context.is_dict()) throw Error(ErrorCode::InvalidArgument, o->context_file + ": expected a JSON object");
        jinja::RenderOptions options;
        if (!o->date.empty()) {
            std::tm tm{};
            int y = 0, m = 0, d = 0;
            if (std::sscanf(o->date.c_str(), "%4d-%2d-%2d", &y, &m, &d) != 3)
                throw Error(ErrorCode::InvalidArgument, "--date: expected YYYY-MM-DD, got '" + o->date + "'");
            tm.tm_year = y - 1900;
            tm.tm_mon = m - 1;
            tm.tm_mday = d;
            tm.tm_hour = 12;
            std::mktime(&tm);  // fills the weekday and day of the year
            options.now = [tm] { return tm; };
        }
        const std::string out = tmpl.render(context.dict(), options);
        std::fwrite(out.data(), 1, out.size(), stdout);
    });
}

}  // namespace tessel::cli::dev
