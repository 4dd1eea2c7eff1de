// The planner's settings: the cartesian product of the value lists plan searches, each as the
// config overrides that set it (sim/sweep/planner_internal.hpp).

#include <algorithm>
#include <array>
#include <functional>
#include <optional>

#include "schedules/build.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"
#include "sim/sweep/planner_internal.hpp"

namespace ipusim::sim::plan_detail {
namespace {

// What each --offload value sets: offload_weight_update_variables, offload_activations.
struct OffloadChoice {
  const char* name;
  bool weights;
  bool activations;
};
constexpr std::array<OffloadChoice, 4> kOffloads = {{{"none", false, false},
                                                     {"weight_update_variables", true, false},
                                                     {"stash_fifos", false, true},
                                                     {"both", true, true}}};

}  // namespace

core::Override override_of(const std::string& pointer, const nlohmann::json& value,
                           const std::string& label) {
  return {pointer, value.dump(), label};
}

namespace {

// The cuts of an even split of `layers` layers into `stages` stages.
std::vector<int> even_cuts(int layers, int stages) {
  std::vector<int> cuts;
  for (int k = 1; k < stages; ++k)
    cuts.push_back(int(std::int64_t(k) * layers / stages));
  return cuts;
}

// The device_mapping of `ipus` IPUs in the shape of the config's: 0..N-1, then the config's
// later stages on the IPUs they were on. Empty, with `why` set, when the shape does not carry.
std::vector<int> mapping_for(const RunSpec& base, int ipus, std::string& why) {
  std::vector<int> mapping;
  const int config_ipus = base.pipeline.ipus_per_replica();
  const auto& stages = base.pipeline.stages;
  for (std::size_t k = 0; k < stages.size(); ++k) {
    const int ipu = stages[k].ipus.front();
    if (int(k) < config_ipus && ipu != int(k)) {
      why = "the config's device_mapping does not start 0,1,...," +
            std::to_string(config_ipus - 1) +
            ", so plan cannot tell which of its stages to "
            "spread over more or fewer IPUs";
      return {};
    }
    if (int(k) >= config_ipus && ipu >= ipus) {
      why = "the config maps a stage after its first " + std::to_string(config_ipus) +
            " back to IPU" + std::to_string(ipu) + ", which a replica of " + std::to_string(ipus) +
            " IPUs does not have";
      return {};
    }
    if (int(k) >= config_ipus)
      mapping.push_back(ipu);
  }
  std::vector<int> out;
  for (int i = 0; i < ipus; ++i)
    out.push_back(i);
  out.insert(out.end(), mapping.begin(), mapping.end());
  return out;
}

// The overrides that give the pipeline `ipus` IPUs per replica (and `total` IPUs in all when
// set): its device_mapping, an even split to validate the setting with, the replicas.
void set_shape(const RunSpec& base, int ipus, int total, Setting& s) {
  s.ipus_per_replica = ipus;
  s.label +=
      (s.label.empty() ? "" : " ") + std::string("--ipus-per-replica ") + std::to_string(ipus);
  if (total > 0) {
    if (total % ipus != 0) {
      s.error = "--ipus " + std::to_string(total) + " is not a multiple of " +
                std::to_string(ipus) + " IPUs per replica";
      return;
    }
    s.replicas = total / ipus;
    s.overrides.push_back(override_of("/pipeline/replication_factor", s.replicas, s.label));
    s.overrides.push_back(override_of("/hardware/ipus", total, "--ipus"));
  }
  if (ipus == base.pipeline.ipus_per_replica())
    return;
  const auto mapping = mapping_for(base, ipus, s.error);
  if (mapping.empty())
    return;
  const int layers = int(base.model.layers.size());
  if (int(mapping.size()) > layers) {
    s.error = std::to_string(mapping.size()) +
              " stages need at least as many layers; the model "
              "has " +
              std::to_string(layers);
    return;
  }
  std::vector<std::string> splits;
  for (int cut : even_cuts(layers, int(mapping.size())))
    splits.push_back(base.model.layers[std::size_t(cut)].id);
  s.overrides.push_back(override_of("/pipeline/device_mapping", mapping, s.label));
  s.overrides.push_back(override_of("/pipeline/splits", splits, s.label));
}

// The setting's stage-to-IPU mapping: what set_shape gave it, else the config's.
std::vector<std::vector<int>> setting_mapping(const RunSpec& base, const Setting& s) {
  std::vector<std::vector<int>> mapping;
  for (const auto& o : s.overrides) {
    if (o.path == "/pipeline/device_mapping") {
      mapping.clear();
      for (int ipu : nlohmann::json::parse(o.value).get<std::vector<int>>())
        mapping.push_back({ipu});
    }
  }
  if (mapping.empty())
    for (const auto& stage : base.pipeline.stages)
      mapping.push_back(stage.ipus);
  return mapping;
}

// --relayout: when `schedule` refuses the setting's layout, the layout it runs on the same IPUs
// (schedules::relayout_mapping) with an even split for the search to start from.
void relay_out(const RunSpec& base, const std::string& schedule, Setting& s) {
  auto shape = base.pipeline_shape();
  shape.device_mapping = setting_mapping(base, s);
  const auto mapping = schedules::relayout_mapping(schedule, shape);
  if (mapping.empty())
    return;
  const int layers = int(base.model.layers.size());
  if (int(mapping.size()) > layers) {
    s.error = "--relayout: " + schedule + " runs " + std::to_string(mapping.size()) +
              " stages on " + std::to_string(shape.ipus()) + " IPUs, but the model has " +
              std::to_string(layers) + " layers";
    return;
  }
  std::vector<std::string> splits;
  for (int cut : even_cuts(layers, int(mapping.size())))
    splits.push_back(base.model.layers[std::size_t(cut)].id);
  s.relaid_mapping = mapping;
  const std::string label = "--relayout";
  s.overrides.push_back(override_of("/pipeline/device_mapping", mapping, label));
  s.overrides.push_back(override_of("/pipeline/splits", splits, label));
  s.label += " (relaid out: " + std::to_string(mapping.size()) + " stages on " +
             std::to_string(shape.ipus()) + " IPUs)";
}

}  // namespace

void set_offload(const std::string& name, Setting& s) {
  const auto choice = std::find_if(kOffloads.begin(), kOffloads.end(),
                                   [&](const auto& o) { return name == o.name; });
  IPUSIM_CHECK(choice != kOffloads.end());
  const std::string label = "--offload " + name;
  s.offload = name;
  s.overrides.push_back(
      override_of("/pipeline/offload_weight_update_variables", choice->weights, label));
  s.overrides.push_back(override_of("/pipeline/offload_activations", choice->activations, label));
  s.label += " " + label;
}

std::string offload_name(const PipelineSpec& p) {
  for (const auto& o : kOffloads) {
    if (o.weights == p.offload_weight_update_variables && o.activations == p.offload_activations)
      return o.name;
  }
  IPUSIM_CHECK(false);
  return "";
}

std::string recomputation_name(const RunSpec& spec) {
  const auto& pipeline = spec.document->json().value("pipeline", nlohmann::json::object());
  const auto mode = pipeline.find("recomputation_mode");
  return mode != pipeline.end() && mode->is_string() ? mode->get<std::string>() : "none";
}

void describe_candidate(PlanCandidate& c) {
  describe_setting(c, *c.spec);
}

void describe_setting(PlanCandidate& c, const RunSpec& spec) {
  const auto& p = spec.pipeline;
  c.schedule = p.schedule;
  c.gac = p.gradient_accumulation_count;
  c.micro_batch = p.micro_batch_size;
  c.recomputation = recomputation_name(spec);
  c.offload = offload_name(p);
  c.ipus_per_replica = p.ipus_per_replica();
  c.replicas = p.replication_factor;
}

bool overridden(const PlanRequest& request, const std::string& pointer) {
  return std::any_of(request.base_overrides.begin(), request.base_overrides.end(),
                     [&](const auto& o) { return core::to_json_pointer(o.path) == pointer; });
}

namespace {

// --global-batch: the GAC that makes micro-batch x GAC x replicas the global batch.
// Without --global-batch, a --micro-batch list keeps the config's global batch.
void set_global_batch(const RunSpec& base, std::int64_t global_batch, bool kept, Setting& s) {
  const auto micro_batch = s.micro_batch > 0 ? s.micro_batch : base.pipeline.micro_batch_size;
  const std::int64_t replicas = s.replicas > 0 ? s.replicas : base.pipeline.replication_factor;
  const auto per_accumulation = micro_batch * replicas;
  const std::string named = kept ? "the config's global batch " + std::to_string(global_batch) +
                                       " (kept as --micro-batch varies; --gac sets the GAC instead)"
                                 : "--global-batch " + std::to_string(global_batch);
  if (global_batch % per_accumulation != 0) {
    s.error = named + " is not a multiple of micro-batch " + std::to_string(micro_batch) + " x " +
              std::to_string(replicas) + " replica(s)";
    return;
  }
  const auto gac = global_batch / per_accumulation;
  s.overrides.push_back(override_of("/pipeline/gradient_accumulation_count", gac, named));
  s.label += " (GAC " + std::to_string(gac) + ")";
}

std::optional<std::int64_t> integer_of(const std::string& text) {
  try {
    const auto value = nlohmann::json::parse(text);
    if (value.is_number_integer())
      return value.get<std::int64_t>();
  } catch (const nlohmann::json::exception&) {
  }
  return std::nullopt;
}

std::function<void(const std::string&, Setting&)> set_value(const std::string& pointer,
                                                            const std::string& flag) {
  return [pointer, flag](const std::string& value, Setting& s) {
    s.overrides.push_back({pointer, value, flag + " " + value});
    s.label += (s.label.empty() ? "" : " ") + flag + " " + value;
  };
}

}  // namespace

SettingList::SettingList(const std::vector<std::string>& schedules, const PlanRequest& request,
                         const RunSpec& base)
    : request_(request), base_(base) {
  std::vector<std::string> ipus;
  for (int n : request.ipus_per_replica)
    ipus.push_back(std::to_string(n));
  if (ipus.empty() && request.total_ipus > 0)
    ipus.push_back(std::to_string(base.pipeline.ipus_per_replica()));
  axes_.push_back({ipus, [this](const std::string& value, Setting& s) {
                     set_shape(base_, std::stoi(value), request_.total_ipus, s);
                   }});
  axes_.push_back({schedules, [this](const std::string& name, Setting& s) {
                     s.overrides.push_back(
                         override_of("/pipeline/pipeline_schedule", name, "--schedules " + name));
                     s.label += (s.label.empty() ? "" : " ") + std::string("--schedules ") + name;
                     if (request_.relayout && s.error.empty())
                       relay_out(base_, name, s);
                   }});
  axes_.push_back({request.gacs, set_value("/pipeline/gradient_accumulation_count", "--gac")});
  axes_.push_back({request.micro_batches, [](const std::string& value, Setting& s) {
                     set_value("/pipeline/micro_batch_size", "--micro-batch")(value, s);
                     s.micro_batch = integer_of(value).value_or(0);
                   }});
  axes_.push_back(
      {request.recomputations, set_value("/pipeline/recomputation_mode", "--recomputation")});
  axes_.push_back({request.offloads, set_offload});
  std::erase_if(axes_, [](const Axis& axis) { return axis.values.empty(); });
  for (const auto& axis : axes_)
    size_ *= axis.values.size();
}

// Setting `index` of the product, the first axis varying slowest.
Setting SettingList::at(std::size_t index) const {
  IPUSIM_CHECK(index < size_);
  std::vector<std::size_t> digit(axes_.size());
  for (std::size_t a = axes_.size(); a-- > 0;) {
    digit[a] = index % axes_[a].values.size();
    index /= axes_[a].values.size();
  }
  Setting s;
  for (std::size_t a = 0; a < axes_.size(); ++a)
    axes_[a].apply(axes_[a].values[digit[a]], s);
  if (request_.global_batch > 0 && s.error.empty())
    set_global_batch(base_, request_.global_batch, request_.keeps_global_batch, s);
  return s;
}

namespace {

// The schedules searched by default: the registry's step-based (Graphcore) ones, those with
// overlap lanes; the GPU-world ones have none.
std::vector<std::string> default_schedules(const RunSpec& base) {
  std::vector<std::string> out;
  for (const auto& name : schedule_names()) {
    if (schedules::graphcore_lanes(name, base.pipeline_shape()) > 0)
      out.push_back(name);
  }
  return out;
}

}  // namespace

void refuse_explicit_stages(const core::ConfigDocument& document, const RunSpec& spec) {
  const auto& pipeline = document.json().value("pipeline", nlohmann::json::object());
  bool concurrent = false;
  for (const auto& stage : spec.pipeline.stages)
    concurrent = concurrent || stage.substage_layers.size() > 1;
  if (!pipeline.contains("stages") && !concurrent)
    return;
  throw core::ConfigError(document.source_of("/pipeline/stages"), "/pipeline/stages",
                          "plan moves the split points of pipeline.splits, one IPU per stage; a "
                          "config with explicit (or concurrent) stages is outside what it "
                          "searches: write the stages as pipeline.splits, or plan without them");
}

namespace {

// Values one list option may hold, and settings their product may make: each setting is
// validated and its splits priced, so a longer search would run for hours (and its settings
// alone take gigabytes).
constexpr std::size_t kMaxListValues = 256;
constexpr std::int64_t kMaxSettings = 100'000;
// IPUs per replica plan tries at most, as --ipus.
constexpr int kMaxIpusPerReplica = 1024;

// Refuses a list longer than kMaxListValues, or lists whose product passes kMaxSettings; the
// schedules count as many as are searched, given or by default.
void check_sizes(const PlanRequest& request, std::size_t schedules) {
  const std::vector<std::pair<const char*, std::size_t>> lists = {
      {"--ipus-per-replica", request.ipus_per_replica.size()},
      {"--schedules", schedules},
      {"--gac", request.gacs.size()},
      {"--micro-batch", request.micro_batches.size()},
      {"--recomputation", request.recomputations.size()},
      {"--offload", request.offloads.size()}};
  std::int64_t settings = 1;
  std::string given;
  for (const auto& [flag, size] : lists) {
    if (size > kMaxListValues)
      throw core::ConfigError(flag, "",
                              "expected at most " + std::to_string(kMaxListValues) +
                                  " values, found " + with_commas(std::int64_t(size)) +
                                  "; plan validates and prices every combination, so search "
                                  "fewer values");
    if (size > 1) {
      settings *= std::int64_t(size);
      given += (given.empty() ? "" : " x ") + std::to_string(size) + " " + flag;
    }
  }
  if (request.schedules.empty() && schedules > 1)
    given += " (the default schedules)";
  if (settings > kMaxSettings)
    throw core::ConfigError(given, "",
                            "the lists make " + with_commas(settings) +
                                " settings, more than the " + with_commas(kMaxSettings) +
                                " plan searches in one run; search fewer values");
}

// Refuses a value of `option` that is not one of `names`, with the closest suggested.
void check_choices(const std::string& option, const std::vector<std::string>& values,
                   const std::vector<std::string>& names) {
  for (const auto& name : values) {
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw core::ConfigError(
          option + " " + name, "",
          "expected one of " + core::quoted_list(names) + core::did_you_mean(name, names));
  }
}

}  // namespace

// Refuses what the command line got wrong before anything is priced.
void check_request(const PlanRequest& request, const RunSpec& base, bool fixed_splits) {
  const auto fail = [&](const std::string& flag, const std::string& why) {
    throw core::ConfigError(flag, "", why);
  };
  check_sizes(request, schedules_searched(request, base).size());
  check_choices("--recomputation", request.recomputations, schedules::recomputation_mode_names());
  check_choices("--offload", request.offloads, plan_offload_names());
  for (int n : request.ipus_per_replica) {
    if (n < 1 || (n & (n - 1)) != 0)
      fail("--ipus-per-replica " + std::to_string(n),
           "expected a power of two: multi-IPU devices come in 1, 2, 4, 8, 16, ... IPUs");
    if (n > kMaxIpusPerReplica)
      fail("--ipus-per-replica " + std::to_string(n),
           "expected at most " + std::to_string(kMaxIpusPerReplica) +
               " IPUs per replica, the most --ipus takes");
    if (fixed_splits && n != base.pipeline.ipus_per_replica())
      fail("--ipus-per-replica " + std::to_string(n),
           "the split is fixed (--splits or --set pipeline.splits), and with it the number of "
           "stages; leave the split free to try other IPU counts");
  }
  if (request.relayout && fixed_splits)
    fail("--relayout",
         "re-splits the model into the stages a schedule needs, but the split is fixed "
         "(--splits or --set pipeline.splits): drop one of them");
  if (request.total_ipus > 0 && overridden(request, "/pipeline/replication_factor"))
    fail("--ipus " + std::to_string(request.total_ipus),
         "--ipus sets the replicas (IPUs / IPUs per replica); drop --replicas or --ipus");
  if (request.global_batch > 0 && !request.gacs.empty())
    fail("--global-batch " + std::to_string(request.global_batch),
         "--global-batch sets the gradient accumulation count; drop --gac or --global-batch");
}

// The schedules searched: those asked for, else the config's when the command line set it,
// else Graphcore's.
std::vector<std::string> schedules_searched(const PlanRequest& request, const RunSpec& base) {
  if (!request.schedules.empty())
    return request.schedules;
  if (overridden(request, "/pipeline/pipeline_schedule"))
    return {base.pipeline.schedule};
  return default_schedules(base);
}

// A --micro-batch list without --gac or --global-batch keeps the config's global batch, so that
// each micro-batch is compared on the same samples per weight update.
PlanRequest keeping_global_batch(PlanRequest search, const RunSpec& base) {
  if (search.micro_batches.empty() || !search.gacs.empty() || search.global_batch > 0)
    return search;
  const auto& p = base.pipeline;
  search.global_batch =
      p.micro_batch_size * p.gradient_accumulation_count * std::int64_t(p.replication_factor);
  search.keeps_global_batch = true;
  return search;
}

}  // namespace ipusim::sim::plan_detail

namespace ipusim::sim {

const std::vector<std::string>& plan_offload_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& o : plan_detail::kOffloads)
      out.emplace_back(o.name);
    return out;
  }();
  return names;
}

}  // namespace ipusim::sim
