#include "sim/report/operations_report.hpp"

#include <algorithm>
#include <map>

#include "sim/core/format.hpp"

namespace ipusim::sim {
namespace {

std::vector<std::string> row(const OperationCost& op, const OperationFigures& figures,
                             bool planned) {
  std::vector<std::string> cells = {
      op.layer,
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
  if (planned)
    cells.push_back(op.plan.empty() ? "-" : op.plan);
  return cells;
}

// Under planned pricing the table adds what was planned: a product's vertex and its split of
// conv groups, positions, input and output channels over tiles; a vector operation's compute
// sets forward and backward.
std::string substage_table(const SubstageCost& sub, const std::vector<OperationFigures>& figures) {
  const bool planned = std::any_of(sub.operations.begin(), sub.operations.end(),
                                   [](const OperationCost& op) { return !op.plan.empty(); });
  std::vector<std::vector<std::string>> rows = {{"Layer", "Operation", "Class", "Forward",
                                                 "Backward", "Recompute", "FLOPs", "Achieved",
                                                 "Tiles", "Bound fwd/bwd", "Code"}};
  if (planned)
    rows.front().push_back("Plan (g/f/i/o)");
  std::int64_t recompute = 0;
  std::int64_t code = 0;
  for (std::size_t k = 0; k < sub.operations.size(); ++k) {
    const auto& op = sub.operations[k];
    rows.push_back(row(op, figures[k], planned));
    recompute += op.recompute_cycles;
    code += op.code_bytes;
  }
  rows.push_back({"Total", "", "", with_commas(sub.forward_cycles),
                  with_commas(sub.backward_cycles), with_commas(recompute), "", "", "", "",
                  si(double(code), "B")});
  std::vector<bool> right = {false, false, false, true, true, true, true, true, true, false, true};
  if (planned) {
    rows.back().push_back("");
    right.push_back(false);
  }
  return render_table(rows, right);
}

// A pass's cycles of `op` in a stage: its forward, backward and recomputation.
std::int64_t operation_cycles(const OperationCost& op) {
  return op.forward.cycles + op.backward.cycles + op.recompute_cycles;
}

// The operations of a sub-stage by name (ffn2 of every encoder together), with their cycles.
struct OperationGroup {
  std::vector<const OperationCost*> members;
  std::int64_t cycles = 0;
};

std::string group_text(const OperationGroup& group) {
  const OperationCost& first = *group.members.front();
  const std::string what = group.members.size() == 1
                               ? first.layer + " " + first.name
                               : first.name + " of " + std::to_string(group.members.size()) +
                                     " layers (" + first.layer + ", ...)";
  return what + " (" + operation_class_name(first) + ", " + operation_bounds(first) + " bound)";
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
        if (!op.plan.empty())
          rows.back()["plan"] = op.plan;
      }
    }
  }
  return rows;
}

std::string bounding_operations(const CostModel& cost) {
  std::string out =
      "what bounds each stage of the best (its heaviest operation, share of its "
      "operations' cycles per micro-batch):\n";
  for (std::size_t s = 0; s < cost.stages.size(); ++s) {
    for (const auto& sub : cost.stages[s]) {
      std::map<std::string, OperationGroup> groups;
      std::int64_t total = 0;
      for (const auto& op : sub.operations) {
        auto& group = groups[op.name + "/" + operation_class_name(op)];
        group.members.push_back(&op);
        group.cycles += operation_cycles(op);
        total += operation_cycles(op);
      }
      const auto heaviest = std::max_element(
          groups.begin(), groups.end(),
          [](const auto& a, const auto& b) { return a.second.cycles < b.second.cycles; });
      if (heaviest == groups.end() || total <= 0)
        continue;
      out += "  stage " + std::to_string(s) + " on IPU" + std::to_string(sub.ipu) + ": " +
             group_text(heaviest->second) + ", " +
             percent(double(heaviest->second.cycles) / double(total)) + "\n";
    }
  }
  return out;
}

}  // namespace ipusim::sim
