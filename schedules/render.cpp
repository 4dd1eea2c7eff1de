#include "schedules/render.hpp"

#include <sstream>
#include <vector>

#include "schedules/build.hpp"
#include "schedules/step_schedule.hpp"

namespace ipusim::schedules {
namespace {

constexpr const char* kIdle = "\xC2\xB7";  // "·"

char code_letter(CodePhase phase) {
  switch (phase) {
    case CodePhase::kRampUp:
      return 'U';
    case CodePhase::kMain:
      return 'M';
    case CodePhase::kRampDown:
      return 'D';
    case CodePhase::kWeightUpdate:
      return 'W';
  }
  return '?';
}

std::string cell_entry(const Schedule& schedule, const Task& task) {
  std::string entry = op_letter(task.op) + std::to_string(task.microbatch + 1);
  if (schedule.layout().hosted(task.ipu).size() > 1)
    entry += "@" + std::to_string(task.stage);
  return entry;
}

// The compute tasks of one IPU's program, in order.
std::vector<Task> compute_order(const Schedule& schedule, int ipu) {
  std::vector<Task> tasks;
  const std::int64_t length = schedule.program_length(ipu);
  for (std::int64_t index = 0; index < length; ++index) {
    Task task = schedule.program_task(ipu, index);
    if (is_compute(task.op))
      tasks.push_back(task);
  }
  return tasks;
}

void render_table(const StepSchedule& schedule, std::ostream& out) {
  const int ipus = schedule.layout().ipus();
  out << "| t | ph |";
  for (int ipu = 0; ipu < ipus; ++ipu)
    out << " IPU" << ipu << " |";
  out << "\n|";
  for (int column = 0; column < ipus + 2; ++column)
    out << "---|";
  out << "\n";
  std::vector<Task> tasks;
  for (std::int64_t step = 0; step < schedule.steps(); ++step) {
    out << "| " << step + 1 << " | " << code_letter(schedule.step_code_phase(step)) << " |";
    for (int ipu = 0; ipu < ipus; ++ipu) {
      schedule.tasks_in_step(step, ipu, tasks);
      std::string cell;
      for (const Task& task : tasks) {
        if (is_compute(task.op))
          cell += (cell.empty() ? "" : " ") + cell_entry(schedule, task);
      }
      out << " " << (cell.empty() ? kIdle : cell) << " |";
    }
    out << "\n";
  }
}

void render_orders(const Schedule& schedule, std::ostream& out) {
  for (int ipu = 0; ipu < schedule.layout().ipus(); ++ipu) {
    out << "IPU" << ipu << ":";
    for (const Task& task : compute_order(schedule, ipu))
      out << " " << cell_entry(schedule, task);
    out << "\n";
  }
}

void render_summary(const Schedule& schedule, std::ostream& out) {
  const PhaseCounts c = schedule.phase_counts();
  const char* unit = c.counts_steps ? "steps" : "compute tasks";
  out << "code phases (" << unit << "): ramp-up " << c.code_ramp_up << ", main " << c.code_main
      << ", ramp-down " << c.code_ramp_down << "\n";
  out << "utilisation phases (" << unit << "): ramp-up " << c.ramp_up << ", main " << c.main
      << ", ramp-down " << c.ramp_down;
  if (c.counts_steps)
    out << " (" << c.full << " full, " << c.idle_tail << " trailing without compute)";
  else
    out << " (unit-time makespan " << c.makespan << ", ramp-up ends at " << c.ramp_up_end
        << ", ramp-down begins at " << c.ramp_down_begin << ")";
  out << "\nstash depth per stage:";
  for (std::int64_t depth : schedule.stash_depth())
    out << " " << depth;
  out << "\nstash kind per stage:";
  for (StashKind kind : schedule.stash_kind())
    out << " " << to_string(kind);
  out << "\n";
  if (schedule.relaxed()) {
    const PipelineShape& shape = schedule.shape();
    out << "relaxed divisibility: Graphcore would reject M=" << shape.microbatches << " (the "
        << schedule.name() << " schedule with " << shape.stages() << " stages needs a multiple of "
        << graphcore_lanes(schedule.name(), shape) << ")\n";
  }
}

nlohmann::json task_json(const Schedule& schedule, const Task& task, bool with_phases) {
  nlohmann::json entry = {{"op", std::string(1, op_letter(task.op))},
                          {"stage", task.stage},
                          {"microbatch", task.microbatch + 1}};
  if (schedule.layout().ipus_of(task.stage).size() > 1)
    entry["substage"] = task.substage;
  if (with_phases) {
    entry["phase"] = std::string(to_string(task.phase));
    entry["code_phase"] = std::string(to_string(task.code_phase));
  }
  return entry;
}

// {"ramp_up": ..., "main": ..., "ramp_down": ...}.
nlohmann::json phase_object(std::int64_t ramp_up, std::int64_t main, std::int64_t ramp_down) {
  return {{std::string(phase_key(Phase::kRampUp)), ramp_up},
          {std::string(phase_key(Phase::kMain)), main},
          {std::string(phase_key(Phase::kRampDown)), ramp_down}};
}

nlohmann::json phases_json(const PhaseCounts& c) {
  nlohmann::json phases = {{"counts", c.counts_steps ? "steps" : "compute_tasks"},
                           {"code", phase_object(c.code_ramp_up, c.code_main, c.code_ramp_down)},
                           {"utilisation", phase_object(c.ramp_up, c.main, c.ramp_down)}};
  if (c.counts_steps) {
    phases["full"] = c.full;
    phases["idle_tail"] = c.idle_tail;
  } else {
    phases["makespan"] = c.makespan;
    phases["ramp_up_end"] = c.ramp_up_end;
    phases["ramp_down_begin"] = c.ramp_down_begin;
  }
  return phases;
}

// One step of the step table: its number, phases and each IPU's compute tasks.
nlohmann::json step_json(const StepSchedule& schedule, std::int64_t step,
                         std::vector<Task>& tasks) {
  nlohmann::json ipus = nlohmann::json::array();
  for (int ipu = 0; ipu < schedule.layout().ipus(); ++ipu) {
    schedule.tasks_in_step(step, ipu, tasks);
    nlohmann::json list = nlohmann::json::array();
    for (const Task& task : tasks) {
      if (is_compute(task.op))
        list.push_back(task_json(schedule, task, false));
    }
    ipus.push_back(std::move(list));
  }
  return {{"step", step + 1},
          {"phase", std::string(to_string(schedule.step_phase(step)))},
          {"code_phase", std::string(to_string(schedule.step_code_phase(step)))},
          {"ipus", std::move(ipus)}};
}

// Everything but the tasks, which stand as null under `tasks_key` ("steps" or "order").
nlohmann::json schedule_head_json(const Schedule& schedule, const std::string& tasks_key) {
  const PipelineShape& shape = schedule.shape();
  nlohmann::json json = {{"schedule", schedule.name()}, {"N", shape.stages()},
                         {"M", shape.microbatches},     {"relaxed", schedule.relaxed()},
                         {"training", shape.training},  {"ipus", schedule.layout().ipus()}};
  json[tasks_key] = nullptr;
  json["stash_depth"] = schedule.stash_depth();
  nlohmann::json kinds = nlohmann::json::array();
  for (StashKind kind : schedule.stash_kind())
    kinds.push_back(std::string(to_string(kind)));
  json["stash_kind"] = std::move(kinds);
  json["phases"] = phases_json(schedule.phase_counts());
  return json;
}

// Writes `value` as the next element of an array `depth` levels deep, as dump(2) lays it out.
void write_element(std::ostream& out, const nlohmann::json& value, int depth, bool first) {
  const std::string pad(std::size_t(2 * depth), ' ');
  std::string text = (first ? "\n" : ",\n") + pad;
  for (const char c : value.dump(2)) {
    text += c;
    if (c == '\n')
      text += pad;
  }
  out.write(text.data(), std::streamsize(text.size()));
}

// The tasks of a schedule as the value of its "steps" or "order" key, one element at a time.
void write_tasks(const Schedule& schedule, std::ostream& out) {
  out << "[";
  std::vector<Task> tasks;
  if (const auto* steps = schedule.as_steps()) {
    for (std::int64_t step = 0; step < steps->steps(); ++step)
      write_element(out, step_json(*steps, step, tasks), 2, step == 0);
    out << "\n  ]";
    return;
  }
  for (int ipu = 0; ipu < schedule.layout().ipus(); ++ipu) {
    out << (ipu == 0 ? "\n    [" : ",\n    [");
    bool first = true;
    for (const Task& task : compute_order(schedule, ipu)) {
      write_element(out, task_json(schedule, task, true), 3, first);
      first = false;
    }
    out << (first ? "]" : "\n    ]");
  }
  out << "\n  ]";
}

}  // namespace

std::string render_step_table(const Schedule& schedule) {
  std::ostringstream out;
  if (const auto* steps = schedule.as_steps())
    render_table(*steps, out);
  else
    render_orders(schedule, out);
  render_summary(schedule, out);
  return out.str();
}

nlohmann::json schedule_to_json(const Schedule& schedule) {
  std::vector<Task> tasks;
  if (const auto* steps = schedule.as_steps()) {
    nlohmann::json json = schedule_head_json(schedule, "steps");
    json["steps"] = nlohmann::json::array();
    for (std::int64_t step = 0; step < steps->steps(); ++step)
      json["steps"].push_back(step_json(*steps, step, tasks));
    return json;
  }
  nlohmann::json json = schedule_head_json(schedule, "order");
  json["order"] = nlohmann::json::array();
  for (int ipu = 0; ipu < schedule.layout().ipus(); ++ipu) {
    nlohmann::json list = nlohmann::json::array();
    for (const Task& task : compute_order(schedule, ipu))
      list.push_back(task_json(schedule, task, true));
    json["order"].push_back(std::move(list));
  }
  return json;
}

void write_schedule_json(const Schedule& schedule, std::ostream& out) {
  const std::string key = schedule.as_steps() ? "steps" : "order";
  const std::string head = schedule_head_json(schedule, key).dump(2);
  const std::string marker = "\n  \"" + key + "\": null";
  const std::size_t at = head.find(marker);
  out << head.substr(0, at) << "\n  \"" << key << "\": ";
  write_tasks(schedule, out);
  out << head.substr(at + marker.size()) << "\n";
}

}  // namespace ipusim::schedules
