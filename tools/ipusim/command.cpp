#include "tools/ipusim/command.hpp"

#include <charconv>

#include "sim/core/error.hpp"
#include "sim/core/json_text.hpp"

namespace ipusim::cli {
namespace {

// An override's VALUE holding `value` as JSON. Text that is not UTF-8 has no JSON form: it is
// passed on as it is, for the config reader to refuse like any --set.
std::string json_value(const nlohmann::json& value, const std::string& text) {
  return core::is_utf8(text) ? value.dump() : text;
}

// How an error names the option: "--gac 0", "--schedule ''".
std::string label(const std::string& flag, const std::string& value) {
  return flag + " " + (value.empty() ? "''" : value);
}

// A number given to a short form: its text goes into the config as written, so that the
// config reader checks its type and range and names the option in the error.
void add_number(std::vector<core::Override>& out, const std::string& path,
                const std::optional<std::string>& text, const std::string& flag) {
  if (text)
    out.push_back({path, *text, label(flag, *text)});
}

template <typename T>
CLI::Option* keep(CLI::App* command, const std::string& name, std::optional<T>& target,
                  const std::string& help) {
  return command->add_option_function<T>(
      name, [&target](const T& value) { target = value; }, help);
}

}  // namespace

std::vector<core::Override> ConfigArgs::overrides() const {
  std::vector<core::Override> out;
  if (schedule) {
    const std::string name = label("--schedule", *schedule);
    out.push_back({"/pipeline/pipeline_schedule", json_value(*schedule, *schedule), name});
  }
  add_number(out, "/pipeline/gradient_accumulation_count", gac, "--gac");
  add_number(out, "/pipeline/micro_batch_size", micro_batch, "--micro-batch");
  add_number(out, "/pipeline/replication_factor", replicas, "--replicas");
  if (splits) {
    std::string joined;
    for (const auto& split : *splits)
      joined += (joined.empty() ? "" : ",") + split;
    const std::string name = label("--splits", joined);
    out.push_back({"/pipeline/splits", json_value(*splits, joined), name});
  }
  for (const auto& set : sets)
    out.push_back(core::parse_set_argument(set));
  return out;
}

CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](const std::string& value) {
        return value.empty() ? std::string("expected a path, found an empty one") : std::string();
      },
      "PATH");
}

CLI::Validator integer_in(std::int64_t low, std::int64_t high) {
  const std::string range =
      "an integer from " + std::to_string(low) + " to " + std::to_string(high);
  return CLI::Validator(
      [low, high, range](const std::string& value) {
        std::int64_t number = 0;
        const auto [end, problem] =
            std::from_chars(value.data(), value.data() + value.size(), number);
        if (problem != std::errc() || end != value.data() + value.size() || number < low ||
            number > high)
          return "expected " + range + ", found '" + value + "'";
        return std::string();
      },
      "INT in [" + std::to_string(low) + " - " + std::to_string(high) + "]");
}

void add_config_options(CLI::App* command, ConfigArgs& args, bool with_path, bool with_batching) {
  if (with_path)
    command->add_option("config", args.path, "The run's JSON config file")
        ->required()
        ->check(non_empty_path());
  command
      ->add_option("--set", args.sets,
                   "Override a config value: PATH=VALUE, PATH dotted (pipeline.repeat_count) "
                   "or a JSON pointer (/pipeline/repeat_count); repeatable")
      ->type_name("PATH=VALUE");
  keep(command, "--schedule", args.schedule, "Same as --set pipeline.pipeline_schedule=NAME")
      ->type_name("NAME");
  if (with_batching)
    keep(command, "--gac", args.gac, "Same as --set pipeline.gradient_accumulation_count=N")
        ->type_name("N");
  keep(command, "--splits", args.splits, "Same as --set pipeline.splits=[...] (comma separated)")
      ->delimiter(',')
      ->type_name("LAYER,...");
  if (with_batching)
    keep(command, "--micro-batch", args.micro_batch, "Same as --set pipeline.micro_batch_size=N")
        ->type_name("N");
  keep(command, "--replicas", args.replicas, "Same as --set pipeline.replication_factor=N")
      ->type_name("N");
}

sim::RunSpec load(const ConfigArgs& args) {
  return sim::load_run_spec(args.path, args.overrides());
}

// Without the overrides: they change no file read, and their errors come later, as before.
void add_config_inputs(core::OutputSet& outputs, const std::string& path) {
  core::add_inputs(outputs, core::ConfigDocument::load(path, {}));
}

}  // namespace ipusim::cli
