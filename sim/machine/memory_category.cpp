#include "sim/machine/memory_category.hpp"

namespace ipusim::sim {

std::string_view to_string(MemoryCategory category) {
  static constexpr std::array<std::string_view, kMemoryCategories.size()> kKeys = {
      "activations",     "always_live", "copy_buffers", "gradient_accumulators",
      "optimizer_state", "stash",       "weights"};
  return kKeys[static_cast<std::size_t>(category)];
}

std::int64_t bytes_of(const MemoryByCategory& memory, MemoryCategory category) {
  const auto found = memory.find(category);
  return found == memory.end() ? 0 : found->second;
}

}  // namespace ipusim::sim
