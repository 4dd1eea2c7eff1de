#pragma once
// The scaffolding every HTML page of the room shares: the document with its stylesheet,
// sections, table cells with bars, and the few figures more than one page shows.
// Part of sim/html, which may include sim/core, sim/report, sim/replay/timeline and
// schedules; never sim/sweep or tools.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/report/report.hpp"

namespace ipusim::sim::html {

// A whole HTML document: `title` in the <title>, the room's CSS, `body` inside <main>.
std::string page(const std::string& title, const std::string& body);

// A <section> with an <h2>; `title` is escaped, `body` is HTML.
std::string section(const std::string& id, const std::string& title, const std::string& body);

// Cycles of a `clock_hz` clock as milliseconds: "1.2345 ms".
std::string ms(std::int64_t cycles, double clock_hz);

// A table cell with a horizontal bar of `fraction` (0..1) and its percentage.
std::string bar_cell(double fraction, bool warn = false);

// A table cell of escaped text, right-aligned unless `is_text`.
std::string cell(const std::string& text, bool is_text = false);

// A header row; the columns flagged in `text_columns` are left-aligned like their text cells.
std::string header_row(const std::vector<std::string>& names,
                       const std::vector<bool>& text_columns = {});

// A <table> in a wrapper that scrolls sideways on its own, so that a wide table never widens
// the page; its first column stays in view while it scrolls.
std::string scroll_table(const std::string& rows, const std::string& style = "");

// A one-line explanation shown under a figure: what it measures and how it is derived.
std::string explain(const std::string& text);

// One item of a list of what does not fit: "<b>run</b>: IPU0 needs 12.5 MB of its 12.3 MB,
// over by 162,538 bytes (163 kB)".
std::string overflow_item(const std::string& run, const std::string& ipu, std::int64_t peak_bytes,
                          std::int64_t capacity_bytes);
// The list under a chart that draws those runs hollow; "" when there are none.
std::string overflow_list(const std::string& items);

// One line each on how ramp overhead, bubble and utilisation are derived, for the pages that
// show them; without `training`, nothing on a weight update, which inference has none of.
std::string derived_figures_note(bool training = true);

// One line on the phase bands: utilisation phases, and how they differ from the code phases
// `ipusim schedule` prints.
std::string phases_note();

}  // namespace ipusim::sim::html
