#include "sim/core/config_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/core/error.hpp"

namespace ipusim::core {

struct ConfigDocument::State {
  std::string path;
  nlohmann::json value;
  Origins origins;
};

namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& shown_path, const fs::path& path,
                      const std::string& includer, const std::string& include_pointer) {
  std::ifstream in(path, std::ios::binary);
  if (!in || fs::is_directory(path)) {
    const std::string message = "cannot open config file '" + shown_path + "'";
    if (includer.empty())
      throw ConfigError(shown_path, "", message);
    throw ConfigError(includer, include_pointer, "cannot open included file '" + shown_path + "'");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void line_and_column(const std::string& text, std::size_t byte, std::size_t* line,
                     std::size_t* column) {
  *line = 1;
  *column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++*line;
      *column = 1;
    } else {
      ++*column;
    }
  }
}

nlohmann::json parse_json(const std::string& text, const std::string& file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    std::size_t line = 0;
    std::size_t column = 0;
    // nlohmann reports the byte after the offending character.
    line_and_column(text, error.byte == 0 ? 0 : error.byte - 1, &line, &column);
    std::string reason = error.what();
    const auto start = reason.find("syntax error");
    if (start != std::string::npos)
      reason = reason.substr(start);
    throw ConfigError(file, "",
                      "malformed JSON at line " + std::to_string(line) + ", column " +
                          std::to_string(column) + ": " + reason);
  }
}

std::string escape(const std::string& key) {
  std::string out;
  for (char c : key)
    out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

void record_all(const nlohmann::json& value, const std::string& pointer, const std::string& source,
                Origins& origins) {
  origins.record(pointer, source);
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      record_all(child, pointer + "/" + escape(key), source, origins);
    }
  }
}

// Objects merge key by key; any other value replaces what was there.
void merge_into(nlohmann::json& target, const nlohmann::json& source, const std::string& pointer,
                const std::string& file, Origins& origins) {
  for (const auto& [key, value] : source.items()) {
    const std::string child = pointer + "/" + escape(key);
    if (value.is_object() && target.contains(key) && target[key].is_object()) {
      merge_into(target[key], value, child, file, origins);
    } else {
      target[key] = value;
      record_all(value, child, file, origins);
    }
  }
}

class Loader {
 public:
  explicit Loader(ConfigDocument::State& state) : state_(state) {}

  void load(const std::string& shown_path, const std::string& includer,
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
    const std::string text = read_text(shown_path, path, includer, include_pointer);
    nlohmann::json value = parse_json(text, shown_path);
    if (!value.is_object()) {
      throw ConfigError(shown_path, "/", "expected the config to be a JSON object");
    }
    stack_.push_back(canonical);
    load_includes(value, shown_path, path.parent_path());
    stack_.pop_back();
    value.erase("include");
    if (state_.origins.source_of("").empty())
      state_.origins.record("", shown_path);
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

  ConfigDocument::State& state_;
  std::vector<fs::path> stack_;
};

void set_at_pointer(nlohmann::json& root, const std::string& pointer, const nlohmann::json& value,
                    const std::string& label) {
  nlohmann::json* node = &root;
  std::string token;
  std::size_t start = 1;
  while (start <= pointer.size()) {
    std::size_t end = pointer.find('/', start);
    if (end == std::string::npos)
      end = pointer.size();
    token = nlohmann::json::json_pointer("/" + pointer.substr(start, end - start)).back();
    const bool last = end == pointer.size();
    if (node->is_array()) {
      std::size_t index = 0;
      const bool numeric =
          !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
      if (numeric)
        index = std::stoul(token);
      if (!numeric || index > node->size()) {
        throw ConfigError(label, pointer.substr(0, end),
                          "'" + token + "' is not an index of this list of " +
                              std::to_string(node->size()) + " entries");
      }
      if (index == node->size())
        node->push_back(nullptr);
      node = &(*node)[index];
    } else {
      if (!node->is_object())
        *node = nlohmann::json::object();
      node = &(*node)[token];
    }
    if (last)
      *node = value;
    start = end + 1;
  }
}

nlohmann::json parse_override_value(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    return text;
  }
}

}  // namespace

void ConfigDocument::apply_overrides(State& state, const std::vector<Override>& overrides) {
  for (const auto& override_ : overrides) {
    const std::string pointer = to_json_pointer(override_.path);
    if (pointer.size() < 2) {
      throw ConfigError(override_.label, "", "the path to set is empty");
    }
    const nlohmann::json value = parse_override_value(override_.value);
    set_at_pointer(state.value, pointer, value, override_.label);
    record_all(value, pointer, override_.label, state.origins);
  }
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
    out += "/" + escape(path.substr(start, end - start));
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
  auto state = std::make_shared<State>();
  state->path = path;
  state->value = nlohmann::json::object();
  Loader(*state).load(path, "", "");
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

const nlohmann::json& ConfigDocument::json() const {
  return state_->value;
}

}  // namespace ipusim::core
