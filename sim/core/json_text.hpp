#pragma once
// Reading JSON text that a user controls, safely: only regular files, at most kMaxConfigBytes,
// parsed with the JSON pointer of whatever goes wrong, nesting bounded so that no later
// recursive walk can overflow the stack. Every failure is a ConfigError; nothing else escapes.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ipusim::core {

// Config files are small: the largest shipped one is about 10 kB.
inline constexpr std::int64_t kMaxConfigBytes = std::int64_t{64} << 20;
// Deeper JSON than any config needs; the bound keeps recursive walks off the stack's edge.
inline constexpr int kMaxJsonDepth = 64;

// Why a file cannot be read, or nullopt when `text` holds it whole. Never blocks on a FIFO and
// never reads more than `max_bytes` + 64 KiB.
std::optional<std::string> read_regular_file(const std::string& path, std::string* text,
                                             std::int64_t max_bytes = kMaxConfigBytes);

// The same checks as read_regular_file, the text handed to `chunk` a piece at a time (at most
// 1 MiB each) instead of held whole.
std::optional<std::string> read_regular_file_chunks(
    const std::string& path, std::int64_t max_bytes,
    const std::function<void(std::string_view)>& chunk);

// Parses `text`; errors name `source`, the line and column and, for values, their JSON pointer.
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

// Whether `text` is valid UTF-8, as every string in a JSON document must be.
bool is_utf8(const std::string& text);

// An override's VALUE: JSON when it is JSON, nullopt when it is not (then taken as a string).
// A number out of range or nesting too deep is a ConfigError naming `source`.
std::optional<nlohmann::json> parse_json_value(const std::string& text, const std::string& source);

}  // namespace ipusim::core
