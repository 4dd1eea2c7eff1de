#pragma once
// How one sub-stage (one IPU's part of a pipeline stage) recomputes from its checkpoints, as the
// memory model charges it and the numeric executor runs it. A checkpoint is a layer whose output
// the stash keeps beside the stage inputs; the backward rebuilds the rest segment by segment,
// the last segment first. A segment is the layers after one checkpoint (or the stage inputs) up
// to and including the next checkpoint, or up to the sub-stage's last layer.
//
// Checkpoints are the layers marked "checkpoint" and, under recompute_checkpoint_every_layer,
// every layer but the sub-stage's last, as PopART BERT places one at each encoder output but
// the last on each IPU. An input layer is never one: its output is the model input, which the
// stash keeps as a stage input.
//
// A segment's recomputation runs the forward of its own layers and of any layer of an earlier
// segment whose output it reads that is not a checkpoint (a residual reaching over a
// checkpoint), so such a layer runs once more for each segment that reads it. In a chain each
// layer runs once.
//
// The final forward stage (its backward follows its forward with nothing stashed between) keeps
// the layers after its last checkpoint from its forward instead of recomputing them, as
// PopART's setFinalFwdStageRecomputation does (graphcore/popart
// willow/src/transforms/pipeline.cpp); with no checkpoint it recomputes nothing.

#include <vector>

#include "models/layers/model.hpp"

namespace ipusim::models {

// Which layers are checkpoints and which recomputations rebuild the rest.
struct CheckpointOptions {
  bool every_layer = false;  // recompute_checkpoint_every_layer
  bool keep_tail = false;    // the final forward stage: keep the layers after the last checkpoint
};

struct RecomputePlan {
  std::vector<int> checkpoints;  // in execution order
  // Per segment, last segment first (the order the backward rebuilds them): the layers its
  // recomputation runs, in execution order. Empty segments are left out.
  std::vector<std::vector<int>> recomputations;
  std::vector<int> kept;  // the final forward stage's layers after its last checkpoint

  // How many recomputations run `layer`'s forward (0, 1, or more for a layer read over a
  // checkpoint).
  int runs(int layer) const;
  bool is_checkpoint(int layer) const;
};

// The plan of `layers` (one sub-stage's, in any order) of `model`.
RecomputePlan recompute_plan(const Model& model, const std::vector<int>& layers,
                             const CheckpointOptions& options);

}  // namespace ipusim::models
