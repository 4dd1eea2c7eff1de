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

std::string operation_row(const OperationCost& op, const OperationFigures& figures) {
  const double flops = figures.flops;
  const double achieved = figures.achieved_flops_per_second;
  return "<tr>" + cell(op.layer, true) + cell(op.name, true) +
         cell(operation_class_name(op), true) + cell(with_commas(op.forward.cycles)) +
         cell(with_commas(op.backward.cycles)) + cell(with_commas(op.recompute_cycles)) +
         bar_cell(figures.share_of_substage) + cell(flops > 0 ? si(flops, "FLOP") : "") +
         cell(achieved > 0 ? si(achieved, "FLOP/s") : "") +
         cell(op.op_class ? std::to_string(op.forward.tiles) : "") +
         cell(operation_bounds(op), true) + cell(si(double(op.code_bytes), "B")) + "</tr>\n";
}

// One collapsible table per sub-stage, its summary line giving the totals.
std::string substage_details(std::size_t stage, const SubstageCost& sub,
                             const std::vector<OperationFigures>& figures) {
  std::string out =
      "<details><summary>Stage " + std::to_string(stage) + " on IPU" + std::to_string(sub.ipu) +
      ": " + std::to_string(sub.operations.size()) + " operations, forward " +
      with_commas(sub.forward_cycles) + " cycles, backward " + with_commas(sub.backward_cycles) +
      " cycles</summary>\n<div class=\"table-wrap\"><table>" +
      header_row({"Layer", "Operation", "Class", "Forward (cycles)", "Backward (cycles)",
                  "Recompute (cycles)", "Share of stage (F+B)", "FLOPs", "Achieved FLOP rate",
                  "Tiles", "Bound fwd / bwd", "Code size"},
                 {true, true, true, false, false, false, false, false, false, false, true});
  for (std::size_t k = 0; k < sub.operations.size(); ++k)
    out += operation_row(sub.operations[k], figures[k]);
  return out + "</table></div></details>\n";
}

}  // namespace

std::string operations_section(const RunReport& report) {
  std::string body =
      "<p class=\"note\">Cycles per micro-batch of " +
      std::to_string(report.spec->pipeline.micro_batch_size) +
      ". Each layer's operations as Poplar runs them; a stage's rows sum to the cycles its "
      "tasks take. Bound: what takes most of each pass's cycles.</p>\n";
  for (std::size_t s = 0; s < report.cost->stages.size(); ++s) {
    for (std::size_t j = 0; j < report.cost->stages[s].size(); ++j)
      body += substage_details(s, report.cost->stages[s][j], report.figures.operations[s][j]);
  }
  return html::section("operations", "Operations Summary", body);
}

}  // namespace ipusim::sim
