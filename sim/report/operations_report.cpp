#include "sim/report/operations_report.hpp"

#include "sim/core/format.hpp"

namespace ipusim::sim {
namespace {

std::vector<std::string> row(const OperationCost& op, const OperationFigures& figures) {
  return {op.layer,
          op.name,
          operation_class_name(op),
          with_commas(op.forward.cycles),
          with_commas(op.backward.cycles),
          with_commas(op.recompute_cycles),
          figures.flops > 0 ? si(figures.flops, "FLOP") : "-",
          figures.flops > 0 ? si(figures.achieved_flops_per_second, "FLOP/s") : "-",
          op.op_class ? std::to_string(op.forward.tiles) : "-",
          operation_bounds(op),
          si(double(op.code_bytes), "B")};
}

std::string substage_table(const SubstageCost& sub, const std::vector<OperationFigures>& figures) {
  std::vector<std::vector<std::string>> rows = {{"Layer", "Operation", "Class", "Forward",
                                                 "Backward", "Recompute", "FLOPs", "Achieved",
                                                 "Tiles", "Bound fwd/bwd", "Code"}};
  std::int64_t recompute = 0;
  std::int64_t code = 0;
  for (std::size_t k = 0; k < sub.operations.size(); ++k) {
    const auto& op = sub.operations[k];
    rows.push_back(row(op, figures[k]));
    recompute += op.recompute_cycles;
    code += op.code_bytes;
  }
  rows.push_back({"Total", "", "", with_commas(sub.forward_cycles),
                  with_commas(sub.backward_cycles), with_commas(recompute), "", "", "", "",
                  si(double(code), "B")});
  return render_table(rows, {false, false, false, true, true, true, true, true, true, false, true});
}

}  // namespace

std::string operation_class_name(const OperationCost& op) {
  return op.op_class ? std::string(models::to_string(*op.op_class)) : "profiled";
}

std::string operation_bounds(const OperationCost& op) {
  if (!op.op_class)
    return "-";
  std::string text(to_string(op.forward.bound));
  if (op.backward.cycles > 0)
    text += "/" + std::string(to_string(op.backward.bound));
  return text;
}

std::string render_operations(const RunReport& report) {
  const auto& cost = *report.cost;
  std::string out = "\nOperations per micro-batch of " +
                    std::to_string(report.spec->pipeline.micro_batch_size) +
                    " (cycles; Bound: what takes the most cycles of each pass)\n";
  for (std::size_t s = 0; s < cost.stages.size(); ++s) {
    for (std::size_t j = 0; j < cost.stages[s].size(); ++j) {
      const auto& sub = cost.stages[s][j];
      out += "Stage " + std::to_string(s) + " on IPU" + std::to_string(sub.ipu) + "\n";
      out += substage_table(sub, report.figures.operations[s][j]);
    }
  }
  return out;
}

nlohmann::json operations_json(const RunReport& report) {
  const auto& cost = *report.cost;
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t s = 0; s < cost.stages.size(); ++s) {
    for (std::size_t j = 0; j < cost.stages[s].size(); ++j) {
      const auto& sub = cost.stages[s][j];
      for (std::size_t k = 0; k < sub.operations.size(); ++k) {
        const auto& op = sub.operations[k];
        rows.push_back({{"stage", s},
                        {"substage", j},
                        {"ipu", sub.ipu},
                        {"layer", op.layer},
                        {"operation", op.name},
                        {"class", operation_class_name(op)},
                        {"forward_cycles", op.forward.cycles},
                        {"backward_cycles", op.backward.cycles},
                        {"recompute_cycles", op.recompute_cycles},
                        {"forward_flops", op.forward_flops},
                        {"backward_flops", op.backward_flops},
                        {"achieved_flops_per_second",
                         report.figures.operations[s][j][k].achieved_flops_per_second},
                        {"tiles", op.forward.tiles},
                        {"forward_bound", op.op_class ? to_string(op.forward.bound) : "profiled"},
                        {"backward_bound", op.op_class ? to_string(op.backward.bound) : "profiled"},
                        {"code_bytes", op.code_bytes}});
      }
    }
  }
  return rows;
}

}  // namespace ipusim::sim
