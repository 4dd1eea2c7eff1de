// The zoomed pipeline views of the run page and the pan and zoom script of its to-scale chart.
// A step of BERT-Large is 2,050 micro-batches wide, so its whole-step chart shows ramps and
// periods a few pixels wide; PopVision and the TF1 tutorial's execution traces show them at a
// scale where each task is a labelled box, which these views do from the same rows.

#include <algorithm>
#include <optional>

#include "sim/core/format.hpp"
#include "sim/html/gantt.hpp"
#include "sim/html/page.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim {
namespace {

using Window = std::pair<std::int64_t, std::int64_t>;

// The cycles the recorded timeline spends in `phase`, or nothing when it spends none.
std::optional<Window> phase_window(const Timeline& timeline, schedules::Phase phase) {
  auto starts = timeline.phases;
  std::stable_sort(starts.begin(), starts.end(),
                   [](const PhaseStart& a, const PhaseStart& b) { return a.start < b.start; });
  const std::int64_t recorded =
      timeline.truncated ? timeline.recorded_until.count : timeline.end.count;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (starts[i].phase != phase)
      continue;
    const auto to = i + 1 < starts.size() ? starts[i + 1].start.count : timeline.end.count;
    const auto from = starts[i].start.count;
    if (std::min(to, recorded) > from)
      return Window{from, std::min(to, recorded)};
  }
  return std::nullopt;
}

// One period of the main phase: from the first main-phase task to the start of the same
// work on the next micro-batch, which is where the pattern repeats.
std::optional<Window> main_period(const Timeline& timeline) {
  const TaskSpan* first = nullptr;
  for (const auto& span : timeline.tasks) {
    if (schedules::is_compute(span.task.op) && span.task.phase == schedules::Phase::kMain &&
        (!first || span.start < first->start))
      first = &span;
  }
  if (!first)
    return std::nullopt;
  for (const auto& span : timeline.tasks) {
    const auto& t = span.task;
    if (t.op == first->task.op && t.stage == first->task.stage &&
        t.substage == first->task.substage && t.microbatch == first->task.microbatch + 1 &&
        span.start > first->start)
      return Window{first->start.count, span.start.count};
  }
  return std::nullopt;
}

std::string window_heading(const std::string& name, const Window& w, double clock_hz) {
  return "<h3 style=\"margin-top:14px\">" + svg::escape(name) + ": cycles " + with_commas(w.first) +
         " \u2013 " + with_commas(w.second) + " (" + with_commas(w.second - w.first) + " cycles, " +
         html::ms(w.second - w.first, clock_hz) + ")</h3>\n";
}

}  // namespace

std::string zoomed_views_html(const GanttRun& run) {
  const Timeline& timeline = *run.timeline;
  const double clock = timeline.clock_hz();
  struct View {
    const char* id;
    const char* name;
    std::optional<Window> window;
    const char* words;
  };
  const View views[] = {
      {"zoom-ramp-up", "Ramp-up", phase_window(timeline, schedules::Phase::kRampUp),
       "The pipeline fills: later IPUs wait for their first micro-batch. With ramp-down, this "
       "is the ramp overhead; it does not grow with M."},
      {"zoom-main", "One period of the main phase", main_period(timeline),
       "From a task to the same task of the next micro-batch: the pattern the main phase "
       "repeats once per micro-batch. Idle time here is the bubble that repeats M times."},
      {"zoom-ramp-down", "Ramp-down", phase_window(timeline, schedules::Phase::kRampDown),
       "The pipeline drains: earlier IPUs run out of work and wait for the weight update."},
  };
  std::string out;
  for (const auto& view : views) {
    if (!view.window)
      continue;
    GanttOptions options{view.id, true, false, view.window};
    out += window_heading(view.name, *view.window, clock) + html::explain(view.words) +
           gantt_html({run}, options);
  }
  return out;
}

std::string pan_zoom_script() {
  // The plot group, from x = L (data-plot-x) and W wide (data-plot-width), is stretched
  // sideways about its left edge and shifted by t (x' = L + t + k (x - L));
  // each text is shrunk back by 1/k about its own x so that labels keep their size.
  return "<script>(function(){var f=document.currentScript.previousElementSibling,"
         "s=f.querySelector('svg'),g=s.querySelector('g.pz'),L=+f.dataset.plotX,W=+f.dataset."
         "plotWidth,k=1,t=0,d=null,"
         "V=s.viewBox.baseVal.width,T=[].slice.call(g.getElementsByTagName('text'));"
         "function u(){k=Math.min(Math.max(k,1),4096);t=Math.min(0,Math.max(t,W-W*k));"
         "g.setAttribute('transform','translate('+(L*(1-k)+t)+' 0) scale('+k+' 1)');"
         "for(var i=0;i<T.length;i++){var x=T[i].getAttribute('x');T[i].setAttribute("
         "'transform','translate('+x+' 0) scale('+(1/k)+' 1) translate('+(-x)+' 0)')}"
         "f.querySelector('.pz-k').textContent=k.toFixed(1)+'x'}"
         "function at(e){var r=s.getBoundingClientRect();return (e.clientX-r.left)*V/r.width}"
         "function z(c,x){var p=(x-L-t)/k;k=Math.min(Math.max(k*c,1),4096);t=x-L-p*k;u()}"
         "f.querySelector('.pz-in').onclick=function(){z(2,L+W/2)};"
         "f.querySelector('.pz-out').onclick=function(){z(0.5,L+W/2)};"
         "f.querySelector('.pz-reset').onclick=function(){k=1;t=0;u()};"
         "s.addEventListener('wheel',function(e){if(!e.ctrlKey)return;e.preventDefault();"
         "z(e.deltaY<0?1.25:0.8,at(e))},{passive:false});"
         "s.addEventListener('mousedown',function(e){d={x:at(e),t:t};e.preventDefault()});"
         "window.addEventListener('mousemove',function(e){if(d){t=d.t+at(e)-d.x;u()}});"
         "window.addEventListener('mouseup',function(){d=null});"
         // Keys when the chart has focus: +/- zoom about the middle, arrows pan an eighth of
         // the plot, 0 shows the whole step again.
         "f.addEventListener('keydown',function(e){var c=e.key;"
         "if(c=='+'||c=='=')z(2,L+W/2);else if(c=='-')z(0.5,L+W/2);"
         "else if(c=='ArrowLeft'){t+=W/8;u()}else if(c=='ArrowRight'){t-=W/8;u()}"
         "else if(c=='0'){k=1;t=0;u()}else return;e.preventDefault()})})();</script>\n";
}

}  // namespace ipusim::sim
