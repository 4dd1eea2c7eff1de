// Chrome trace-event JSON, written one event a line as the replay produces it. Numbers are
// formatted with std::to_chars (shortest round trip), so the bytes depend only on the values.

#include <charconv>

#include "sim/core/error.hpp"
#include "sim/report/trace_encoder.hpp"

namespace ipusim::sim {
namespace {

// Bytes gathered before they go to the sink: large enough that writes are few, small enough
// that memory does not depend on the trace.
constexpr std::size_t kJsonFlushBytes = std::size_t{1} << 20;

void json_escaped(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

template <typename Number>
void json_number(std::string& out, Number value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  IPUSIM_CHECK(result.ec == std::errc());
  out.append(text, result.ptr);
}

class JsonTraceEncoder : public TraceEncoder {
 public:
  JsonTraceEncoder(core::ByteSink& sink, double clock_hz)
      : sink_(sink), clock_hz_(clock_hz), us_per_cycle_(1e6 / clock_hz) {
    out_ = "{\"traceEvents\":[";
  }

  void process(int pid, std::string_view name, int sort_index) override {
    metadata("process_name", {pid, 0}, "name", name);
    metadata_index("process_sort_index", {pid, 0}, sort_index);
  }

  void thread(const TrackRef& track, std::string_view name, int sort_index) override {
    metadata("thread_name", track, "name", name);
    metadata_index("thread_sort_index", track, sort_index);
  }

  // A complete event ("X") holds the whole slice; closing it writes nothing.
  void open_slice(const TrackRef& track, std::string_view name, std::string_view category,
                  core::Cycles start, core::Cycles end, std::span<const TraceArg> args,
                  const SliceFlows&) override {
    open(name, "X", start, track);
    out_ += ",\"cat\":";
    json_escaped(out_, category);
    out_ += ",\"dur\":";
    json_number(out_, us(end) - us(start));
    out_ += ",\"args\":{";
    for (const auto& arg : args) {
      json_escaped(out_, arg.key);
      out_ += ':';
      switch (arg.kind) {
        case TraceArg::Kind::kInt:
          json_number(out_, arg.integer);
          break;
        case TraceArg::Kind::kDouble:
          json_number(out_, arg.number);
          break;
        case TraceArg::Kind::kString:
          json_escaped(out_, arg.text);
          break;
      }
      out_ += ',';
    }
    out_ += "\"cycles\":";
    json_number(out_, (end - start).count);
    out_ += "}}";
  }

  void close_slice(const TrackRef&, core::Cycles) override {}

  void marker(const TrackRef& track, std::string_view name, core::Cycles at) override {
    open(name, "i", at, track);
    out_ += ",\"s\":\"g\"}";
  }

  void counter(int pid, std::string_view name, core::Cycles at,
               std::span<const std::pair<std::string_view, std::int64_t>> series) override {
    open(name, "C", at, {pid, 0});
    out_ += ",\"args\":{";
    bool first = true;
    for (const auto& [key, value] : series) {
      if (!first)
        out_ += ',';
      first = false;
      json_escaped(out_, key);
      out_ += ':';
      json_number(out_, value);
    }
    out_ += "}}";
  }

  void flow(std::uint64_t id, std::string_view name, std::span<const FlowPoint> points) override {
    for (std::size_t i = 0; i < points.size(); ++i) {
      const bool first = i == 0;
      const char* ph = first ? "s" : i + 1 == points.size() ? "f" : "t";
      const auto& point = points[i];
      begin_event();
      out_ += "{\"name\":";
      json_escaped(out_, name);
      out_ += ",\"cat\":\"flow\",\"ph\":\"";
      out_ += ph;
      out_ += "\",\"id\":";
      json_number(out_, id);
      out_ += ",\"ts\":";
      json_number(out_, (us(point.start) + us(point.end)) / 2);
      pid_tid(point.track);
      out_ += first ? "}" : ",\"bp\":\"e\"}";
    }
  }

  void finish(const TraceSummary& summary) override {
    out_ += "\n],\n\"displayTimeUnit\":";
    out_ += us(summary.end) >= 1000.0 ? "\"ms\"" : "\"ns\"";
    out_ += ",\n\"otherData\":{\"generator\":\"ipusim\",\"config\":";
    json_escaped(out_, summary.config);
    out_ += ",\"model\":";
    json_escaped(out_, summary.model);
    out_ += ",\"schedule\":";
    json_escaped(out_, summary.schedule);
    out_ += ",\"clock_hz\":";
    json_number(out_, clock_hz_);
    out_ += ",\"step_cycles\":";
    json_number(out_, summary.step_cycles);
    out_ +=
        ",\"ipu_numbering\":\"IPUn is the logical IPU (device_mapping); physical_ipus[n] is "
        "where hardware.selection_order places it\",\"physical_ipus\":[";
    for (std::size_t i = 0; i < summary.physical_ipus.size(); ++i) {
      if (i > 0)
        out_ += ',';
      json_number(out_, summary.physical_ipus[i]);
    }
    out_ += "],\"truncated\":false}}\n";
    sink_.write(out_);
    out_.clear();
  }

 private:
  double us(core::Cycles at) const { return double(at.count) * us_per_cycle_; }

  // Separates events, one a line, and hands a full buffer to the sink.
  void begin_event() {
    if (out_.size() >= kJsonFlushBytes) {
      sink_.write(out_);
      out_.clear();
    }
    out_ += first_event_ ? "\n" : ",\n";
    first_event_ = false;
  }

  void pid_tid(const TrackRef& track) {
    out_ += ",\"pid\":";
    json_number(out_, track.pid);
    out_ += ",\"tid\":";
    json_number(out_, track.tid);
  }

  // `{"name":..,"ph":..,"ts":..,"pid":..,"tid":..` of an event still open for more keys.
  void open(std::string_view name, const char* ph, core::Cycles at, const TrackRef& track) {
    begin_event();
    out_ += "{\"name\":";
    json_escaped(out_, name);
    out_ += ",\"ph\":\"";
    out_ += ph;
    out_ += "\",\"ts\":";
    json_number(out_, us(at));
    pid_tid(track);
  }

  void metadata(const char* kind, const TrackRef& track, const char* key, std::string_view value) {
    open(kind, "M", core::Cycles{0}, track);
    out_ += ",\"args\":{\"";
    out_ += key;
    out_ += "\":";
    json_escaped(out_, value);
    out_ += "}}";
  }

  void metadata_index(const char* kind, const TrackRef& track, int sort_index) {
    open(kind, "M", core::Cycles{0}, track);
    out_ += ",\"args\":{\"sort_index\":";
    json_number(out_, sort_index);
    out_ += "}}";
  }

  core::ByteSink& sink_;
  double clock_hz_;
  double us_per_cycle_;
  std::string out_;
  bool first_event_ = true;
};

}  // namespace

std::unique_ptr<TraceEncoder> make_json_trace_encoder(core::ByteSink& sink, double clock_hz) {
  return std::make_unique<JsonTraceEncoder>(sink, clock_hz);
}

}  // namespace ipusim::sim
