#include "sim/core/format.hpp"
#include "sim/html/html_report.hpp"
#include "sim/html/page.hpp"
#include "sim/html/svg.hpp"
#include "sim/report/operations_report.hpp"

namespace ipusim::sim {
namespace {

using html::bar_cell;
using html::cell;
using html::header_row;

std::string operation_row(const OperationCost& op, std::int64_t stage_cycles, double clock_hz) {
  const auto cycles = op.forward.cycles + op.backward.cycles;
  const double flops = op.forward_flops + op.backward_flops;
  const double achieved = cycles > 0 ? flops / (double(cycles) / clock_hz) : 0;
  return "<tr>" + cell(op.layer, true) + cell(op.name, true) +
         cell(operation_class_name(op), true) + cell(with_commas(op.forward.cycles)) +
         cell(with_commas(op.backward.cycles)) + cell(with_commas(op.recompute_cycles)) +
         bar_cell(html::share(double(cycles), double(stage_cycles))) +
         cell(flops > 0 ? si(flops, "FLOP") : "") +
         cell(achieved > 0 ? si(achieved, "FLOP/s") : "") +
         cell(op.op_class ? std::to_string(op.forward.tiles) : "") +
         cell(operation_bounds(op), true) + cell(si(double(op.code_bytes), "B")) + "</tr>\n";
}

// One collapsible table per sub-stage, its summary line giving the totals.
std::string substage_details(std::size_t stage, const SubstageCost& sub, double clock_hz) {
  const auto cycles = sub.forward_cycles + sub.backward_cycles;
  std::string out =
      "<details><summary>Stage " + std::to_string(stage) + " on IPU" + std::to_string(sub.ipu) +
      ": " + std::to_string(sub.operations.size()) + " operations, forward " +
      with_commas(sub.forward_cycles) + " cycles, backward " + with_commas(sub.backward_cycles) +
      " cycles</summary>\n<div class=\"table-wrap\"><table>" +
      header_row({"Layer", "Operation", "Class", "Forward (cycles)", "Backward (cycles)",
                  "Recompute (cycles)", "Share of stage (F+B)", "FLOPs", "Achieved FLOP rate",
                  "Tiles", "Bound fwd / bwd", "Code size"},
                 {true, true, true, false, false, false, false, false, false, false, true});
  for (const auto& op : sub.operations)
    out += operation_row(op, cycles, clock_hz);
  return out + "</table></div></details>\n";
}

}  // namespace

std::string operations_section(const RunReport& report) {
  const double clock = report.spec->hardware.clock_hz;
  std::string body =
      "<p class=\"note\">Cycles per micro-batch of " +
      std::to_string(report.spec->pipeline.micro_batch_size) +
      ". Each layer's operations as Poplar runs them; a stage's rows sum to the cycles its "
      "tasks take. Bound: what takes most of each pass's cycles.</p>\n";
  for (std::size_t s = 0; s < report.cost->stages.size(); ++s) {
    for (const auto& sub : report.cost->stages[s])
      body += substage_details(s, sub, clock);
  }
  return html::section("operations", "Operations Summary", body);
}

}  // namespace ipusim::sim
