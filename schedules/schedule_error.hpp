#pragma once
// The user-facing failure of schedule building: a pipeline option that the chosen schedule
// cannot honour. option() names the config key at fault so that the caller can turn the error
// into a config error with its JSON path (/pipeline/gradient_accumulation_count, ...).

#include <stdexcept>
#include <string>
#include <string_view>

namespace ipusim::schedules {

// The pipeline options a schedule can reject.
enum class ScheduleOption {
  kGradientAccumulationCount,
  kDeviceMapping,
  kRecomputationMode,
  kPipelineSchedule,
  kRepeatCount,
  kReplicas,
};

// The config key of an option: "gradient_accumulation_count", "device_mapping", ...
std::string_view option_key(ScheduleOption option);

// what() is the message for the user, without the option's path.
class ScheduleError : public std::runtime_error {
 public:
  ScheduleError(ScheduleOption option, const std::string& message);
  ScheduleOption option() const { return option_; }

 private:
  ScheduleOption option_;
};

}  // namespace ipusim::schedules
