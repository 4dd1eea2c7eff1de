#pragma once
// What a run will cost, known before it runs: the replay's tasks (from the schedule's tasks per
// micro-batch; past a few minutes' work it is refused, past a few seconds the user is told what
// to expect) and the numeric kernels' FLOPs (past about 20 s automatic numeric mode skips them).

#include <string>

#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// The most tasks one command replays, all its replays together: at a few tens of millions a
// second, a few minutes' work.
inline constexpr double kMaxReplayTasks = 2e9;
// Tasks past which a command tells the user how long its replays will take.
inline constexpr double kLongReplayTasks = 2e8;

// The tasks one replay of `spec` runs: its schedule's tasks per micro-batch x the GAC, once, or
// once per repeat when the kernels run.
double replay_tasks(const RunSpec& spec, bool numeric);

// "about 7 s at 40 million tasks a second", the time `tasks` take to replay.
std::string replay_time_text(double tasks);

// Throws core::ConfigError at the option at fault, with the estimate, for a replay of more than
// 2e9 tasks: the tasks per micro-batch x the GAC, once, or once per repeat when the kernels run.
void refuse_long_replay(const RunSpec& spec, bool numeric);

// For a replay of more than 2e8 tasks (a few seconds), what it will run and about how long
// (estimated_replay_seconds); empty for a shorter one.
std::string long_replay_notice(const RunSpec& spec, bool numeric);

// The seconds a replay of `spec` takes, estimated from its tasks at the rate
// tools/bench/estimate_bench measures over the shipped configs.
double estimated_replay_seconds(const RunSpec& spec, bool numeric);

// Why automatic numeric mode skips the kernels of `spec`: they would run more than 2e11 FLOPs,
// pipeline and reference; empty within that budget.
std::string numeric_over_budget(const RunSpec& spec);

}  // namespace ipusim::sim
