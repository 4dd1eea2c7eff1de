#include "sim/report/numeric_report.hpp"

#include <cstdio>

#include "sim/core/format.hpp"

namespace ipusim::sim {

namespace {

// What each micro-batch's loss is a mean over.
std::string loss_heading(const std::string& labels) {
  if (labels == "masked_tokens")
    return "Loss per micro-batch (nats, mean over its masked tokens):\n";
  if (labels == "next_token")
    return "Loss per micro-batch (nats, mean over its tokens):\n";
  return "Loss per micro-batch (nats, mean over its samples):\n";
}

std::string loss_row(const std::vector<float>& losses) {
  std::string row;
  for (const float loss : losses)
    row += " " + fixed(loss, 4);
  return row;
}

// 0 exactly, otherwise three significant digits: differences are tiny or not at all.
std::string difference_text(double value) {
  if (value == 0)
    return "0";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

constexpr std::size_t kShownUpdates = 5;  // at each end of a long run

}  // namespace

std::string numeric_text(const RunReport& r) {
  if (!r.numeric) {
    return r.numeric_skipped.empty() ? ""
                                     : "\nNumeric check: skipped (" + r.numeric_skipped + ")\n";
  }
  const NumericReport& n = *r.numeric;
  const auto& p = r.spec->pipeline;
  std::string out = "\nNumeric check: pipelined run against a one-device reference on " + n.data +
                    ", " + std::to_string(n.losses.size()) + " weight update(s) x " +
                    std::to_string(p.gradient_accumulation_count) + " micro-batch(es) of " +
                    std::to_string(p.micro_batch_size) + " samples\n";
  out += loss_heading(r.spec->data.labels);
  const std::vector<double> means = n.mean_loss_per_update();
  const std::size_t updates = n.losses.size();
  for (std::size_t s = 0; s < updates; ++s) {
    if (updates > 2 * kShownUpdates && s >= kShownUpdates && s < updates - kShownUpdates) {
      if (s == kShownUpdates)
        out += "  ... " + std::to_string(updates - 2 * kShownUpdates) + " more update(s)\n";
      continue;
    }
    out += "  update " + std::to_string(s + 1) + " (mean " + fixed(means[s], 4) +
           " nats):" + loss_row(n.losses[s]) + "\n";
  }
  out += std::string(n.bit_identical ? "Bit-identical to the reference"
                                     : "DIFFERS from the reference") +
         ": largest |pipelined - reference| " + difference_text(n.max_abs_diff_loss) +
         " nats in losses, " + difference_text(n.max_abs_diff_weights) + " in weights\n";
  return out;
}

nlohmann::json numeric_json(const RunReport& r) {
  if (!r.numeric)
    return nullptr;
  const NumericReport& n = *r.numeric;
  return {{"bit_identical", n.bit_identical},
          {"max_abs_diff_loss", n.max_abs_diff_loss},
          {"max_abs_diff_weights", n.max_abs_diff_weights},
          {"data", n.data},
          {"losses", n.losses},
          {"reference_losses", n.reference_losses},
          {"mean_loss_per_update", n.mean_loss_per_update()}};
}

}  // namespace ipusim::sim
