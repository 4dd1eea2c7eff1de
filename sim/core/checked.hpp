#pragma once
// Arithmetic on counts that user input can make arbitrarily large: shapes, parameters, bytes.
// A result that does not fit in 64 bits throws Overflow, which the reader of the input turns
// into a ConfigError naming the JSON path; nothing wraps around or is undefined.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ipusim::core {

// A product or sum of user-given counts left the 64-bit range. `what` names the quantity.
class Overflow : public std::overflow_error {
 public:
  explicit Overflow(const std::string& what) : std::overflow_error(what) {}
};

// What an overflowing sum of bytes (memory, traffic) names.
inline constexpr const char* kByteCount = "byte count";

constexpr std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out))
    throw Overflow(what);
  return out;
}

constexpr std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    throw Overflow(what);
  return out;
}

// The smallest power of two >= count (1 for count <= 1): multi-IPU devices come in powers of two.
constexpr int round_up_to_power_of_two(int count) {
  int power = 1;
  while (power < count)
    power *= 2;
  return power;
}

}  // namespace ipusim::core
