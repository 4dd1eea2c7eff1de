#pragma once
// What a replay will cost, known before it runs from the schedule's tasks per micro-batch: past
// a few minutes' work it is refused, past a few seconds the user is told what to expect.

#include <string>

#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// Throws core::ConfigError at the option at fault, with the estimate, for a replay of more than
// 2e9 tasks: the tasks per micro-batch x the GAC, once, or once per repeat when the kernels run.
void refuse_long_replay(const RunSpec& spec, bool numeric);

// For a replay of more than 2e8 tasks (about 5 s at the 40 million tasks a second of
// tools/bench/replay_bench), what it will run and about how long; empty for a shorter one.
std::string long_replay_notice(const RunSpec& spec, bool numeric);

}  // namespace ipusim::sim
