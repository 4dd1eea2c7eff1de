#pragma once
// "Did you mean" for misspelt names: the closest candidate by edit distance, if close enough.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ipusim::core {

std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, when at most about a third of its letters differ.
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

// "; did you mean 'x'?" or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// "'a', 'b' or 'c'" for messages listing what is allowed; with another `quote`, "`a`, `b` or
// `c`" for Markdown or "\"a\" or \"b\"" for JSON values.
std::string quoted_list(const std::vector<std::string>& items, std::string_view quote = "'");

}  // namespace ipusim::core
