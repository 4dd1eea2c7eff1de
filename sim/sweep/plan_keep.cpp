// How plan replays and ranks its finalists, and what it keeps of them
// (sim/sweep/planner_internal.hpp, PlanKeeper): the best `top` and the one of least peak, whatever
// the number of settings; for --csv every row in a scratch file and a rank key in memory; for
// --html the points the page draws. Also the CSV itself, written from the ledger in rank order.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include "sim/core/csv.hpp"
#include "sim/core/error.hpp"
#include "sim/report/run_metrics.hpp"
#include "sim/sweep/planner_internal.hpp"
#include "sim/sweep/sweep_csv.hpp"

namespace ipusim::sim {

namespace plan_detail {
namespace {

// The Pareto front has one point per distinct peak at most, so it stays small for any real
// model; past this many points every other one is dropped, and the page says so.
constexpr std::size_t kMaxFront = 1000;

// The cells of a candidate's CSV row after the rank, up to the per-IPU ones.
std::vector<std::string> plan_row_cells(const PlanCandidate& c) {
  return {nlohmann::json(c.splits).dump(),
          std::to_string(c.ipus_per_replica),
          std::to_string(c.replicas),
          nlohmann::json(c.spec->pipeline.device_mapping()).dump(),
          std::to_string(c.spec->hardware.ipus),
          c.schedule,
          std::to_string(c.gac),
          std::to_string(c.micro_batch),
          c.recomputation,
          c.offload,
          std::to_string(c.bottleneck_cycles),
          std::to_string(c.bottleneck_ipu),
          std::to_string(c.estimated_peak_max())};
}

// Each cell as csv_line writes it, after a comma.
void add_cells(std::string& out, std::vector<std::string>::const_iterator begin,
               std::vector<std::string>::const_iterator end) {
  for (auto cell = begin; cell != end; ++cell)
    out += "," + core::csv_cell(one_line(*cell));
}

// A candidate's row after its rank: the cells up to its last utilisation cell (`head`), then
// its peak memory cells (`tail`), each after a comma; `ipus` of each.
struct RowText {
  std::string head;
  std::string tail;
  std::size_t ipus = 0;
};

RowText row_text(const PlanCandidate& c) {
  RowText out;
  out.ipus = c.report->replay.ipus.size();
  const RunMetrics metrics = run_metrics(*c.report);
  auto cells = plan_row_cells(c);
  for (auto& cell : metric_cells(metrics))
    cells.push_back(std::move(cell));
  const auto per_ipu = per_ipu_cells(metrics, out.ipus);
  add_cells(out.head, cells.begin(), cells.end());
  const auto middle = per_ipu.begin() + std::ptrdiff_t(out.ipus);
  add_cells(out.head, per_ipu.begin(), middle);
  add_cells(out.tail, middle, per_ipu.end());
  return out;
}

// The whole CSV line of a row of rank `rank` in a file with `ipus` per-IPU column pairs.
std::string line_of(std::size_t rank, const RowText& row, std::size_t ipus) {
  const std::string padding(ipus - row.ipus, ',');
  return std::to_string(rank) + row.head + padding + row.tail + padding + "\n";
}

[[noreturn]] void scratch_failed(const char* doing) {
  throw core::ConfigError("--csv", "",
                          std::string("cannot ") + doing +
                              " the scratch file that holds the rows until they are ranked: " +
                              std::strerror(errno) + " (is the temporary folder full?)");
}

}  // namespace

struct PlanKeeper::State {
  State(const PlanRequest& r, const PlanResult& plan) : request(r), result(plan) {}

  const PlanRequest& request;
  const PlanResult& result;
  std::size_t top = 1;
  std::size_t count = 0;
  // A max-heap by rank: its first entry is the worst of the best `top`.
  std::vector<std::pair<RankKey, PlanCandidate>> best;
  std::optional<std::pair<RankKey, PlanCandidate>> least;
  std::shared_ptr<PlanLedger> ledger;
  // The page's points: every `stride`-th in the search's order, the Pareto front by peak, and
  // those of the most peak, the least peak and the most throughput (which set the axes).
  std::vector<DrawnPoint> sample;
  std::size_t stride = 1;
  std::vector<DrawnPoint> front;
  std::vector<DrawnPoint> extremes;

  bool better(const RankKey& a, const RankKey& b) const {
    return ranks_before(a, b, request.objective);
  }
  DrawnPoint point(const PlanCandidate& c, const RankKey& key) const {
    return {key, c.key(), c.report->figures.fullest_ipu, html_row(result, c)};
  }
  void write_row(const PlanCandidate& c);
  void draw(const PlanCandidate& c, const RankKey& key);
  void add_to_front(const PlanCandidate& c, const RankKey& key);
};

void PlanKeeper::State::write_row(const PlanCandidate& c) {
  const RowText text = row_text(c);
  auto& l = *ledger;
  const long offset = std::ftell(l.scratch.get());
  if (offset < 0 ||
      std::fwrite(text.head.data(), 1, text.head.size(), l.scratch.get()) != text.head.size() ||
      std::fwrite(text.tail.data(), 1, text.tail.size(), l.scratch.get()) != text.tail.size())
    scratch_failed("write");
  l.rows.push_back({std::uint64_t(offset), std::uint32_t(text.head.size()),
                    std::uint32_t(text.tail.size()), std::uint32_t(text.ipus)});
  l.ipus = std::max(l.ipus, text.ipus);
}

void PlanKeeper::State::add_to_front(const PlanCandidate& c, const RankKey& key) {
  // The front by peak, its throughput rising: the point at or below this peak with the most
  // throughput is the one just before the first of more peak.
  auto after = std::upper_bound(
      front.begin(), front.end(), key.peak_bytes,
      [](std::int64_t peak, const DrawnPoint& p) { return peak < p.key.peak_bytes; });
  if (after != front.begin() && std::prev(after)->key.throughput >= key.throughput)
    return;
  auto first = after;
  if (first != front.begin() && std::prev(first)->key.peak_bytes == key.peak_bytes)
    --first;  // same peak, less throughput: beaten
  auto last = after;
  while (last != front.end() && last->key.throughput <= key.throughput)
    ++last;
  const auto at = front.erase(first, last);
  front.insert(at, point(c, key));
  if (front.size() <= kMaxFront)
    return;
  std::vector<DrawnPoint> thinned;
  for (std::size_t i = 0; i < front.size(); ++i)
    if (i % 2 == 0 || i + 1 == front.size())
      thinned.push_back(std::move(front[i]));
  front = std::move(thinned);
  ledger->front_thinned = true;
}

void PlanKeeper::State::draw(const PlanCandidate& c, const RankKey& key) {
  if (key.fits)
    add_to_front(c, key);
  if (key.order % stride == 0) {
    sample.push_back(point(c, key));
    if (sample.size() > kPlanDrawnSample) {
      stride *= 2;
      std::erase_if(sample, [&](const DrawnPoint& p) { return p.key.order % stride != 0; });
    }
  }
  // The most peak, the least peak and the most throughput, the first of equals kept.
  const bool beats[3] = {extremes.empty() || key.peak_bytes > extremes[0].key.peak_bytes,
                         extremes.empty() || key.peak_bytes < extremes[1].key.peak_bytes,
                         extremes.empty() || key.throughput > extremes[2].key.throughput};
  if (extremes.empty())
    extremes.resize(3);
  for (std::size_t i = 0; i < 3; ++i)
    if (beats[i])
      extremes[i] = point(c, key);
}

PlanKeeper::PlanKeeper(const PlanRequest& request, const PlanResult& result)
    : state_(std::make_unique<State>(request, result)) {
  state_->top = std::size_t(std::max(1, request.top));
  if (!request.keep_rows && !request.keep_points)
    return;
  state_->ledger = std::make_shared<PlanLedger>();
  if (request.keep_rows) {
    state_->ledger->scratch = std::shared_ptr<std::FILE>(std::tmpfile(), [](std::FILE* file) {
      if (file != nullptr)
        std::fclose(file);
    });
    if (!state_->ledger->scratch)
      scratch_failed("create");
  }
}

PlanKeeper::~PlanKeeper() = default;

void PlanKeeper::add(PlanCandidate replayed) {
  auto& s = *state_;
  replayed.show_shape = s.result.varies_shape;
  replayed.show_offload = s.result.varies_offload;
  const RankKey key = rank_key(replayed, s.count++);
  if (s.ledger) {
    s.ledger->keys.push_back(key);
    if (s.request.keep_rows)
      s.write_row(replayed);
    if (s.request.keep_points)
      s.draw(replayed, key);
  }
  if (!s.least || key.peak_bytes < s.least->first.peak_bytes ||
      (key.peak_bytes == s.least->first.peak_bytes && s.better(key, s.least->first)))
    s.least.emplace(key, replayed);
  const auto worse_last = [&](const auto& a, const auto& b) { return s.better(a.first, b.first); };
  if (s.best.size() == s.top && !s.better(key, s.best.front().first))
    return;
  s.best.emplace_back(key, std::move(replayed));
  std::push_heap(s.best.begin(), s.best.end(), worse_last);
  if (s.best.size() > s.top) {
    std::pop_heap(s.best.begin(), s.best.end(), worse_last);
    s.best.pop_back();
  }
}

void PlanKeeper::finish(PlanResult& result) {
  auto& s = *state_;
  std::sort_heap(s.best.begin(), s.best.end(),
                 [&](const auto& a, const auto& b) { return s.better(a.first, b.first); });
  result.ranked.clear();
  for (auto& [key, c] : s.best)
    result.ranked.push_back(std::move(c));
  if (s.least)
    result.least_peak = std::move(s.least->second);
  result.replayed = s.count;
  if (!s.ledger)
    return;
  auto& l = *s.ledger;
  l.by_rank.resize(l.keys.size());
  std::iota(l.by_rank.begin(), l.by_rank.end(), 0u);
  std::sort(l.by_rank.begin(), l.by_rank.end(),
            [&](std::uint32_t a, std::uint32_t b) { return s.better(l.keys[a], l.keys[b]); });
  if (s.request.keep_points) {
    std::vector<DrawnPoint> all = std::move(s.sample);
    for (auto* more : {&s.front, &s.extremes})
      all.insert(all.end(), std::make_move_iterator(more->begin()),
                 std::make_move_iterator(more->end()));
    for (std::size_t i = 0; i < s.best.size(); ++i)
      all.push_back(s.point(result.ranked[i], s.best[i].first));
    std::sort(all.begin(), all.end(),
              [&](const DrawnPoint& a, const DrawnPoint& b) { return s.better(a.key, b.key); });
    for (auto& p : all) {
      if (!l.drawn.empty() && l.drawn.back().second.key.order == p.key.order)
        continue;
      const auto at = std::lower_bound(
          l.by_rank.begin(), l.by_rank.end(), p.key,
          [&](std::uint32_t order, const RankKey& key) { return s.better(l.keys[order], key); });
      l.drawn.emplace_back(std::size_t(at - l.by_rank.begin()) + 1, std::move(p));
    }
  }
  result.ledger = s.ledger;
}

std::int64_t replayed_peak_max(const PlanCandidate& c) {
  std::int64_t peak = 0;
  for (const auto& ipu : c.report->replay.ipus)
    peak = std::max(peak, ipu.peak_memory_bytes);
  return peak;
}

// Replays every candidate on `jobs` threads (numerics off, overflow reported, not thrown). A
// candidate whose replay is refused (its time overflows) is dropped and counted invalid.
void replay_all(std::vector<PlanCandidate>& candidates, const PlanRequest& request,
                PlanResult& result) {
  const int jobs = request.jobs;
  std::atomic<std::size_t> next{0};
  std::mutex progress_mutex;
  std::size_t done = 0;
  std::vector<std::exception_ptr> failures(candidates.size());
  std::vector<char> refused(candidates.size(), 0);
  std::vector<std::string> reasons(candidates.size());
  auto work = [&] {
    for (std::size_t i = next++; i < candidates.size(); i = next++) {
      try {
        SimulateOptions options;
        options.allow_oom = true;
        options.numeric = NumericMode::kOff;
        candidates[i].report = simulate(candidates[i].spec, options);
      } catch (const core::ConfigError& error) {
        refused[i] = 1;
        reasons[i] = error.what();
      } catch (...) {
        failures[i] = std::current_exception();
      }
      if (request.progress) {
        const std::lock_guard lock(progress_mutex);
        request.progress(++done, candidates.size(), "replays");
      }
    }
  };
  std::vector<std::thread> threads;
  const int count = std::max(1, std::min(jobs, int(candidates.size())));
  for (int t = 1; t < count; ++t)
    threads.emplace_back(work);
  work();
  for (auto& thread : threads)
    thread.join();
  for (const auto& failure : failures) {
    if (failure)
      std::rethrow_exception(failure);
  }
  std::vector<PlanCandidate> kept;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!refused[i]) {
      kept.push_back(std::move(candidates[i]));
      continue;
    }
    ++result.invalid;
    if (result.refused_replays++ == 0)
      result.replay_refusal = reasons[i];
  }
  candidates = std::move(kept);
}

// Fitting candidates first; then by the objective, the other figure breaking ties; equal
// candidates keep the search's order, so the result does not depend on --jobs.
void rank(std::vector<PlanCandidate>& candidates, PlanObjective objective) {
  std::stable_sort(candidates.begin(), candidates.end(), [objective](const auto& a, const auto& b) {
    if (a.report->figures.fits_in_memory != b.report->figures.fits_in_memory)
      return a.report->figures.fits_in_memory;
    const double ta = a.report->figures.throughput;
    const double tb = b.report->figures.throughput;
    const auto pa = replayed_peak_max(a);
    const auto pb = replayed_peak_max(b);
    if (objective == PlanObjective::kMemory)
      return pa != pb ? pa < pb : ta > tb;
    return ta != tb ? ta > tb : pa < pb;
  });
}

RankKey rank_key(const PlanCandidate& replayed, std::size_t order) {
  IPUSIM_CHECK(order <= std::numeric_limits<std::uint32_t>::max());
  return {replayed.report->figures.throughput, replayed_peak_max(replayed), std::uint32_t(order),
          replayed.report->figures.fits_in_memory};
}

// rank()'s order, the search's order breaking the last ties.
bool ranks_before(const RankKey& a, const RankKey& b, PlanObjective objective) {
  if (a.fits != b.fits)
    return a.fits;
  if (objective == PlanObjective::kMemory) {
    if (a.peak_bytes != b.peak_bytes)
      return a.peak_bytes < b.peak_bytes;
    if (a.throughput != b.throughput)
      return a.throughput > b.throughput;
  } else {
    if (a.throughput != b.throughput)
      return a.throughput > b.throughput;
    if (a.peak_bytes != b.peak_bytes)
      return a.peak_bytes < b.peak_bytes;
  }
  return a.order < b.order;
}

}  // namespace plan_detail

using namespace plan_detail;

void write_plan_csv(const PlanResult& result, const std::function<void(std::string_view)>& put) {
  const auto* ledger = result.ledger && result.ledger->scratch ? result.ledger.get() : nullptr;
  std::size_t ipus = ledger ? ledger->ipus : 0;
  if (!ledger)
    for (const auto& c : result.ranked)
      ipus = std::max(ipus, c.report->replay.ipus.size());
  auto columns = plan_csv_columns();
  const auto ipu_columns = per_ipu_columns(ipus);
  columns.insert(columns.end(), ipu_columns.begin(), ipu_columns.end());
  put(csv_line(columns));
  if (!ledger) {
    for (std::size_t i = 0; i < result.ranked.size(); ++i)
      put(line_of(i + 1, row_text(result.ranked[i]), ipus));
    return;
  }
  std::fflush(ledger->scratch.get());
  const int fd = fileno(ledger->scratch.get());
  RowText row;
  for (std::size_t rank = 0; rank < ledger->by_rank.size(); ++rank) {
    const auto& at = ledger->rows[ledger->by_rank[rank]];
    row.head.resize(at.head_bytes);
    row.tail.resize(at.tail_bytes);
    row.ipus = at.ipus;
    if (::pread(fd, row.head.data(), at.head_bytes, off_t(at.offset)) != ssize_t(at.head_bytes) ||
        ::pread(fd, row.tail.data(), at.tail_bytes, off_t(at.offset + at.head_bytes)) !=
            ssize_t(at.tail_bytes))
      scratch_failed("read");
    put(line_of(rank + 1, row, ipus));
  }
}

std::string plan_csv(const PlanResult& result) {
  std::string out;
  write_plan_csv(result, [&](std::string_view piece) { out += piece; });
  return out;
}

const std::vector<std::string>& plan_csv_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> out = {"rank",
                                    "splits",
                                    "ipus_per_replica",
                                    "replicas",
                                    "device_mapping",
                                    "ipus",
                                    "schedule",
                                    "gradient_accumulation_count",
                                    "micro_batch_size",
                                    "recomputation_mode",
                                    "offload",
                                    "estimated_bottleneck_cycles",
                                    "estimated_bottleneck_ipu",
                                    "estimated_peak_bytes_max"};
    for (const auto& column : metric_columns())
      out.push_back(column);
    return out;
  }();
  return columns;
}

}  // namespace ipusim::sim
