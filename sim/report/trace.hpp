#pragma once
// The run as a Chrome trace-event JSON document, for Perfetto (ui.perfetto.dev) and
// chrome://tracing. IPUn is the logical IPU (device_mapping); names add the physical IPUs
// where selection_order places them. Tracks, as processes and threads:
//   "IPUs"        one thread per pipeline IPU ("IPU2 (physical IPU3)"): F/B/R/W tasks
//                 ("F3 s1"), then the weight update
//   "IPU-Links"   one thread per directed link ("link IPU1->IPU2 (physical IPU1->IPU3)"):
//                 activation/gradient copies
//   "Host links"  one thread per IPU ("host link IPU0"): infeed and outfeed
//   "Streaming memory"  when used, one thread per IPU ("streaming memory IPU0"): stash FIFO
//                 reads and writes under offload_activations, the offloaded optimizer state
//   "BSP"         "sync / exchange" slices of every step, and a "phases" thread with one slice
//                 per phase plus a global instant marker where each phase begins
//   "Memory"      a counter per IPU with one series per on-chip memory category (bytes)
// Times are microseconds (cycles / clock * 1e6). The document is a pure function of its
// inputs, so two runs of the same config produce the same bytes.

#include <nlohmann/json.hpp>

#include "sim/replay/timeline.hpp"
#include "sim/report/report.hpp"

namespace ipusim::sim {

nlohmann::json chrome_trace(const RunReport& report, const Timeline& timeline);

}  // namespace ipusim::sim
