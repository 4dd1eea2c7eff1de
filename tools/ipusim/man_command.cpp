// `ipusim man`: the manual page, in man(7) markup, generated from the program's own option
// tables like the completion script, so the page lists exactly the options ipusim accepts. The
// build writes it as ipusim.1 and `cmake --install` puts it in share/man/man1.

#include <memory>
#include <ostream>

#include "sim/core/output_file.hpp"
#include "sim/spec/config_keys.hpp"
#include "tools/ipusim/cli.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

// Text safe in roff: a backslash printed as one, a line starting with '.' or '\'' not taken
// for a request.
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (const char c : text) {
    if (line_start && (c == '.' || c == '\''))
      out += "\\&";
    out += c == '\\' ? std::string("\\e") : c == '-' ? std::string("\\-") : std::string(1, c);
    line_start = c == '\n';
  }
  return out;
}

// "\fB\-o\fR, \fB\-\-output\fR \fIPATH\fR" for an option, its value type in italics.
std::string option_names(const CLI::Option& option) {
  std::string out;
  for (const auto& name : option.get_snames())
    out += (out.empty() ? "" : ", ") + std::string("\\fB\\-") + roff(name) + "\\fR";
  for (const auto& name : option.get_lnames())
    out += (out.empty() ? "" : ", ") + std::string("\\fB\\-\\-") + roff(name) + "\\fR";
  if (out.empty())
    out = "\\fI" + roff(option.get_name()) + "\\fR";
  const std::string type = option.get_type_name();
  if (option.nonpositional() && !type.empty() && option.get_expected_max() > 0)
    out += " \\fI" + roff(type) + "\\fR";
  return out;
}

std::string command_section(const CLI::App& command) {
  std::string out =
      ".SS \"ipusim " + command.get_name() + "\"\n" + roff(command.get_description()) + "\n";
  for (const auto* option : command.get_options()) {
    if (option->get_name() == "--help")
      continue;
    out += ".TP\n" + option_names(*option) + "\n" + roff(option->get_description()) + "\n";
  }
  if (!command.get_footer().empty())
    out += ".PP\n.nf\n" + roff(command.get_footer()) + "\n.fi\n";
  return out;
}

// A README table cell as plain text: no code marks, links as their text.
std::string plain(const std::string& markdown) {
  std::string out;
  for (std::size_t i = 0; i < markdown.size(); ++i) {
    if (markdown[i] == '`')
      continue;
    if (markdown.compare(i, 3, "](#") == 0) {
      i = markdown.find(')', i);
      if (i == std::string::npos)
        break;
      continue;
    }
    if (markdown[i] != '[')
      out += markdown[i];
  }
  return out;
}

// Every declared key of the config's sections, as the README lists them.
std::string config_keys_section() {
  std::string out = ".SH \"CONFIG KEYS\"\n" +
                    roff("Set in the config file or with --set SECTION.KEY=VALUE.") + "\n";
  for (const auto& [section, keys] : sim::config_sections()) {
    out += ".SS " + section + "\n";
    for (const auto& key : *keys)
      out += ".TP\n\\fB" + roff(key.name) +
             "\\fR (default: " + roff(plain(sim::markdown_default(key))) + ")\n" +
             roff(plain(key.meaning)) + "\n";
  }
  return out;
}

std::string man_page(const CLI::App& app) {
  std::string out =
      ".TH IPUSIM 1 \"\" \"" + std::string(kVersion) +
      "\" \"User Commands\"\n"
      ".SH NAME\nipusim \\- " +
      roff("a simulator of pipelined training on Graphcore IPUs") +
      "\n.SH SYNOPSIS\n.B ipusim\n.I COMMAND\n[\\fIOPTIONS\\fR]\n"
      ".SH DESCRIPTION\n" +
      roff(
          "ipusim expands a model's config into the pipeline schedule Graphcore runs (or a GPU "
          "schedule to compare), replays it on a model of IPUs, links, host I/O and memory, "
          "and reports utilisation, throughput and stash memory; in numeric mode the real "
          "forward and backward passes run through the simulated pipeline and are checked "
          "against a one-device reference.") +
      "\n.SH COMMANDS\n";
  for (const auto* command : app.get_subcommands([](const CLI::App*) { return true; }))
    out += command_section(*command);
  out += config_keys_section();
  out += ".SH \"EXIT STATUS\"\n" + roff(exit_codes_text()) + "\n";
  out += ".SH \"HARDWARE PRESETS\"\n" + roff(presets_text()) + "\n";
  out +=
      ".SH \"SEE ALSO\"\nThe README of the ipusim sources: config keys, schedules and "
      "examples of every report.\n";
  return out;
}

}  // namespace

void add_man_command(CLI::App& app, std::ostream& out) {
  auto path = std::make_shared<std::string>();
  auto* command =
      app.add_subcommand("man", "Print the manual page (man(7) markup) of ipusim's commands");
  command->add_option("-o,--output", *path, "Write the page to this file instead")
      ->check(non_empty_path());
  command->footer("Examples:\n  ipusim man | man -l -\n  ipusim man -o ipusim.1");
  command->callback([path, &app, &out] {
    if (path->empty()) {
      out << man_page(app);
      return;
    }
    core::OutputSet outputs;
    outputs.add(*path, "-o");
    outputs.write(*path, man_page(app));
    outputs.commit();
  });
}

}  // namespace ipusim::cli
