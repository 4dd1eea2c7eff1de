// Must not compile: a switch over LayerType that forgets a type. The test "a switch over
// LayerType that forgets a type does not compile" builds it with the project's warnings and
// expects -Wswitch to fail the build, which is what keeps a new layer type from being costed as
// nothing by a switch that was not told of it.

#include "models/layers/layer.hpp"

namespace ipusim::models {

int forgets_a_type(LayerType type) {
  switch (type) {
    case LayerType::kInput:
      return 0;
  }
  return 1;
}

}  // namespace ipusim::models
