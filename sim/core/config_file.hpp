#pragma once
// Loads a config file: parses it (reporting malformed JSON by file, line and column), resolves
// its "include" list depth-first (included files first, later keys override earlier ones,
// objects merge and everything else is replaced), then applies command-line overrides.
// Every value remembers which file or override set it, for error messages.

#include <memory>
#include <string>
#include <vector>

#include "sim/core/config_node.hpp"

namespace ipusim::core {

// One `--set PATH=VALUE`: PATH is a JSON pointer ("/pipeline/x") or dotted ("pipeline.x");
// VALUE is read as JSON when it parses, otherwise taken as a string.
struct Override {
  std::string path;
  std::string value;
  std::string label;  // how errors name it, e.g. "--set pipeline.x=3" or "--gac 3"
};

// Splits "PATH=VALUE" as given to --set; a missing '=' is a ConfigError.
Override parse_set_argument(const std::string& argument);

// A loaded config: the merged JSON of a file, its includes and overrides, with the origin of
// every value. Immutable; copies share the state.
class ConfigDocument {
 public:
  static ConfigDocument load(const std::string& path, const std::vector<Override>& overrides);
  // As load(), from text already in memory that is shown as `path`; includes are relative to
  // the folder of `path`.
  static ConfigDocument parse(const std::string& text, const std::string& path,
                              const std::vector<Override>& overrides);
  static ConfigDocument from_json(const nlohmann::json& value, const std::string& source);

  // This document with `overrides` applied on top, as load() applies them: sweeps read the
  // files once and derive every variant from the result.
  ConfigDocument with_overrides(const std::vector<Override>& overrides) const;

  ConfigNode root() const;
  const std::string& path() const;
  const nlohmann::json& json() const;
  // The file or override that set the value at `pointer` (or its nearest ancestor).
  std::string source_of(const std::string& pointer) const;
  // The files read, in the order read: the config (unless given as text), then its includes.
  const std::vector<std::string>& files() const;
  // How the overrides applied on top of the files are named ("--gac 64"), in order, once each.
  const std::vector<std::string>& override_labels() const;

  // Opaque: the merged JSON and its origins, shared by every ConfigNode taken from it.
  struct State;

 private:
  explicit ConfigDocument(std::shared_ptr<const State> state);
  static void apply_overrides(State& state, const std::vector<Override>& overrides);
  std::shared_ptr<const State> state_;
};

// Throws the ConfigError load() would for a file it cannot read (missing, a folder, too large):
// commands that list invalid configs and go on still stop at a file that is not there.
void check_config_readable(const std::string& path);

class OutputSet;

// Declares the files `document` was read from inputs of `outputs`, so that no output of the
// command replaces the config or a file it includes.
void add_inputs(OutputSet& outputs, const ConfigDocument& document);

// A dotted or pointer path as a JSON pointer string.
std::string to_json_pointer(const std::string& path);

}  // namespace ipusim::core
