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
       "The pipeline fills: later IPUs wait for their first micro-batch. Their idle time here "
       "and in ramp-down is the ramp overhead; it does not grow with M."},
      {"zoom-main", "One period of the main phase", main_period(timeline),
       "From a task to the same task of the next micro-batch: the pattern the main phase "
       "repeats once per micro-batch. Idle time here is the bubble that repeats M times."},
      {"zoom-ramp-down", "Ramp-down", phase_window(timeline, schedules::Phase::kRampDown),
       run.report->spec->pipeline.training
           ? "The pipeline drains: earlier IPUs run out of work and wait for the weight update."
           : "The pipeline drains: earlier IPUs run out of work and wait for the pass to end."},
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

namespace {

// The script's redrawing of the axes and box labels for the window in view, as the chart
// draws them whole: ticks on round steps of 1, 2, 2.5 and 5 (about 10 across), in ms and in
// cycles, and each box's label, or its short one, when its visible part is wide enough.
std::string redraw_script() {
  return "var A=s.querySelector('g.pz-ticks'),G=s.querySelector('g.pz-grid'),"
         "B=s.querySelector('g.pz-labels'),R=[].slice.call(s.querySelectorAll('rect[data-l]')),"
         "M=A.dataset.ms.split(' ').map(Number),C=+A.dataset.clock,"
         "Y=A.dataset.axisY.split(' ').map(Number),S=A.dataset.grid.split(' ').map(function(p){"
         "return p.split(',').map(Number)});"
         // An SVG element with attributes `a` and text `x` appended to `p`.
         "function el(p,n,a,x){var e=document.createElementNS(s.namespaceURI,n);"
         "for(var q in a)e.setAttribute(q,a[q]);if(x!=null)e.textContent=x;p.appendChild(e)}"
         "function lg(v){return Math.floor(Math.log10(v)+1e-9)}"
         // Values in [a, b] on a round step with at least `m`; the step kept for the labels.
         "function tk(a,b,m){var r=(b-a)/10,g=Math.pow(10,lg(r)),st=g,F=[1,2,2.5,5,10],o=[];"
         "for(var i=0;i<5;i++){st=F[i]*g;if(st>=r)break}st=Math.max(st,m);"
         "for(var j=Math.ceil(a/st-1e-9);j*st<=b+st*1e-9;j++)o.push(j*st);return{v:o,s:st}}"
         // As many decimals as the step has, trailing zeros dropped, thousands separated.
         "function lb(v,st){var d=Math.max(0,-lg(st))+(Math.abs(st/Math.pow(10,lg(st))-2.5)<1e-6"
         "?1:0),x=v.toFixed(d);if(d)x=x.replace(/0+$/,'').replace(/\\.$/,'');"
         "var p=x.split('.');p[0]=p[0].replace(/\\B(?=(\\d{3})+(?!\\d))/g,',');return p.join('.')}"
         "function X(ms){return L+t+k*(ms-M[0])/(M[1]-M[0])*W}"
         "function tick(v,st,x,y,h,ly){el(A,'line',{'class':'axis',x1:x,y1:y,x2:x,y2:y+h});"
         "el(A,'text',{'class':'tick',x:x,y:ly,'text-anchor':'middle'},lb(v,st))}"
         "function axes(){A.textContent='';G.textContent='';var d=M[1]-M[0],"
         "a=M[0]-t/k/W*d,b=M[0]+(W-t)/k/W*d,T=tk(a,b,0);"
         "T.v.forEach(function(v){var x=X(v);S.forEach(function(r){el(G,'line',{'class':'grid',"
         "x1:x,y1:r[0],x2:x,y2:r[1]})});tick(v,T.s,x,Y[1],5,Y[1]+17)});"
         "if(C){var K=tk(a*C,b*C,1);K.v.forEach(function(c){tick(c,K.s,X(c/C),Y[0]-6,6,13)})}}"
         "function boxes(){B.textContent='';R.forEach(function(r){var x=+r.getAttribute('x'),"
         "x0=L+t+k*(x-L),x1=x0+k*r.getAttribute('width'),p=Math.max(x0,L),q=Math.min(x1,L+W),"
         "l=r.dataset.l;if(l.length*6.6+4>q-p)l=r.dataset.s;if(!l||l.length*6.6+4>q-p)return;"
         "el(B,'text',{'class':r.dataset.d?'lbl dark':'lbl',x:(p+q)/2,y:+r.getAttribute('y')+"
         "r.getAttribute('height')/2+4,'text-anchor':'middle'},l)})}";
}

}  // namespace

std::string pan_zoom_script() {
  // The plot's layers, from x = L (data-plot-x) and W wide (data-plot-width), are stretched
  // sideways about its left edge and shifted by t (x' = L + t + k (x - L)); each of their
  // texts is shrunk back by 1/k about its own x so that labels keep their size. The axes and
  // the box labels are redrawn rather than stretched, so that time reads at any zoom.
  return "<script>(function(){var f=document.currentScript.previousElementSibling,"
         "s=f.querySelector('svg'),P=[].slice.call(s.querySelectorAll('g.pz')),L=+f.dataset."
         "plotX,W=+f.dataset.plotWidth,k=1,t=0,d=null,"
         "V=s.viewBox.baseVal.width,T=[].slice.call(s.querySelectorAll('g.pz text'));" +
         redraw_script() +
         "function u(){k=Math.min(Math.max(k,1),4096);t=Math.min(0,Math.max(t,W-W*k));"
         "P.forEach(function(g){g.setAttribute('transform','translate('+(L*(1-k)+t)+' 0) scale('"
         "+k+' 1)')});"
         "for(var i=0;i<T.length;i++){var x=T[i].getAttribute('x');T[i].setAttribute("
         "'transform','translate('+x+' 0) scale('+(1/k)+' 1) translate('+(-x)+' 0)')}"
         "axes();boxes();f.querySelector('.pz-k').textContent=k.toFixed(1)+'x'}"
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
