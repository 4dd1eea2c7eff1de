#include "sim/html/page.hpp"

#include <algorithm>

#include "sim/core/format.hpp"
#include "sim/html/gantt.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim::html {

using svg::escape;
using svg::num;

namespace {

const char* base_css() {
  return ":root{--fg:#1f2328;--muted:#5b6470;--line:#d8dee4;--panel:#f6f8fa}"
         "*{box-sizing:border-box}"
         "body{margin:0;background:#eef0f3;color:var(--fg);"
         "font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,"
         "sans-serif}"
         "main{max-width:1560px;margin:0 auto;padding:20px 24px 36px}"
         "h1{font-size:22px;margin:0 0 2px}"
         "h2{font-size:16px;margin:0 0 10px}"
         "h3{font-size:13px;margin:0 0 4px;color:var(--muted)}"
         ".sub{color:var(--muted);margin:0 0 4px}"
         "section{background:#fff;border:1px solid var(--line);border-radius:8px;"
         "padding:14px 18px;margin:14px 0}"
         ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(160px,1fr));gap:10px;"
         "margin-top:12px}"
         ".card{background:var(--panel);border-radius:6px;padding:8px 12px}"
         ".card b{display:block;font-size:19px;font-variant-numeric:tabular-nums}"
         ".card span{color:var(--muted);font-size:12px}"
         ".config{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));"
         "gap:2px 24px;margin:0}"
         ".config div{display:flex;gap:8px;border-bottom:1px solid #f0f2f4;padding:3px 0}"
         ".config dt{color:var(--muted);min-width:150px}"
         ".config dd{margin:0;font-weight:500;overflow-wrap:anywhere}"
         ".bar{position:relative;background:#edf0f3;border-radius:3px;height:18px;"
         "min-width:110px}"
         ".bar i{position:absolute;left:0;top:0;bottom:0;background:#6f9bd1;border-radius:3px}"
         ".bar span{position:relative;padding:0 6px;font-size:12px;line-height:18px}"
         ".bar.warn i{background:#e07b7b}"
         "svg{display:block;width:100%;height:auto;font-family:inherit}"
         ".legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px;color:#444;"
         "margin:4px 0 8px}"
         ".legend i{display:inline-block;width:12px;height:12px;border-radius:2px;"
         "margin-right:5px;vertical-align:-2px}"
         ".legend i.band{border:1px solid #c8c8c8}"
         ".legend i.ring{background:#fff;border:2px solid #666;border-radius:50%}"
         ".note{background:#fff8e1;border:1px solid #f0d58c;border-radius:6px;padding:6px 12px;"
         "margin:8px 0}"
         ".note.error{background:#fdecec;border-color:#f1b0b0;white-space:pre-wrap;"
         "font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}"
         ".grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:14px}"
         ".chart{margin:0}"
         ".chart-title{font-size:13px;font-weight:600;fill:#333}"
         ".axis-label{font-size:11px;fill:#555}"
         ".cap{stroke:#c62828;stroke-width:1.5;stroke-dasharray:6 4}"
         ".cap-label{font-size:11px;fill:#c62828}"
         "circle.ring,rect.bar-over{pointer-events:all}"
         ".bar-fill{fill:#4c78a8}.bar-over{fill:none;stroke:#e45756;stroke-width:1.5}"
         "code{font:12px ui-monospace,Menlo,Consolas,monospace;background:var(--panel);"
         "padding:0 3px;border-radius:3px}"
         ".ok{color:#1a7f37;font-weight:600}.bad{color:#c62828;font-weight:600}"
         "footer{color:var(--muted);font-size:12px;text-align:center;margin-top:18px}\n";
}

// Tables (wrapped headers, a wrapper per table that scrolls on its own), the explanation lines
// and the charts beside them.
const char* table_css() {
  return "table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}"
         "th{font-weight:600;color:var(--muted);font-size:12px}"
         "th,td{padding:4px 10px;border-bottom:1px solid #eceff2;text-align:right;"
         "vertical-align:middle}"
         "th{vertical-align:bottom;overflow-wrap:break-word}"
         "th:first-child,td:first-child{text-align:left}"
         "td.text,th.text{text-align:left}"
         // Wide tables scroll inside their own box, never the page; the first column (the
         // row's name) stays put while they do.
         ".table-wrap{overflow-x:auto;max-width:100%}"
         ".table-wrap th:first-child,.table-wrap td:first-child{position:sticky;left:0;"
         "background:#fff;z-index:1;box-shadow:1px 0 0 #eceff2}"
         ".explain{color:var(--muted);font-size:12.5px;margin:4px 0 8px}"
         "ul.explain{padding-left:18px}"
         ".pareto{max-width:760px}"
         ".run-key{font-size:12.5px;margin:4px 0 8px;padding-left:22px;columns:2}";
}

}  // namespace

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         escape(title) + "</title>\n<style>\n" + base_css() + table_css() + gantt_css() +
         "</style>\n</head>\n<body>\n<main>\n" + body +
         "<footer>Generated by ipusim. Times are simulated: cycles of the configured IPU clock."
         "</footer>\n</main>\n</body>\n</html>\n";
}

std::string section(const std::string& id, const std::string& title, const std::string& body) {
  return "<section id=\"" + id + "\"><h2>" + escape(title) + "</h2>\n" + body + "</section>\n";
}

std::string ms(std::int64_t cycles, double clock_hz) {
  return fixed(double(cycles) / clock_hz * 1e3, 4) + " ms";
}

std::string bar_cell(double fraction, bool warn) {
  const double width = std::clamp(fraction, 0.0, 1.0) * 100;
  return std::string("<td><div class=\"bar") + (warn ? " warn" : "") +
         "\"><i style=\"width:" + num(width, 1) + "%\"></i><span>" + percent(fraction) +
         "</span></div></td>";
}

std::string cell(const std::string& text, bool is_text) {
  return std::string(is_text ? "<td class=\"text\">" : "<td>") + escape(text) + "</td>";
}

std::string header_row(const std::vector<std::string>& names,
                       const std::vector<bool>& text_columns) {
  std::string out = "<tr>";
  for (std::size_t i = 0; i < names.size(); ++i) {
    const bool text = i < text_columns.size() && text_columns[i];
    out += std::string(text ? "<th class=\"text\">" : "<th>") + escape(names[i]) + "</th>";
  }
  return out + "</tr>\n";
}

std::string scroll_table(const std::string& rows, const std::string& style) {
  return "<div class=\"table-wrap\"" + (style.empty() ? "" : " style=\"" + style + "\"") +
         "><table>" + rows + "</table></div>\n";
}

std::string explain(const std::string& text) {
  return "<p class=\"explain\">" + escape(text) + "</p>\n";
}

std::string overflow_item(const std::string& run, const std::string& ipu, std::int64_t peak_bytes,
                          std::int64_t capacity_bytes) {
  const std::int64_t over = peak_bytes - capacity_bytes;
  return "<li><b>" + escape(run) + "</b>: " + escape(ipu) + " needs " +
         memory_figure(double(peak_bytes)) + " of its " + memory_figure(double(capacity_bytes)) +
         ", over by " + with_commas(over) + " bytes (" + memory_figure(double(over)) + ")</li>\n";
}

std::string overflow_list(const std::string& items) {
  if (items.empty())
    return "";
  return "<p class=\"note\">These runs do not fit in memory; they are drawn hollow above. "
         "Their speed is what they would reach if they fitted.</p>\n<ul class=\"overflow\">" +
         items + "</ul>\n";
}

std::string derived_figures_note(bool training) {
  return std::string(
             "<ul class=\"explain\">"
             "<li><b>Ramp overhead</b>: the IPU time left idle in ramp-up and ramp-down, while "
             "the pipeline fills and drains, as a share of all the IPUs' step (IPUs x step "
             "cycles), one definition for every schedule; with equal stages, Graphcore's "
             "schedules' bubble; it shrinks as ") +
         (training ? "the gradient accumulation count M" : "the number of micro-batches M") +
         " grows.</li>"
         "<li><b>Bubble</b>: the share of IPU time idle in ramp-up, main and ramp-down "
         "(IPUs x those phases' cycles, less the compute done), the pipeline's own waste" +
         (training ? "; the weight update is left out" : "") +
         ".</li>"
         "<li><b>Utilisation</b>: compute-busy cycles of an IPU over the length of the step or "
         "phase; copies, syncs and host transfers do not count as busy.</li></ul>\n";
}

std::string phases_note() {
  return "<p class=\"explain\">The bands are utilisation phases: ramp-up until the first step "
         "(or time) in which every IPU runs all its work, main while the pipeline is full, "
         "ramp-down after it. <code>ipusim schedule</code> also prints code phases, the program "
         "sections Graphcore compiles (ramp-up, the main Repeat, ramp-down, the first and last S "
         "steps by construction); they can be longer than the utilisation ramps, e.g. 4 code "
         "steps against 3 for tf1 at M = 8.</p>\n";
}

}  // namespace ipusim::sim::html
