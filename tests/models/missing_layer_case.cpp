// Must not compile: a layer type's row that names no kernel. The test "a layer type's row that
// leaves out a function does not compile" builds it with the project's warnings and expects the
// build to fail on the missing member, which is what keeps a new type from going without a
// shape, a cost, a lowering or a kernel. Everything else here is well formed, so the build
// fails for that reason alone.

#include "models/layers/layer_type_def.hpp"
#include "models/layers/types/type_support.hpp"

namespace ipusim::models {

LayerTypeDef forgets_its_kernel() {
  return {.name = "relu",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = no_cost,
          .lower = no_operations};
}

}  // namespace ipusim::models
