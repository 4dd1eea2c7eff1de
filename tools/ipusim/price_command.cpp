// `ipusim price`: one operation at one shape, priced as Poplar plans it (sim/pricing), with the
// plan beside its cycles and temporary memory, as poplibs' single-layer tools print it.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"
#include "sim/pricing/product_planner.hpp"
#include "sim/pricing/vector_lowering.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

struct PriceOptions {
  std::string chip = "bow";
  std::string dtype = "fp16";
  std::string partials = "fp32";
  double memory_proportion = 0.6;
  std::string json;
  std::string shape;
  std::int64_t count = 1;
  std::string field;
  std::string kernel = "1x1";
  std::int64_t batch = 1;
  std::int64_t in_chans = 0;
  std::int64_t out_chans = 0;
  std::int64_t groups = 1;
  std::int64_t stride = 1;
  std::string vector_kind;
};

const std::vector<std::string> kChips = {"bow", "gc200"};
const std::vector<std::string> kDTypes = {"fp16", "fp32"};

// "512x1024x4096": `parts` positive integers joined by x.
std::vector<std::int64_t> dims_of(const std::string& text, std::size_t parts) {
  std::vector<std::int64_t> dims;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find('x', begin), text.size());
    std::int64_t value = 0;
    const auto [stop, problem] = std::from_chars(text.data() + begin, text.data() + end, value);
    if (problem != std::errc() || stop != text.data() + end || value < 1 || value > (1 << 30))
      return {};
    dims.push_back(value);
    begin = end + 1;
  }
  return dims.size() == parts ? dims : std::vector<std::int64_t>{};
}

CLI::Validator dims_validator(std::size_t parts, const std::string& form) {
  return CLI::Validator(
      [parts, form](const std::string& value) {
        return dims_of(value, parts).empty()
                   ? "expected " + form + ", integers from 1 to 1073741824 joined by 'x', found '" +
                         value + "'"
                   : std::string();
      },
      form);
}

// What ipusim prices: at most a config's micro-batch of FLOPs a pass (sim::kMaxMicroBatchFlops)
// and 2^40 elements an operand, so that every count of the plan fits its integers.
constexpr double kMaxElements = 1099511627776.0;  // 2^40

std::string short_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

void check_size(const std::string& option, double macs, std::initializer_list<double> operands) {
  if (2 * macs > double(sim::kMaxMicroBatchFlops))
    throw CLI::ValidationError(option, "the operation computes " + sim::si(2 * macs, "FLOP") +
                                           " a pass, more than the 2^60 (1.15 EFLOP) ipusim "
                                           "prices");
  for (const double elements : operands)
    if (elements > kMaxElements)
      throw CLI::ValidationError(option, "an operand of " + short_number(elements) +
                                             " elements is more than the 2^40 ipusim prices");
}

// Declares the --json file before anything runs; it is written only when all of it succeeded.
void add_json_output(core::OutputSet& outputs, const PriceOptions& o) {
  if (!o.json.empty())
    outputs.add(o.json, "--json");
}

models::DType dtype_named(const std::string& name) {
  return name == "fp32" ? models::DType::kFp32 : models::DType::kFp16;
}

struct Priced {
  sim::HardwareSpec hardware;
  sim::pricing::TileTarget target;
  sim::pricing::PlanOptions options;
};

Priced priced_on(const PriceOptions& o) {
  if (o.dtype == "fp32" && o.partials == "fp16")
    throw CLI::ValidationError("--partials",
                               "fp32 inputs take fp32 partials (poplin forces them), found fp16");
  Priced p{sim::preset_hardware(o.chip), {}, {}};
  p.target = sim::pricing::tile_target(p.hardware);
  p.options.input = dtype_named(o.dtype);
  p.options.partials = dtype_named(o.partials);
  p.options.available_memory_proportion = o.memory_proportion;
  return p;
}

std::string settings_line(const PriceOptions& o) {
  return o.dtype + " (" + o.partials + " partials) on a " + o.chip + " IPU, " +
         "available_memory_proportion " + sim::fixed(o.memory_proportion, 2);
}

std::string transform_text(const sim::pricing::ProductPlan& plan) {
  switch (plan.transform) {
    case sim::pricing::Transform::kNone:
      return "none";
    case sim::pricing::Transform::kCombineGroups:
      return std::to_string(plan.combined_groups) + " conv groups combined";
    case sim::pricing::Transform::kExpandKernelWidth:
      return "kernel width expanded into channels";
  }
  return "?";
}

nlohmann::json plan_json(const std::string& pass, const sim::pricing::ProductPlan& plan,
                         double clock_hz) {
  nlohmann::json worklists = nlohmann::json::array();
  for (const auto& list : plan.work.worklists) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& run : list)
      runs.push_back({run.width, run.count});
    worklists.push_back(runs);
  }
  const auto& s = plan.planned;
  return {{"pass", pass},
          {"vertex", std::string(sim::pricing::to_string(plan.vertex))},
          {"transform", transform_text(plan)},
          {"shape",
           {{"groups", s.groups},
            {"batch", s.batch},
            {"out_height", s.out_height},
            {"out_width", s.out_width},
            {"kernel_height", s.kernel_height},
            {"kernel_width", s.kernel_width},
            {"stride", s.stride},
            {"stride_width", s.stride_width},
            {"in_chans", s.in_chans},
            {"out_chans", s.out_chans}}},
          {"split",
           {{"groups", plan.split.groups},
            {"field", plan.split.field},
            {"in_chans", plan.split.in_chans},
            {"out_chans", plan.split.out_chans},
            {"tiles", plan.split.tiles()},
            {"serial", plan.serial}}},
          {"tile",
           {{"conv_groups", plan.work.conv_groups},
            {"in_groups", plan.work.in_groups},
            {"out_groups", plan.work.out_groups},
            {"in_chans_per_group", plan.work.in_chans_per_group},
            {"out_chans_per_group", plan.work.out_chans_per_group},
            {"positions", plan.positions_per_tile},
            {"worklists", worklists}}},
          {"cycles",
           {{"input_exchange", plan.input_exchange},
            {"weight_exchange", plan.weight_exchange},
            {"partial_exchange", plan.partial_exchange},
            {"vertex", plan.vertex_cycles},
            {"reduce", plan.reduce_cycles},
            {"transform", plan.transform_cycles},
            {"total", plan.cycles()}}},
          {"compute_sets", plan.compute_sets},
          {"temporary_bytes_per_tile", plan.temporary_bytes},
          {"fits", plan.fits},
          {"planned_within_proportion", plan.bound_proportion},
          {"macs", plan.macs},
          {"tflops", 2 * plan.macs / (double(plan.cycles()) / clock_hz) / 1e12}};
}

// A plan over the proportion was made, as poplin does, within a doubled one.
std::string temporaries_note(const sim::pricing::ProductPlan& plan) {
  if (plan.fits)
    return " B";
  if (std::isinf(plan.bound_proportion))
    return " B (over; no bound up to twice a tile admits a plan: the fastest)";
  return " B (over; planned within " + sim::fixed(plan.bound_proportion, 2) + ")";
}

void print_product(std::ostream& out, const std::string& title, const PriceOptions& o,
                   const sim::pricing::ProductPasses& passes, core::OutputSet& outputs) {
  const Priced p = priced_on(o);
  const std::vector<std::pair<std::string, sim::pricing::ProductShape>> rows = {
      {"forward", passes.forward},
      {"input gradient", passes.input_gradient},
      {"weight gradient", passes.weight_gradient}};
  out << title << ", " << settings_line(o) << "\n\n";
  nlohmann::json report = {{"operation", title},
                           {"chip", o.chip},
                           {"dtype", o.dtype},
                           {"partials", o.partials},
                           {"available_memory_proportion", o.memory_proportion},
                           {"passes", nlohmann::json::array()}};
  std::vector<std::vector<std::string>> table = {
      {"pass", "cycles", "µs", "TFLOPS", "vertex", "transform", "tiles", "split g/f/i/o",
       "exchange in/wt/partials", "vertex", "reduce", "temp/tile"}};
  for (const auto& [pass, shape] : rows) {
    const auto plan = sim::pricing::plan_product(p.target, shape, p.options);
    const double seconds = double(plan.cycles()) / p.hardware.clock_hz;
    const auto& s = plan.split;
    table.push_back({pass, sim::with_commas(plan.cycles()), sim::fixed(seconds * 1e6, 1),
                     sim::fixed(2 * plan.macs / seconds / 1e12, 1),
                     std::string(sim::pricing::to_string(plan.vertex)), transform_text(plan),
                     std::to_string(s.tiles()),
                     std::to_string(s.groups) + "/" + std::to_string(s.field) + "/" +
                         std::to_string(s.in_chans) + "/" + std::to_string(s.out_chans) +
                         (plan.serial > 1 ? " x " + std::to_string(plan.serial) + " serial" : ""),
                     std::to_string(plan.input_exchange) + "/" +
                         std::to_string(plan.weight_exchange) + "/" +
                         std::to_string(plan.partial_exchange),
                     sim::with_commas(plan.vertex_cycles), sim::with_commas(plan.reduce_cycles),
                     sim::with_commas(plan.temporary_bytes) + temporaries_note(plan)});
    report["passes"].push_back(plan_json(pass, plan, p.hardware.clock_hz));
  }
  out << sim::render_table(
      table, {false, true, true, true, false, false, true, false, true, true, true, true});
  out << "\nsplit g/f/i/o: the ways conv groups, output positions, input and output channels\n"
         "are split over tiles (x N serial: in N passes over slices of the output channels).\n"
         "Cycles are poplin's plan estimate; the syncs between compute sets are not in them.\n"
         "A plan over the memory proportion was made, as poplin does, within twice it (or 4x,\n"
         "...) when no plan fitted.\n";
  if (!o.json.empty())
    outputs.write(o.json, report.dump(2) + "\n");
}

void price_matmul(const PriceOptions& o, std::ostream& out) {
  core::OutputSet outputs;
  add_json_output(outputs, o);
  const auto d = dims_of(o.shape, 3);
  const double count = double(o.count);
  const double m = double(d[0]);
  const double k = double(d[1]);
  const double n = double(d[2]);
  check_size("shape", count * m * k * n, {count * m * k, count * k * n, count * m * n});
  const std::string title = (o.count > 1 ? std::to_string(o.count) + " x " : std::string()) +
                            "matmul [" + std::to_string(d[0]) + ", " + std::to_string(d[1]) +
                            "] x [" + std::to_string(d[1]) + ", " + std::to_string(d[2]) + "]";
  print_product(out, title, o, sim::pricing::matmul_passes(o.count, d[0], d[1], d[2]), outputs);
  outputs.commit();
}

void price_conv(const PriceOptions& o, std::ostream& out) {
  core::OutputSet outputs;
  add_json_output(outputs, o);
  const auto field = dims_of(o.field, 2);
  const auto kernel = dims_of(o.kernel, 2);
  const double positions = double(o.batch) * double(sim::pricing::ceil_div(field[0], o.stride)) *
                           double(sim::pricing::ceil_div(field[1], o.stride));
  const double taps = double(kernel[0]) * double(kernel[1]);
  const double ins = double(o.in_chans);
  const double outs = double(o.out_chans);
  check_size("--field", positions * taps * ins * outs / double(o.groups),
             {double(o.batch) * double(field[0]) * double(field[1]) * ins, positions * outs,
              taps * ins * outs / double(o.groups)});
  sim::pricing::ProductShape s;
  s.groups = o.groups;
  s.batch = o.batch;
  s.stride = o.stride;
  s.stride_width = o.stride;
  s.kernel_height = kernel[0];
  s.kernel_width = kernel[1];
  s.out_height = sim::pricing::ceil_div(field[0], o.stride);
  s.out_width = sim::pricing::ceil_div(field[1], o.stride);
  s.in_chans = o.in_chans / o.groups;
  s.out_chans = o.out_chans / o.groups;
  const std::string title = "conv " + o.kernel + " over " + o.field + " x " +
                            std::to_string(o.in_chans) + " -> " + std::to_string(o.out_chans) +
                            " channels, " + std::to_string(o.groups) + " group(s), stride " +
                            std::to_string(o.stride) + ", batch " + std::to_string(o.batch);
  print_product(out, title, o, sim::pricing::conv_passes(s, field[0], field[1]), outputs);
  outputs.commit();
}

nlohmann::json sets_json(const std::vector<sim::pricing::PricedComputeSet>& sets) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& set : sets)
    out.push_back({{"name", set.name},
                   {"vertex", std::string(sim::pricing::to_string(set.op))},
                   {"elements", set.elements},
                   {"tiles", set.tiles},
                   {"exchange", set.exchange_cycles},
                   {"vertex_cycles", set.vertex_cycles},
                   {"cycles", set.cycles}});
  return out;
}

void print_sets(std::ostream& out, const std::string& pass,
                const std::vector<sim::pricing::PricedComputeSet>& sets) {
  out << pass << ": " << sets.size() << " compute sets, "
      << sim::with_commas(sim::pricing::total_cycles(sets)) << " cycles\n";
  std::vector<std::vector<std::string>> table = {
      {"  compute set", "vertex", "tiles", "exchange", "vertex cycles", "cycles"}};
  for (const auto& set : sets)
    table.push_back({"  " + set.name, std::string(to_string(set.op)), std::to_string(set.tiles),
                     sim::with_commas(set.exchange_cycles), sim::with_commas(set.vertex_cycles),
                     sim::with_commas(set.cycles)});
  out << sim::render_table(table, {false, false, true, true, true, true});
}

CLI::Validator vector_op_validator() {
  return CLI::Validator(
      [](const std::string& value) {
        const auto& names = sim::pricing::vector_kind_names();
        if (std::find(names.begin(), names.end(), value) != names.end())
          return std::string();
        return "expected one of " + core::quoted_list(names) + ", found '" + value + "'" +
               core::did_you_mean(value, names);
      },
      "OP");
}

void price_vector(const PriceOptions& o, std::ostream& out) {
  core::OutputSet outputs;
  add_json_output(outputs, o);
  sim::pricing::VectorKind kind{};
  sim::pricing::vector_kind_named(o.vector_kind, kind);
  const auto d = dims_of(o.shape, 2);
  const Priced p = priced_on(o);
  const auto plan = sim::pricing::plan_vector(p.target, kind, {d[0], d[1]}, p.options.input);
  out << o.vector_kind << " over " << d[0] << " rows of " << d[1] << ", " << o.dtype << " on a "
      << o.chip << " IPU\n\n";
  print_sets(out, "forward", plan.forward);
  print_sets(out, "backward", plan.backward);
  out << "\nEach compute set: a sync (" << p.target.sync_cycles
      << " cycles), its exchange, and its vertex on the busiest tile.\n";
  if (!o.json.empty())
    outputs.write(o.json, nlohmann::json{{"operation", o.vector_kind},
                                         {"rows", d[0]},
                                         {"width", d[1]},
                                         {"chip", o.chip},
                                         {"dtype", o.dtype},
                                         {"forward", sets_json(plan.forward)},
                                         {"backward", sets_json(plan.backward)}}
                                  .dump(2) +
                              "\n");
  outputs.commit();
}

void add_common_options(CLI::App* command, PriceOptions& o) {
  command->add_option("--chip", o.chip, "The IPU: bow or gc200 (default bow)")
      ->check(CLI::IsMember(kChips));
  command->add_option("--dtype", o.dtype, "The inputs' type: fp16 or fp32 (default fp16)")
      ->check(CLI::IsMember(kDTypes));
  command->add_option("--json", o.json, "Also write the plan as JSON to this file")
      ->check(non_empty_path());
}

void add_product_options(CLI::App* command, PriceOptions& o) {
  add_common_options(command, o);
  command
      ->add_option("--partials,--partials-dtype", o.partials,
                   "The partial sums' type (default fp32)")
      ->check(CLI::IsMember(kDTypes));
  command
      ->add_option("--available-memory-proportion", o.memory_proportion,
                   "The share of a tile's memory the plan's temporaries may take (default 0.6)")
      ->check(CLI::Range(0.01, 1.0));
}

}  // namespace

void add_price_command(CLI::App& app, std::ostream& out) {
  auto o = std::make_shared<PriceOptions>();
  auto* price = app.add_subcommand(
      "price", "Price one operation at one shape as Poplar plans it, and show the plan");
  price->require_subcommand(1);
  auto* matmul = price->add_subcommand("matmul", "A matrix product [M, K] x [K, N]");
  matmul->add_option("shape", o->shape, "MxKxN")->required()->check(dims_validator(3, "MxKxN"));
  matmul->add_option("--count", o->count, "So many independent products (e.g. heads x batch)")
      ->check(integer_in(1, 1 << 20));
  add_product_options(matmul, *o);
  matmul->footer("Example:\n  ipusim price matmul 512x1024x4096");
  matmul->callback([o, &out] { price_matmul(*o, out); });

  auto* conv = price->add_subcommand("conv", "A 2-D convolution");
  conv->add_option("--field", o->field, "The input's HxW")
      ->required()
      ->check(dims_validator(2, "HxW"));
  conv->add_option("--kernel", o->kernel, "The kernel's HxW (default 1x1)")
      ->check(dims_validator(2, "HxW"));
  conv->add_option("--in", o->in_chans, "Input channels")
      ->required()
      ->check(integer_in(1, 1 << 20));
  conv->add_option("--out", o->out_chans, "Output channels")
      ->required()
      ->check(integer_in(1, 1 << 20));
  conv->add_option("--groups", o->groups, "Groups, dividing both channel counts")
      ->check(integer_in(1, 1 << 20));
  conv->add_option("--stride", o->stride, "Stride on both axes")->check(integer_in(1, 64));
  conv->add_option("--batch", o->batch, "Samples (the micro-batch)")->check(integer_in(1, 1 << 20));
  add_product_options(conv, *o);
  conv->footer(
      "Example:\n  ipusim price conv --field 56x56 --kernel 3x3 --in 64 --out 64 --batch 4");
  conv->callback([o, &out] {
    if (o->in_chans % o->groups != 0 || o->out_chans % o->groups != 0)
      throw CLI::ValidationError("--groups", "expected a number of groups dividing --in " +
                                                 std::to_string(o->in_chans) + " and --out " +
                                                 std::to_string(o->out_chans) + ", found " +
                                                 std::to_string(o->groups));
    price_conv(*o, out);
  });

  auto* vector = price->add_subcommand("vector", "A vector operation lowered into compute sets");
  vector
      ->add_option("operation", o->vector_kind,
                   "One of " + core::quoted_list(sim::pricing::vector_kind_names()))
      ->required()
      ->check(vector_op_validator());
  vector->add_option("shape", o->shape, "ROWSxWIDTH (norms and softmax reduce along WIDTH)")
      ->required()
      ->check(dims_validator(2, "ROWSxWIDTH"));
  add_common_options(vector, *o);
  vector->footer("Example:\n  ipusim price vector layer_norm 512x1024");
  vector->callback([o, &out] { price_vector(*o, out); });
}

}  // namespace ipusim::cli
