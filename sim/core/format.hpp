#pragma once
// Small text helpers shared by the terminal reports: thousands separators, SI quantities,
// percentages and left/right aligned table columns.

#include <cstdint>
#include <string>
#include <vector>

namespace ipusim::sim {

std::string with_commas(std::int64_t value);            // 244522 -> "244,522"
std::string si(double value, const std::string& unit);  // 12.8e6, "FLOP" -> "12.8 MFLOP"
// To `figures` significant figures, trailing zeros kept, so that 12,255,690 and 12,300,000
// bytes read "12.26 MB" and "12.30 MB" at 4; below 1,000 a whole number: "512 B".
std::string si_figures(double value, const std::string& unit, int figures);
// A memory figure on the pages and in the plan's page table, to four significant figures
// ("12.26 MB"): they show peaks beside the capacity, and three figures would print a peak of
// 12,255,690 bytes as the 12.3 MB it fits under.
std::string memory_figure(double bytes);
std::string percent(double share);  // 0.4567 -> "45.7%"
std::string fixed(double value, int decimals);

// A plain text table: the first row is the header, columns are padded to their widest cell;
// `right_aligned[i]` right-aligns column i (numbers).
std::string render_table(const std::vector<std::vector<std::string>>& rows,
                         const std::vector<bool>& right_aligned);

}  // namespace ipusim::sim
