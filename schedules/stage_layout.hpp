#pragma once
// Where the stages of a pipeline run: the IPUs of every stage (several for a concurrent stage)
// and, per IPU, the stages it hosts. Built from a device mapping already checked by
// build_schedule: every stage has at least one IPU, ids are >= 0 and distinct within a stage.

#include <vector>

namespace ipusim::schedules {

class StageLayout {
 public:
  // One stage (or one sub-stage of a concurrent stage) placed on an IPU.
  struct Hosted {
    int stage;
    int substage;
  };

  explicit StageLayout(const std::vector<std::vector<int>>& device_mapping);

  int stages() const { return static_cast<int>(stage_ipus_.size()); }
  int ipus() const { return static_cast<int>(hosted_.size()); }  // highest IPU id + 1
  const std::vector<int>& ipus_of(int stage) const { return stage_ipus_[stage]; }
  // Stages on `ipu` in ascending order; empty for an IPU the mapping skips.
  const std::vector<Hosted>& hosted(int ipu) const { return hosted_[ipu]; }
  // Index of `ipu` within the stage's IPUs, or -1 when the stage does not run there.
  int substage(int stage, int ipu) const;

 private:
  std::vector<std::vector<int>> stage_ipus_;
  std::vector<std::vector<Hosted>> hosted_;
};

}  // namespace ipusim::schedules
