#pragma once
// A config whose replicas' collectives are easy to count by hand, shared by the collectives and
// weight-update tests: two stages of one dense layer each (400 x 400 + 400 = 160,400 fp32
// parameters, 641,600 B of gradients and of weights per IPU) with profiled cycles, on the ideal
// hardware at 1 GHz with priced links: IPU-Links of 1 GB/s (2 up/down links: 2 GB/s a ring step)
// and 100 cycles a step, GW-Links of 0.5 GB/s and 1,000 cycles a step. At 1 GHz a link of
// 1 GB/s moves one byte a cycle.

#include <nlohmann/json.hpp>

namespace ipusim::testing {

inline nlohmann::json replicated_pair(int replicas) {
  nlohmann::json layers = nlohmann::json::array();
  for (const char* id : {"d0", "d1"}) {
    layers.push_back({{"id", id},
                      {"type", "dense"},
                      {"units", 400},
                      {"cycles", {{"forward", 1000}, {"backward", 2000}}}});
  }
  layers.push_back({{"id", "loss"},
                    {"type", "softmax_cross_entropy"},
                    {"cycles", {{"forward", 0}, {"backward", 0}}}});
  return {
      {"model", {{"name", "pair"}, {"input", {{"shape", {400}}}}, {"layers", layers}}},
      {"pipeline",
       {{"splits", {"d1"}}, {"gradient_accumulation_count", 4}, {"replication_factor", replicas}}},
      {"hardware",
       {{"preset", "ideal"},
        {"clock", "1 GHz"},
        {"ipu_link", {{"bandwidth", "1 GB/s"}, {"latency_cycles", 100}}},
        {"gw_link", {{"bandwidth", "0.5 GB/s"}, {"latency_cycles", 1000}}}}}};
}

}  // namespace ipusim::testing
