#include "sim/core/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace ipusim::core {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return prefix.size() <= text.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

// The one candidate that the word lengthens or shortens ("protobuf" for "proto"), of three
// letters or more; none when two are.
std::optional<std::string> only_prefix_match(std::string_view word,
                                             const std::vector<std::string>& candidates) {
  std::optional<std::string> found;
  for (const auto& candidate : candidates) {
    const std::string_view shorter = candidate.size() < word.size() ? candidate : word;
    const bool related = shorter.size() >= 3 && (starts_with_ignoring_case(word, candidate) ||
                                                 starts_with_ignoring_case(candidate, word));
    if (!related)
      continue;
    if (found)
      return std::nullopt;
    found = candidate;
  }
  return found;
}

}  // namespace

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    if (!best || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  const std::size_t allowed = std::max<std::size_t>(2, word.size() / 3);
  if (!best || best_distance > allowed)
    return only_prefix_match(word, candidates);
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const auto match = closest_match(word, candidates);
  return match ? "; did you mean '" + *match + "'?" : "";
}

std::string quoted_list(const std::vector<std::string>& items, std::string_view quote) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0)
      out += i + 1 == items.size() ? " or " : ", ";
    out.append(quote).append(items[i]).append(quote);
  }
  return out;
}

}  // namespace ipusim::core
