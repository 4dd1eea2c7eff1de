// `ipusim plan --html`: the replayed candidates as throughput against peak memory, the region
// over the IPU's capacity shaded, the Pareto front of what fits drawn through its points, and
// the ranked table under it.

#include "sim/core/format.hpp"
#include "sim/html/html_report.hpp"
#include "sim/html/page.hpp"
#include "sim/html/pareto_chart.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim {
namespace {

using svg::escape;
using svg::num;

std::string chart(const PlanPlot& plot) {
  html::ParetoChart pareto{
      "plan-pareto", "Throughput against peak memory", plot.capacity_bytes, {}, false};
  for (const auto& p : plot.points)
    pareto.points.push_back({p.label, "", p.throughput, p.peak_bytes, p.fits, p.rank == 1});
  std::string overflowing;
  for (const auto& p : plot.points) {
    if (!p.fits && plot.capacity_bytes > 0)
      overflowing += html::overflow_item(p.label, "IPU" + std::to_string(p.fullest_ipu),
                                         p.peak_bytes, plot.capacity_bytes);
  }
  return html::pareto_chart(pareto) + html::overflow_list(overflowing);
}

// Every column not right-aligned is text, its header left-aligned over its values.
std::vector<bool> text_columns(const PlanPlot& plot) {
  std::vector<bool> text;
  for (std::size_t c = 0; c < plot.table[0].size(); ++c)
    text.push_back(c >= plot.right_aligned.size() || !plot.right_aligned[c]);
  return text;
}

std::string table(const PlanPlot& plot) {
  if (plot.table.empty())
    return "";
  std::string out =
      "<div class=\"table-wrap\"><table>" + html::header_row(plot.table[0], text_columns(plot));
  for (std::size_t r = 1; r < plot.table.size(); ++r) {
    out += "<tr>";
    for (std::size_t c = 0; c < plot.table[r].size(); ++c)
      out += html::cell(plot.table[r][c], c >= plot.right_aligned.size() || !plot.right_aligned[c]);
    out += "</tr>\n";
  }
  return out + "</table></div>\n";
}

// A large plan draws some of its candidates, and says which.
std::string drawn_text(const PlanPlot& plot) {
  if (!plot.drawn_note.empty())
    return escape(plot.drawn_note);
  return "Every replayed candidate: " + num(double(plot.points.size()), 0) + ".";
}

std::string over_capacity_note(const PlanPlot& plot) {
  if (plot.over_capacity == 0)
    return "";
  return " " + with_commas(std::int64_t(plot.over_capacity)) +
         " more were over capacity by the estimate and not replayed (see <a "
         "href=\"#plan-over-capacity\">below</a>).";
}

// The candidates the estimate put over the capacity: never replayed, so absent from the chart
// and the table; counted here with the nearest to fitting named, so that a reader sees the
// search tried them.
std::string over_capacity_section(const PlanPlot& plot) {
  if (plot.over_capacity == 0)
    return "";
  const auto& nearest = plot.nearest_over_capacity;
  std::string out = "<p>" + with_commas(std::int64_t(plot.over_capacity)) + " of the " +
                    with_commas(std::int64_t(plot.evaluated)) +
                    " candidates evaluated on the cost model were over capacity by the "
                    "estimate, so they were not replayed and are in neither the chart nor the "
                    "table.";
  if (nearest.empty())
    return html::section("plan-over-capacity", "Over capacity by the estimate", out + "</p>\n");
  out += (nearest.size() < plot.over_capacity
              ? " The " + std::to_string(nearest.size()) + " nearest to fitting:"
              : " They are:") +
         std::string("</p>\n");
  std::string rows = html::header_row(
      {"Split and setting", "Fullest IPU", "Estimated peak", "Over capacity by (bytes)"},
      {true, true, false, false});
  for (const auto& c : nearest) {
    rows += "<tr>" + html::cell(c.label, true) +
            html::cell("IPU" + std::to_string(c.fullest_ipu), true) +
            html::cell(memory_figure(double(c.estimated_peak_bytes)) + " of " +
                       memory_figure(double(plot.capacity_bytes))) +
            html::cell(with_commas(c.estimated_peak_bytes - plot.capacity_bytes)) + "</tr>\n";
  }
  return html::section("plan-over-capacity", "Over capacity by the estimate",
                       out + html::scroll_table(rows));
}

}  // namespace

std::string plan_html(const PlanPlot& plot) {
  std::string body =
      "<header><h1>ipusim plan</h1><p class=\"sub\">" + escape(plot.title) + "</p></header>\n";
  body += html::section("plan-chart", "Throughput against peak memory",
                        "<p>" + drawn_text(plot) + " Hover a point for its setting." +
                            over_capacity_note(plot) + "</p>\n" + chart(plot));
  body += html::section(
      "plan-ranked", "Ranked candidates",
      (plot.drawn_note.empty() ? "" : "<p>The candidates drawn above.</p>\n") + table(plot));
  body += over_capacity_section(plot);
  return html::page("ipusim plan", body);
}

}  // namespace ipusim::sim
