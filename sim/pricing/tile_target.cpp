#include "sim/pricing/tile_target.hpp"

namespace ipusim::sim::pricing {

TileTarget tile_target(const HardwareSpec& hardware) {
  TileTarget target;
  target.tiles = hardware.tiles;
  target.tile_memory_bytes = hardware.memory_per_ipu_bytes / hardware.tiles;
  return target;
}

}  // namespace ipusim::sim::pricing
