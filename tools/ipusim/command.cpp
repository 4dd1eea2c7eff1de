#include "tools/ipusim/command.hpp"

#include "sim/core/error.hpp"

namespace ipusim::cli {
namespace {

void add_integer(std::vector<core::Override>& out, const std::string& path, std::int64_t value,
                 const std::string& flag) {
  out.push_back({path, std::to_string(value), flag + " " + std::to_string(value)});
}

}  // namespace

std::vector<core::Override> ConfigArgs::overrides() const {
  std::vector<core::Override> out;
  if (!schedule.empty()) {
    out.push_back(
        {"/pipeline/pipeline_schedule", "\"" + schedule + "\"", "--schedule " + schedule});
  }
  if (gac > 0)
    add_integer(out, "/pipeline/gradient_accumulation_count", gac, "--gac");
  if (micro_batch > 0)
    add_integer(out, "/pipeline/micro_batch_size", micro_batch, "--micro-batch");
  if (replicas > 0)
    add_integer(out, "/pipeline/replication_factor", replicas, "--replicas");
  if (!splits.empty())
    out.push_back({"/pipeline/splits", nlohmann::json(splits).dump(), "--splits"});
  for (const auto& set : sets)
    out.push_back(core::parse_set_argument(set));
  return out;
}

void add_config_options(CLI::App* command, ConfigArgs& args, bool with_path) {
  if (with_path)
    command->add_option("config", args.path, "The run's JSON config file")->required();
  command
      ->add_option("--set", args.sets,
                   "Override a config value: PATH=VALUE, PATH dotted (pipeline.repeat_count) "
                   "or a JSON pointer (/pipeline/repeat_count); repeatable")
      ->type_name("PATH=VALUE");
  command->add_option("--schedule", args.schedule, "Same as --set pipeline.pipeline_schedule=NAME");
  command->add_option("--gac", args.gac, "Same as --set pipeline.gradient_accumulation_count=N");
  command
      ->add_option("--splits", args.splits, "Same as --set pipeline.splits=[...] (comma separated)")
      ->delimiter(',');
  command->add_option("--micro-batch", args.micro_batch,
                      "Same as --set pipeline.micro_batch_size=N");
  command->add_option("--replicas", args.replicas, "Same as --set pipeline.replication_factor=N");
}

sim::RunSpec load(const ConfigArgs& args) {
  return sim::load_run_spec(args.path, args.overrides());
}

}  // namespace ipusim::cli
