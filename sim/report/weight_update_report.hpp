#pragma once
// The weight-update phase in the report: where its cycles go (the replicas' collectives, the
// optimizer state stream, the update, the sync and the host call), and the IPU-Link
// domains and hosts of a multi-POD64 system.

#include <string>

#include <nlohmann/json.hpp>

#include "sim/report/report.hpp"

namespace ipusim::sim {

// "Weight update on IPU0 (the longest): all-reduce 1,234 + ... = N cycles"; empty for inference.
std::string weight_update_text(const RunReport& r);
nlohmann::json weight_update_json(const RunReport& r);

// "Host input: ..." the hosts' input pipeline per step (sim/machine/host_input.hpp); empty for
// inference or unlimited input bandwidth.
std::string host_input_text(const RunReport& r);
nlohmann::json host_input_json(const RunReport& r);

// One line on the ILDs and hosts when the replicas span more than one ILD, else empty.
std::string ild_text(const RunReport& r);

}  // namespace ipusim::sim
