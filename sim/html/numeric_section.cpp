#include <cstdio>

#include "sim/html/html_report.hpp"
#include "sim/html/page.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim {
namespace {

using html::header_row;
using svg::escape;

// Six significant digits: 2.35802, 0, 1e-07.
std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

// Losses by weight update then micro-batch: "10 × 16 values", the width the first update's.
std::string matrix_text(const std::vector<std::vector<float>>& values) {
  if (values.empty())
    return "[]";
  return std::to_string(values.size()) + " \u00d7 " + std::to_string(values[0].size()) + " values";
}

// "[2.3, 2.1]", or for more than eight values the first three, the last and the count.
std::string list_text(const std::vector<double>& values) {
  std::string text;
  if (values.size() > 8) {
    for (std::size_t i = 0; i < 3; ++i)
      text += number_text(values[i]) + ", ";
    return "[" + text + "\u2026, " + number_text(values.back()) + "] (" +
           std::to_string(values.size()) + " values)";
  }
  for (const double value : values)
    text += (text.empty() ? "" : ", ") + number_text(value);
  return "[" + text + "]";
}

std::string row(const std::string& check, const std::string& value_html) {
  return "<tr><td>" + escape(check) + "</td><td>" + value_html + "</td></tr>\n";
}

// The mean loss against the weight update, when there are at least two updates to join.
std::string mean_loss_chart(const std::vector<double>& means) {
  if (means.size() < 2)
    return "";
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < means.size(); ++i)
    points.push_back({double(i + 1), means[i]});
  return "<div>" +
         svg::line_chart({"numeric-mean_loss_per_update",
                          "Mean loss per weight update",
                          std::string(schedules::to_string(schedules::Op::kWeightUpdate)),
                          "mean loss (nats)",
                          {},
                          false,
                          {{"mean_loss_per_update", points, {}}},
                          "",
                          0,
                          ""}) +
         "</div>";
}

}  // namespace

std::string numeric_section(const std::optional<NumericReport>& numeric) {
  if (!numeric)
    return "";
  const NumericReport& n = *numeric;
  const std::vector<double> means = n.mean_loss_per_update();
  // Rows named as the JSON report names the fields, in alphabetical order as it lists them.
  std::string table = "<div class=\"table-wrap\"><table>" + header_row({"Check", "Value"});
  table += row("bit_identical",
               n.bit_identical ? "<span class=\"ok\">yes</span>" : "<span class=\"bad\">no</span>");
  table += row("data", escape(n.data));
  table += row("losses", escape(matrix_text(n.losses)));
  table += row("max_abs_diff_loss", escape(number_text(n.max_abs_diff_loss)));
  table += row("max_abs_diff_weights", escape(number_text(n.max_abs_diff_weights)));
  table += row("mean_loss_per_update", escape(list_text(means)));
  table += row("reference_losses", escape(matrix_text(n.reference_losses)));
  table += "</table></div>\n";
  const std::string chart = mean_loss_chart(means);
  if (!chart.empty())
    table += "<div class=\"grid2\">" + chart + "</div>\n";
  return html::section("numeric", "Numeric check against the unpipelined reference", table);
}

}  // namespace ipusim::sim
