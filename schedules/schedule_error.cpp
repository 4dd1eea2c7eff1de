#include "schedules/schedule_error.hpp"

namespace ipusim::schedules {

std::string_view option_key(ScheduleOption option) {
  switch (option) {
    case ScheduleOption::kGradientAccumulationCount:
      return "gradient_accumulation_count";
    case ScheduleOption::kDeviceMapping:
      return "device_mapping";
    case ScheduleOption::kRecomputationMode:
      return "recomputation_mode";
    case ScheduleOption::kPipelineSchedule:
      return "pipeline_schedule";
    case ScheduleOption::kRepeatCount:
      return "repeat_count";
    case ScheduleOption::kReplicas:
      return "replicas";
  }
  return "";
}

ScheduleError::ScheduleError(ScheduleOption option, const std::string& message)
    : std::runtime_error(message), option_(option) {}

}  // namespace ipusim::schedules
