#include "sim/replay/ledger.hpp"

#include <limits>
#include <numeric>

#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace ipusim::sim::detail {
namespace {

using core::Cycles;
using schedules::Phase;

std::int64_t sum_of_phases(const std::array<std::int64_t, 4>& by_phase) {
  return std::accumulate(by_phase.begin(), by_phase.end(), std::int64_t{0});
}

}  // namespace

Ledger::Ledger(int ipus, PhaseClock clock) : clock_(clock), accounts_(std::size_t(ipus)) {}

std::size_t Ledger::settle(int ipu, Cycles up_from, Cycles down_from) {
  auto& account = accounts_[std::size_t(ipu)];
  auto& spans = account.spans;
  constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  // A span's shares are known once it ends before every boundary not told can come.
  const std::int64_t known_until =
      std::min(up_.told ? kNever : up_from.count, down_.told ? kNever : down_from.count);
  std::size_t head = account.head;
  std::int64_t before_up = 0;
  std::int64_t before_down = 0;
  for (; head < spans.size() && spans[head].end <= known_until; ++head) {
    before_up += share_before(up_, spans[head]);
    before_down += share_before(down_, spans[head]);
  }
  if (head > account.head)
    account.settled_end = spans[head - 1].end;
  account.before_up += before_up;
  account.before_down += before_down;
  account.head = head;
  if (2 * head >= spans.size()) {
    spans.erase(spans.begin(), spans.begin() + std::ptrdiff_t(head));
    account.head = 0;
  }
  const std::size_t left = spans.size() - account.head;
  account.settle_at = std::max(kFirstSettle, 2 * left);
  return left;
}

void Ledger::stream(int ipu, std::int64_t cycles, std::int64_t bytes) {
  auto& busy = accounts_[std::size_t(ipu)].busy;
  busy.streaming += cycles;
  busy.streamed_bytes = core::checked_add(busy.streamed_bytes, bytes, core::kByteCount);
}

void Ledger::ramp_up_ends(Cycles at) {
  IPUSIM_CHECK(clock_ == PhaseClock::kBoundaries && !up_.told && !pipeline_ended_);
  up_ = {true, at.count};
}

void Ledger::ramp_down_begins(Cycles at) {
  IPUSIM_CHECK(clock_ == PhaseClock::kBoundaries && !down_.told && !pipeline_ended_);
  down_ = {true, at.count};
}

void Ledger::end_pipeline(Cycles end) {
  IPUSIM_CHECK(!pipeline_ended_);
  if (clock_ == PhaseClock::kBoundaries) {
    IPUSIM_CHECK(steps_end_ == Cycles{0});
    split_phases(end);
  } else {
    IPUSIM_CHECK(steps_end_ == end);
  }
  pipeline_ended_ = true;
  pipeline_end_ = end;
}

// The phases' lengths from the boundaries, and every IPU's busy cycles by phase from its
// spans' shares before each boundary. A ramp-down never told means no IPU ran compute.
void Ledger::split_phases(Cycles end) {
  IPUSIM_CHECK(up_.told);
  const std::int64_t up = std::min(up_.at, end.count);
  const std::int64_t down = std::max(up, std::min(down_.at, end.count));
  phase_cycles_[schedules::index(Phase::kRampUp)] = up;
  phase_cycles_[schedules::index(Phase::kMain)] = down - up;
  phase_cycles_[schedules::index(Phase::kRampDown)] = end.count - down;
  for (auto& account : accounts_) {
    IPUSIM_CHECK(down_.told || account.busy.total == 0);
    IPUSIM_CHECK(account.settled_end <= end.count);
    std::int64_t before_up = account.before_up;
    std::int64_t before_down = account.before_down;
    for (std::size_t i = account.head; i < account.spans.size(); ++i) {
      const Span span = account.spans[i];
      IPUSIM_CHECK(span.end <= end.count);
      before_up += share_before(up_, span);
      before_down += share_before(down_, span);
    }
    account.spans = {};
    account.head = 0;
    auto& in_phase = account.busy.in_phase;
    in_phase[schedules::index(Phase::kRampUp)] = before_up;
    in_phase[schedules::index(Phase::kMain)] = before_down - before_up;
    in_phase[schedules::index(Phase::kRampDown)] = account.busy.total - before_down;
  }
}

void Ledger::weight_update(const WeightUpdateSpan& span, std::int64_t offload_bytes) {
  IPUSIM_CHECK(pipeline_ended_ && span.start == pipeline_end_);
  IPUSIM_CHECK(span.all_reduce_end <= span.offload_end && span.offload_end <= span.update_end);
  compute(span.ipu, (span.update_end - span.offload_end).count, Phase::kWeightUpdate);
  stream(span.ipu, (span.offload_end - span.all_reduce_end).count, offload_bytes);
}

void Ledger::end_step(Cycles end) {
  IPUSIM_CHECK(pipeline_ended_ && end >= pipeline_end_);
  phase_cycles_[schedules::index(Phase::kWeightUpdate)] = (end - pipeline_end_).count;
  for (const auto& account : accounts_)
    IPUSIM_CHECK(sum_of_phases(account.busy.in_phase) == account.busy.total);
  IPUSIM_CHECK(sum_of_phases(phase_cycles_) == end.count);
}

}  // namespace ipusim::sim::detail
