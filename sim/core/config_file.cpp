#include "sim/core/config_file.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>

#include "sim/core/error.hpp"
#include "sim/core/json_text.hpp"
#include "sim/core/output_file.hpp"

namespace ipusim::core {

struct ConfigDocument::State {
  std::string path;
  nlohmann::json value;
  Origins origins;
  std::vector<std::string> override_labels;  // in the order applied
  std::vector<std::string> files;            // read, in order
};

namespace {

namespace fs = std::filesystem;

// Far more than any config needs; bounds the work of repeated includes.
constexpr int kMaxConfigFiles = 256;

std::string read_text(const std::string& shown_path, const std::string& includer,
                      const std::string& include_pointer) {
  std::string text;
  const auto problem = read_regular_file(shown_path, &text);
  if (!problem)
    return text;
  if (includer.empty())
    throw ConfigError(shown_path, "", "cannot read config file '" + shown_path + "': " + *problem);
  throw ConfigError(includer, include_pointer,
                    "cannot read included file '" + shown_path + "': " + *problem);
}

void record_all(const nlohmann::json& value, const std::string& pointer, const std::string& source,
                Origins& origins) {
  origins.record(pointer, source);
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      record_all(child, pointer + "/" + escape_pointer_token(key), source, origins);
    }
  }
}

// Objects merge key by key; any other value replaces what was there. The values are moved out
// of `source`, not copied: a large model's layers are held once.
void merge_into(nlohmann::json& target, nlohmann::json& source, const std::string& pointer,
                const std::string& file, Origins& origins) {
  for (auto& [key, value] : source.items()) {
    const std::string child = pointer + "/" + escape_pointer_token(key);
    if (value.is_object() && target.contains(key) && target[key].is_object()) {
      merge_into(target[key], value, child, file, origins);
    } else {
      record_all(value, child, file, origins);
      target[key] = std::move(value);
    }
  }
}

class Loader {
 public:
  explicit Loader(ConfigDocument::State& state) : state_(state) {}

  void load(const std::string& shown_path, const std::string& includer,
            const std::string& include_pointer) {
    count_file(shown_path, includer, include_pointer);
    std::string text = read_text(shown_path, includer, include_pointer);
    state_.files.push_back(shown_path);
    load_text(std::move(text), shown_path, includer, include_pointer);
  }

  // Takes the text, freed once parsed: the parsed value holds the config from then on.
  void load_text(std::string text, const std::string& shown_path, const std::string& includer,
                 const std::string& include_pointer) {
    const fs::path path = fs::path(shown_path);
    std::error_code ignored;
    const fs::path canonical = fs::weakly_canonical(path, ignored);
    for (const auto& open : stack_) {
      if (open == canonical) {
        throw ConfigError(includer, include_pointer,
                          "'" + shown_path + "' includes itself (an include cycle)");
      }
    }
    bytes_read_ += std::int64_t(text.size());
    if (bytes_read_ > kMaxConfigBytes) {
      throw ConfigError(includer.empty() ? shown_path : includer, include_pointer,
                        "the config and its includes hold more than 64 MiB (" +
                            std::to_string(kMaxConfigBytes) + " bytes), the most ipusim reads");
    }
    nlohmann::json value = parse_json_text(text, shown_path);
    std::string().swap(text);
    if (!value.is_object()) {
      throw ConfigError(shown_path, "/", "expected the config to be a JSON object");
    }
    // The top-level file owns the document root, not the first file it includes.
    if (includer.empty())
      state_.origins.record("", shown_path);
    stack_.push_back(canonical);
    load_includes(value, shown_path, path.parent_path());
    stack_.pop_back();
    value.erase("include");
    merge_into(state_.value, value, "", shown_path, state_.origins);
  }

 private:
  void load_includes(const nlohmann::json& value, const std::string& file, const fs::path& dir) {
    const auto found = value.find("include");
    if (found == value.end())
      return;
    std::vector<std::pair<std::string, std::string>> includes;  // path, pointer
    if (found->is_string()) {
      includes.emplace_back(found->get<std::string>(), "/include");
    } else if (found->is_array()) {
      for (std::size_t i = 0; i < found->size(); ++i) {
        const std::string pointer = "/include/" + std::to_string(i);
        if (!(*found)[i].is_string()) {
          throw ConfigError(file, pointer, "expected a file name (a string) to include");
        }
        includes.emplace_back((*found)[i].get<std::string>(), pointer);
      }
    } else {
      throw ConfigError(file, "/include", "expected a file name or a list of file names");
    }
    for (const auto& [name, pointer] : includes) {
      const fs::path resolved = fs::path(name).is_absolute() ? fs::path(name) : dir / name;
      load(resolved.lexically_normal().string(), file, pointer);
    }
  }

  // Includes may repeat a file, so a few small files could otherwise expand without bound.
  void count_file(const std::string& shown_path, const std::string& includer,
                  const std::string& include_pointer) {
    if (++files_read_ <= kMaxConfigFiles)
      return;
    throw ConfigError(includer, include_pointer,
                      "cannot read included file '" + shown_path + "': the config already " +
                          "includes " + std::to_string(kMaxConfigFiles) + " files, the most " +
                          "ipusim reads");
  }

  ConfigDocument::State& state_;
  std::vector<fs::path> stack_;
  std::int64_t bytes_read_ = 0;
  int files_read_ = 0;
};

// One reference token of a JSON pointer, unescaped ("~0" is '~', "~1" is '/').
std::string unescape_token(const std::string& token, const std::string& label,
                           const std::string& pointer) {
  std::string out;
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] != '~') {
      out += token[i];
      continue;
    }
    const char next = i + 1 < token.size() ? token[i + 1] : '\0';
    if (next != '0' && next != '1') {
      throw ConfigError(label, pointer,
                        "'" + token +
                            "' is not a valid JSON pointer token: '~' must be "
                            "followed by 0 (for '~') or 1 (for '/')");
    }
    out += next == '0' ? '~' : '/';
    ++i;
  }
  return out;
}

std::vector<std::string> pointer_tokens(const std::string& pointer, const std::string& label) {
  std::vector<std::string> tokens;
  std::size_t start = 1;
  while (start <= pointer.size()) {
    std::size_t end = pointer.find('/', start);
    if (end == std::string::npos)
      end = pointer.size();
    const std::string token = pointer.substr(start, end - start);
    if (token.empty()) {
      throw ConfigError(label, pointer.substr(0, end),
                        "the path has an empty key; write it like pipeline.repeat_count or "
                        "/pipeline/repeat_count");
    }
    tokens.push_back(unescape_token(token, label, pointer.substr(0, end)));
    if (int(tokens.size()) > kMaxJsonDepth) {
      throw ConfigError(label, pointer.substr(0, end),
                        "the path is deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    start = end + 1;
  }
  return tokens;
}

std::optional<std::size_t> array_index(const std::string& token) {
  std::size_t index = 0;
  const char* end = token.data() + token.size();
  const auto [stop, error] = std::from_chars(token.data(), end, index);
  if (error != std::errc() || stop != end)
    return std::nullopt;
  return index;
}

// Sets `value` at `pointer`, creating objects on the way; every value the override creates or
// replaces records the override as its origin, so errors about them name the override.
void set_at_pointer(nlohmann::json& root, const std::string& pointer, const nlohmann::json& value,
                    const std::string& label, Origins& origins) {
  nlohmann::json* node = &root;
  std::string at;
  for (const std::string& token : pointer_tokens(pointer, label)) {
    if (node->is_array()) {
      const auto index = array_index(token);
      if (!index || *index > node->size()) {
        throw UnknownPathError(label, at + "/" + escape_pointer_token(token),
                               "'" + token + "' is not an index of this list of " +
                                   std::to_string(node->size()) + " entries");
      }
      if (*index == node->size())
        node->push_back(nullptr);
      node = &(*node)[*index];
    } else {
      if (!node->is_object()) {
        *node = nlohmann::json::object();
        origins.record(at, label);
      }
      if (!node->contains(token))
        origins.record(at + "/" + escape_pointer_token(token), label);
      node = &(*node)[token];
    }
    at += "/" + escape_pointer_token(token);
  }
  *node = value;
  record_all(value, at, label, origins);
}

// A VALUE that is not JSON is a string; one that is JSON but out of range is an error at the
// path it would set.
std::optional<nlohmann::json> parse_override_value(const Override& override_,
                                                   const std::string& pointer) {
  try {
    return parse_json_value(override_.value, override_.label);
  } catch (const ConfigError& error) {
    throw ConfigError(override_.label, pointer + error.pointer(), error.message());
  }
}

std::shared_ptr<ConfigDocument::State> empty_state(const std::string& path) {
  // Reports carry the path as a JSON string.
  if (!is_utf8(path))
    throw ConfigError(path, "", "the file name is not valid UTF-8 text");
  auto state = std::make_shared<ConfigDocument::State>();
  state->path = path;
  state->value = nlohmann::json::object();
  return state;
}

}  // namespace

void ConfigDocument::apply_overrides(State& state, const std::vector<Override>& overrides) {
  for (const auto& override_ : overrides) {
    const std::string pointer = to_json_pointer(override_.path);
    if (pointer.size() < 2) {
      throw ConfigError(override_.label, "", "the path to set is empty");
    }
    // Files are checked by the JSON parser; text from the command line is checked here, or a
    // later dump of it (an error message, a report) would fail.
    if (!is_utf8(override_.path) || !is_utf8(override_.value))
      throw ConfigError(override_.label, "", "the override is not valid UTF-8 text");
    const auto parsed = parse_override_value(override_, pointer);
    const nlohmann::json value = parsed ? *parsed : nlohmann::json(override_.value);
    set_at_pointer(state.value, pointer, value, override_.label, state.origins);
    if (std::find(state.override_labels.begin(), state.override_labels.end(), override_.label) ==
        state.override_labels.end())
      state.override_labels.push_back(override_.label);
  }
}

const std::vector<std::string>& ConfigDocument::files() const {
  return state_->files;
}

const std::vector<std::string>& ConfigDocument::override_labels() const {
  return state_->override_labels;
}

std::string to_json_pointer(const std::string& path) {
  if (path.empty() || path[0] == '/')
    return path;
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('.', start);
    if (end == std::string::npos)
      end = path.size();
    out += "/" + escape_pointer_token(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Override parse_set_argument(const std::string& argument) {
  const auto equals = argument.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw ConfigError("--set " + argument, "",
                      "expected PATH=VALUE, such as pipeline.gradient_accumulation_count=32");
  }
  return {argument.substr(0, equals), argument.substr(equals + 1), "--set " + argument};
}

ConfigDocument::ConfigDocument(std::shared_ptr<const State> state) : state_(std::move(state)) {}

ConfigDocument ConfigDocument::load(const std::string& path,
                                    const std::vector<Override>& overrides) {
  auto state = empty_state(path);
  Loader(*state).load(path, "", "");
  apply_overrides(*state, overrides);
  return ConfigDocument(std::move(state));
}

ConfigDocument ConfigDocument::parse(const std::string& text, const std::string& path,
                                     const std::vector<Override>& overrides) {
  auto state = empty_state(path);
  Loader(*state).load_text(text, path, "", "");
  apply_overrides(*state, overrides);
  return ConfigDocument(std::move(state));
}

ConfigDocument ConfigDocument::with_overrides(const std::vector<Override>& overrides) const {
  auto state = std::make_shared<State>(*state_);
  apply_overrides(*state, overrides);
  return ConfigDocument(std::move(state));
}

ConfigDocument ConfigDocument::from_json(const nlohmann::json& value, const std::string& source) {
  auto state = std::make_shared<State>();
  state->path = source;
  state->value = value;
  state->origins.record("", source);
  return ConfigDocument(std::move(state));
}

ConfigNode ConfigDocument::root() const {
  return ConfigNode(state_->value, "", state_->origins);
}

const std::string& ConfigDocument::path() const {
  return state_->path;
}

std::string ConfigDocument::source_of(const std::string& pointer) const {
  return state_->origins.source_of(pointer);
}

const nlohmann::json& ConfigDocument::json() const {
  return state_->value;
}

void check_config_readable(const std::string& path) {
  read_text(path, "", "");
}

void add_inputs(OutputSet& outputs, const ConfigDocument& document) {
  for (const auto& file : document.files())
    outputs.add_input(file, file == document.path() ? "the config this command reads"
                                                    : "a file the config includes");
}

}  // namespace ipusim::core
