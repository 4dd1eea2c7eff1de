#pragma once
// .npz archives as numpy.savez and numpy.savez_compressed write them: a zip of one .npy per
// array, stored or deflated, read with Debian's libzip. Keras users save their weights this way
// (np.savez("model.npz", **{w.path: w.numpy() for w in model.weights})).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/kernels/tensor.hpp"

namespace ipusim::models {

// The float32 arrays of the archive at `path`, by name (the member's name without ".npy"), in
// the archive's order. Throws core::ConfigError naming the file (and the member) for a file
// that is no zip, a member that is no float32 .npy or holds fewer bytes than its header
// declares, or more than `max_bytes` of arrays. Only what the headers declare is inflated, and
// never past `max_bytes`, so a small archive cannot claim gigabytes.
std::vector<std::pair<std::string, Tensor>> read_npz(const std::string& path,
                                                     std::int64_t max_bytes);

}  // namespace ipusim::models
