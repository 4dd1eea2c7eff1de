// The planner's outputs: the ranked table with why each candidate lost to the one above, the
// answer when nothing fits, the CSV and the chosen config.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "models/layers/layer_types.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/html/html_report.hpp"
#include "sim/report/operations_report.hpp"
#include "sim/report/run_metrics.hpp"
#include "sim/sweep/planner_internal.hpp"
#include "sim/sweep/sweep_csv.hpp"

namespace ipusim::sim {

using plan_detail::counted_header;
using plan_detail::group_splits_line;
using plan_detail::layers_per_ipu;
using plan_detail::row_groups;
namespace {

std::int64_t peak_max(const PlanCandidate& c) {
  return c.report->figures.peak_memory_bytes_max;
}

// How a table writes bytes: the terminal's three figures, or the pages' memory_figure.
using BytesText = std::string (*)(double);

std::string terminal_bytes(double bytes) {
  return si(bytes, "B");
}

std::string memory_cell(const PlanCandidate& c, std::int64_t capacity, BytesText bytes) {
  std::string out;
  for (const auto& ipu : c.report->replay.ipus)
    out += (out.empty() ? "" : " / ") + bytes(double(ipu.peak_memory_bytes));
  const double headroom = 1.0 - double(peak_max(c)) / double(capacity);
  return out + " (" + percent(std::max(0.0, headroom)) + " free)";
}

// The table's columns: IPUs x replicas and offload only when the search varied them.
struct TableLayout {
  bool shape = false;
  bool offload = false;
  bool batch = false;

  explicit TableLayout(const PlanResult& result)
      : shape(result.varies_shape), offload(result.varies_offload), batch(result.varies_batch) {}

  std::vector<std::string> header(const PlanResult& result,
                                  const std::string& first = "Rank") const {
    std::vector<std::string> out = {first, counted_header(*result.ranked.front().spec)};
    if (shape)
      out.push_back("IPUs x replicas");
    for (const char* name : {"Schedule", "GAC", "Micro-batch", "Recomputation"})
      out.emplace_back(name);
    if (batch)
      out.emplace_back("Global batch");
    if (offload)
      out.emplace_back("Offload");
    for (const char* name : {"Samples/s", "Step ms", "Peak memory per IPU", "Fits"})
      out.emplace_back(name);
    return out;
  }

  std::vector<bool> right_aligned() const {
    std::vector<bool> out = {false, false};
    if (shape)
      out.push_back(false);
    for (bool right : {false, true, true, false})
      out.push_back(right);
    if (batch)
      out.push_back(true);
    if (offload)
      out.push_back(false);
    for (bool right : {true, true, false, false})
      out.push_back(right);
    return out;
  }

  std::vector<std::string> row(const std::string& first, const PlanCandidate& c,
                               std::int64_t capacity, BytesText bytes = terminal_bytes) const {
    const auto& r = *c.report;
    std::vector<std::string> out = {first, layers_per_ipu(c)};
    if (shape)
      out.push_back(std::to_string(c.ipus_per_replica) + " x " + std::to_string(c.replicas));
    for (auto cell :
         {c.schedule, std::to_string(c.gac), std::to_string(c.micro_batch), c.recomputation})
      out.push_back(std::move(cell));
    if (batch)
      out.push_back(with_commas(c.gac * c.micro_batch * std::int64_t(c.replicas)));
    if (offload)
      out.push_back(c.offload);
    for (auto cell : {with_commas(std::int64_t(r.figures.throughput + 0.5)),
                      fixed(r.figures.step_seconds * 1000, 4), memory_cell(c, capacity, bytes),
                      std::string(r.figures.fits_in_memory ? "yes" : "NO")})
      out.push_back(std::move(cell));
    return out;
  }
};

// "+8.0%", or "+0.0020%" for a difference too small for one decimal.
std::string relative(double worse, double better) {
  const double change = worse / better - 1.0;
  const int decimals = std::abs(change) >= 0.001 ? 1 : 4;
  return (change >= 0 ? "+" : "-") + fixed(std::abs(change) * 100, decimals) + "%";
}

// What differs between two candidates' settings, in the loser's terms.
std::vector<std::string> setting_differences(const PlanCandidate& winner,
                                             const PlanCandidate& loser) {
  std::vector<std::string> reasons;
  if (loser.ipus_per_replica != winner.ipus_per_replica || loser.replicas != winner.replicas)
    reasons.push_back(std::to_string(loser.ipus_per_replica) + " IPUs x " +
                      std::to_string(loser.replicas) + " replicas vs " +
                      std::to_string(winner.ipus_per_replica) + " x " +
                      std::to_string(winner.replicas));
  if (loser.schedule != winner.schedule)
    reasons.push_back("schedule " + loser.schedule + ", bubble " +
                      percent(loser.report->figures.bubble_fraction) + " vs " +
                      percent(winner.report->figures.bubble_fraction));
  if (loser.gac != winner.gac)
    reasons.push_back("GAC " + std::to_string(loser.gac) + " vs " + std::to_string(winner.gac));
  if (loser.micro_batch != winner.micro_batch)
    reasons.push_back("micro-batch " + std::to_string(loser.micro_batch) + " vs " +
                      std::to_string(winner.micro_batch));
  if (loser.recomputation != winner.recomputation)
    reasons.push_back("recomputation " + loser.recomputation);
  if (loser.offload != winner.offload)
    reasons.push_back("offload " + loser.offload);
  return reasons;
}

// How the loser's split does worse on time: a busier bottleneck IPU, or with the same
// settings a longer step for what the bound does not see.
std::string split_difference(const PlanCandidate& winner, const PlanCandidate& loser,
                             bool same_setting) {
  if (loser.splits == winner.splits)
    return "";
  if (loser.bottleneck_cycles > winner.bottleneck_cycles)
    return "bottleneck IPU" + std::to_string(loser.bottleneck_ipu) + " " +
           relative(double(loser.bottleneck_cycles), double(winner.bottleneck_cycles)) +
           " cycles per micro-batch";
  const auto longer = loser.report->replay.step_cycles - winner.report->replay.step_cycles;
  if (same_setting && longer > 0)
    return "bottleneck no higher, yet the step is " + with_commas(longer) +
           " cycles longer (copies, syncs, ramps)";
  return "split " + nlohmann::json(loser.splits).dump();
}

// Why `loser` ranks below `winner`, in a few words: what differs, then the figure that ranks.
std::string why_lost(const PlanCandidate& winner, const PlanCandidate& loser,
                     const PlanResult& result) {
  if (!loser.report->figures.fits_in_memory)
    return "does not fit: peak memory " +
           percent(double(peak_max(loser)) / double(result.capacity_bytes)) + " of capacity";
  auto reasons = setting_differences(winner, loser);
  const bool by_memory = result.objective == PlanObjective::kMemory;
  const auto split =
      by_memory ? (loser.splits == winner.splits ? std::string()
                                                 : "split " + nlohmann::json(loser.splits).dump())
                : split_difference(winner, loser, reasons.empty());
  if (!split.empty())
    reasons.push_back(split);
  const double tw = winner.report->figures.throughput;
  const double tl = loser.report->figures.throughput;
  const int ipu = loser.report->figures.fullest_ipu;
  const auto peak = peak_max(loser);
  const std::string memory = "peak memory " + relative(double(peak), double(peak_max(winner))) +
                             " (" + percent(double(peak) / double(result.capacity_bytes)) +
                             " of capacity on IPU" + std::to_string(ipu) + ")";
  if (by_memory && peak != peak_max(winner))
    reasons.push_back(memory);
  else if (tl != tw)
    reasons.push_back("throughput " + relative(tl, tw));
  else if (peak != peak_max(winner))
    reasons.push_back("same throughput, " + memory);
  else
    reasons.push_back("a tie on throughput and peak memory, kept in the search's order");
  std::string out;
  for (const auto& reason : reasons)
    out += (out.empty() ? "" : "; ") + reason;
  return out;
}

// How the settings with too many splits to price were searched.
std::string coarse_text(const PlanResult& result) {
  if (result.coarse_settings == 0)
    return "";
  const std::string every =
      result.coarse_step == 2 ? std::string("second") : std::to_string(result.coarse_step) + "th";
  return with_commas(std::int64_t(result.coarse_settings)) + " setting(s) had more than " +
         with_commas(plan_detail::kMaxSplits) + " splits: searched with cuts on every " + every +
         " layer boundary (or nearer), then their best " +
         std::to_string(plan_detail::kRefinedSeeds) + " splits improved one cut at a time\n";
}

std::string counts(const PlanResult& result) {
  const std::string shard = result.shard.count > 1
                                ? "shard " + std::to_string(result.shard.index) + "/" +
                                      std::to_string(result.shard.count) + " (" +
                                      with_commas(std::int64_t(result.settings)) + " setting(s)): "
                                : "";
  if (result.merged_files > 0)
    return "merged " + std::to_string(result.merged_files) +
           " shard file(s): " + with_commas(std::int64_t(result.merged_rows)) +
           " replayed candidate(s) ranked on their figures, " +
           with_commas(std::int64_t(result.ranked.size())) + " replayed again\n";
  const std::string shapes = result.default_shapes
                                 ? "the config has one stage, so 1, 2, 4 and 8 IPUs per replica "
                                   "were searched (--ipus-per-replica to choose)\n"
                                 : "";
  return shapes + shard + with_commas(std::int64_t(result.evaluated)) +
         " candidate(s) evaluated on the cost model (" +
         with_commas(std::int64_t(result.over_capacity)) + " over capacity by the estimate, " +
         with_commas(std::int64_t(result.invalid)) + " refused by validation), " +
         with_commas(std::int64_t(result.replayed)) + " replayed\n" + coarse_text(result);
}

// What offloading the search did not try would lower the peak, as --offload values.
std::vector<std::string> offload_advice(const PipelineSpec& p, const PlanResult& result) {
  const auto& tried = result.searched.offloads;
  if (tried.empty()) {
    std::vector<std::string> help;
    if (!p.offload_weight_update_variables)
      help.push_back("--set pipeline.offload_weight_update_variables=true");
    if (!p.offload_activations)
      help.push_back("--set pipeline.offload_activations=true");
    return help;
  }
  if (std::find(tried.begin(), tried.end(), "both") != tried.end())
    return {};
  return {"offloading both (--offload both)"};
}

// What would lower the peak, leaving out what the winner already does and what the search
// tried (the values of its lists, which override the same --set).
std::string advice(const PlanCandidate& c, const PlanResult& result) {
  const auto& p = c.spec->pipeline;
  const auto& searched = result.searched;
  std::vector<std::string> help;
  if (searched.most_ipus_per_replica < 2 * p.ipus_per_replica())
    help.push_back("more IPUs per replica (--ipus-per-replica " +
                   std::to_string(2 * p.ipus_per_replica()) + ")");
  if (p.recomputation == schedules::RecomputationMode::kNone && !searched.recomputation)
    help.push_back("recomputation (--recomputation auto)");
  for (auto& h : offload_advice(p, result))
    help.push_back(std::move(h));
  const auto smaller = std::max<std::int64_t>(1, p.micro_batch_size / 2);
  const bool smaller_searched =
      searched.least_micro_batch > 0 && searched.least_micro_batch <= smaller;
  if (p.micro_batch_size > 1 && !smaller_searched)
    help.push_back("a smaller micro-batch (--micro-batch " + std::to_string(smaller) + ")");
  std::string out;
  for (const auto& h : help)
    out += (out.empty() ? "" : ", ") + h;
  return out;
}

[[noreturn]] void throw_nothing_fits(const PlanResult& result) {
  // A merged plan has no least_peak: its ranked are all it replayed.
  const PlanCandidate* least = result.least_peak ? &*result.least_peak : nullptr;
  if (!least && !result.ranked.empty())
    least =
        &*std::min_element(result.ranked.begin(), result.ranked.end(),
                           [](const auto& a, const auto& b) { return peak_max(a) < peak_max(b); });
  // Memory was not the cause when no candidate could be replayed at all: name what was.
  if (least == nullptr && result.refused_replays > 0)
    throw core::ConfigError("", "",
                            "no candidate could be replayed: " + counts(result) + "each of the " +
                                with_commas(std::int64_t(result.refused_replays)) +
                                " refused at its replay, the first so: " + result.replay_refusal);
  std::string text = "no candidate fits in memory: " + counts(result);
  if (least == nullptr)
    throw core::SimulationOutcome(text + "no candidate could be replayed");
  const auto& worst = least->report->replay.out_of_memory->ipus.front();
  text += "the smallest peak found: IPU" + std::to_string(worst.ipu) + " needs " +
          si(double(worst.bytes), "B") + " of its " + si(double(result.capacity_bytes), "B") +
          " with " + least->key() + ". Largest consumers there:";
  for (const auto& item : worst.largest)
    text += "\n  " + si(double(item.bytes), "B") + "  " + item.name;
  const auto help = advice(*least, result);
  text += "\nWhat would help: " + (help.empty() ? "nothing plan did not already try" : help);
  throw core::SimulationOutcome(text);
}

// "skipped: LABEL: WHY" per setting; settings refused for the same reason share one line.
std::string skipped_lines(const PlanResult& result) {
  std::string out;
  for (const auto& group : result.skipped) {
    out += "skipped: " + group.first_label;
    if (group.count > 1)
      out += " and " + std::to_string(group.count - 1) + " other setting(s) for the same reason";
    out += ": " + group.why + "\n";
  }
  if (result.skipped_for_other_reasons > 0) {
    out += "skipped: " + with_commas(std::int64_t(result.skipped_for_other_reasons)) +
           " other setting(s) for reasons past the first " +
           std::to_string(PlanResult::kMaxSkipReasons) + " listed\n";
  }
  return out;
}

// The rank column of the config's own row.
constexpr const char* kBaselineRank = "config";

// The settings skipped for their GAC, at the nearest GAC values their schedule accepts.
std::string nearest_legal_gac_table(const PlanResult& result) {
  if (result.nearest_legal_gac.empty())
    return "";
  const TableLayout layout(result);
  std::vector<std::vector<std::string>> rows = {layout.header(result, "Instead of")};
  if (result.baseline)
    rows.push_back(layout.row(kBaselineRank, *result.baseline, result.capacity_bytes));
  for (const auto& c : result.nearest_legal_gac)
    rows.push_back(layout.row("GAC " + std::to_string(c.instead_of_gac), c, result.capacity_bytes));
  std::string out =
      "at the nearest GAC values their schedule accepts (the best split of each, replayed; "
      "not ranked above, plan at one with --gac):\n";
  return out + render_table(rows, layout.right_aligned());
}

// How the best compares with the config as it stands.
std::string baseline_line(const PlanResult& result) {
  if (!result.baseline)
    return "";
  const auto& own = *result.baseline->report;
  const std::string intro = "config: the config as it stands, its split and setting";
  if (!own.figures.fits_in_memory)
    return intro + ", does not fit: peak memory " +
           percent(double(peak_max(*result.baseline)) / double(result.capacity_bytes)) +
           " of capacity\n";
  const auto& best = *result.best().report;
  const double peak_change =
      double(peak_max(result.best())) / double(peak_max(*result.baseline)) - 1.0;
  return intro + "; the best runs " + fixed(best.figures.throughput / own.figures.throughput, 2) +
         "x its throughput with " + percent(std::abs(peak_change)) +
         (peak_change > 0 ? " more" : " less") + " peak memory\n";
}

}  // namespace

std::string render_plan(const PlanResult& result) {
  if (!result.any_fits())
    throw_nothing_fits(result);
  const std::size_t shown = std::min(result.ranked.size(), std::size_t(std::max(1, result.top)));
  const TableLayout layout(result);
  const auto groups = row_groups(result, shown);
  std::vector<std::vector<std::string>> rows = {layout.header(result)};
  if (result.baseline)
    rows.push_back(layout.row(kBaselineRank, *result.baseline, result.capacity_bytes));
  for (const auto& g : groups) {
    rows.push_back(layout.row(g.rank_text(), result.ranked[g.first], result.capacity_bytes));
    if (g.size() > 1)
      rows.back()[1] += " (" + std::to_string(g.size()) + " splits)";
  }
  std::string out = "ipusim plan: " + result.config_path + ", best by " +
                    (result.objective == PlanObjective::kMemory ? "peak memory" : "throughput") +
                    " (replayed figures)\n";
  out += render_table(rows, layout.right_aligned());
  out += baseline_line(result);
  for (std::size_t k = 0; k < groups.size(); ++k) {
    out += group_splits_line(result, groups[k]);
    if (k > 0)
      out += "why " + groups[k].rank_text() + " lost: " +
             why_lost(result.ranked[groups[k - 1].first], result.ranked[groups[k].first], result) +
             "\n";
  }
  const auto& best = result.best();
  out += "best: " + best.key();
  if (best.instead_of_gac > 0)
    out += " (at the nearest GAC its schedule accepts instead of " +
           std::to_string(best.instead_of_gac) + ", which it rules out; faster than #1)";
  out += "\n" + bounding_operations(*best.report->cost);
  out += counts(result);
  out += skipped_lines(result);
  out += nearest_legal_gac_table(result);
  return out;
}

namespace plan_detail {

std::vector<std::string> html_row(const PlanResult& result, const PlanCandidate& c) {
  return TableLayout(result).row("", c, result.capacity_bytes, memory_figure);
}

}  // namespace plan_detail

namespace {

// The page's points and table rows from the ledger: those it kept, each with its rank.
void draw_ledger(const PlanLedger& ledger, const PlanResult& result, PlanPlot& plot) {
  for (const auto& [rank, p] : ledger.drawn) {
    const std::string first = "#" + std::to_string(rank);
    plot.points.push_back({first + " " + p.label, int(rank), p.key.throughput, p.key.peak_bytes,
                           p.key.fits, p.fullest_ipu});
    plot.table.push_back(p.row);
    plot.table.back()[0] = first;
  }
  if (ledger.drawn.size() < result.replayed)
    plot.drawn_note = with_commas(std::int64_t(ledger.drawn.size())) + " of the " +
                      with_commas(std::int64_t(result.replayed)) +
                      " replayed candidates are drawn: the Pareto front" +
                      (ledger.front_thinned ? " (every other point of it)" : "") + ", the best " +
                      std::to_string(result.ranked.size()) +
                      ", the extremes of each axis and an even sample in the search's order "
                      "(every replayed candidate is in the --csv file).";
}

}  // namespace

std::string render_plan_html(const PlanResult& result) {
  PlanPlot plot;
  plot.title = result.config_path + ", best by " +
               (result.objective == PlanObjective::kMemory ? "peak memory" : "throughput") +
               " (replayed figures)";
  plot.capacity_bytes = result.capacity_bytes;
  const TableLayout layout(result);
  plot.table.push_back(layout.header(result));
  plot.right_aligned = layout.right_aligned();
  if (result.baseline)
    plot.table.push_back(
        layout.row(kBaselineRank, *result.baseline, result.capacity_bytes, memory_figure));
  const bool drawn = result.ledger && !result.ledger->drawn.empty();
  if (drawn)
    draw_ledger(*result.ledger, result, plot);
  for (std::size_t i = 0; !drawn && i < result.ranked.size(); ++i) {
    const auto& c = result.ranked[i];
    const auto& f = c.report->figures;
    plot.points.push_back({"#" + std::to_string(i + 1) + " " + c.key(), int(i + 1), f.throughput,
                           f.peak_memory_bytes_max, f.fits_in_memory, f.fullest_ipu});
    plot.table.push_back(
        layout.row("#" + std::to_string(i + 1), c, result.capacity_bytes, memory_figure));
  }
  plot.evaluated = result.evaluated;
  plot.over_capacity = result.over_capacity;
  for (const auto& c : result.nearest_over_capacity) {
    const auto& peaks = c.estimated_peak_bytes;
    const auto fullest = std::max_element(peaks.begin(), peaks.end());
    plot.nearest_over_capacity.push_back(
        {c.key(), int(fullest - peaks.begin()), fullest == peaks.end() ? 0 : *fullest});
  }
  return sim::plan_html(plot);
}

namespace {

// A relative initial_weights folder names it from the config that set it; written elsewhere,
// the config names the same folder from its own.
void rebase_initial_weights(nlohmann::json& config, const RunSpec& spec,
                            const std::string& output_path) {
  const std::filesystem::path folder = spec.model.initial_weights;
  if (folder.empty() || folder.is_absolute())
    return;
  const std::filesystem::path source = spec.source_of("/model/initial_weights");
  const auto from = std::filesystem::absolute(source).parent_path() / folder;
  const auto to = std::filesystem::absolute(output_path).parent_path();
  config["model"]["initial_weights"] =
      from.lexically_normal().lexically_relative(to.lexically_normal()).generic_string();
}

}  // namespace

nlohmann::json planned_config(const PlanCandidate& candidate, const std::string& output_path) {
  // The merged document: includes already resolved, so it runs from any folder.
  nlohmann::json config = candidate.spec->document->json();
  config.erase("include");
  rebase_initial_weights(config, *candidate.spec, output_path);
  config["description"] =
      "planned by ipusim plan from " + candidate.spec->config_path + ": " + candidate.key();
  return config;
}

}  // namespace ipusim::sim
