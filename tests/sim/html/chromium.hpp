#pragma once
// Headless Chromium for the HTML page tests: open a page, dump its DOM or screenshot it, and
// collect what it logged as console errors. Files go to the build folder; screenshots are
// also copied to $IPUSIM_SCREENSHOTS_DIR when set (tools/screenshots sets it to tools/docs),
// so that an ordinary test run never writes into the source tree.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_support.hpp"

namespace ipusim::testing {

namespace fs = std::filesystem;

inline const char* const kChromium = "/usr/bin/chromium";

// Under the 13.92 MB that IPU0 of the tf1 config needs with a grouped schedule in that memory
// (its tiles' smaller share bounds the plans' temporaries), over the 13.51 MB of sequential.
inline const char* const kTightMemory = "hardware.memory_per_ipu=\"13.64MB\"";

inline std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

// What headless Chromium printed for one page: the DOM after load (or nothing) and the
// console messages it logged as errors.
struct BrowserRun {
  std::string dom;
  std::vector<std::string> console_errors;
};

inline BrowserRun open_in_chromium(const fs::path& page, const std::string& mode) {
  const fs::path out = page.string() + ".out";
  const fs::path err = page.string() + ".err";
  const std::string command = std::string("timeout 60 ") + kChromium +
                              " --headless --no-sandbox --disable-gpu --enable-logging=stderr"
                              " --v=0 --no-first-run --user-data-dir=" +
                              page.string() + ".profile " + mode + " file://" +
                              fs::absolute(page).string() + " >" + out.string() + " 2>" +
                              err.string();
  const int status = std::system(command.c_str());
  INFO(command << "\n" << read_file(err));
  REQUIRE(status == 0);
  BrowserRun run{read_file(out), {}};
  std::istringstream lines(read_file(err));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("Uncaught") != std::string::npos ||
        (line.find("CONSOLE") != std::string::npos && line.find(":ERROR:") != std::string::npos))
      run.console_errors.push_back(line);
  }
  return run;
}

inline void require_chromium() {
  if (!fs::exists(kChromium))
    FAIL("headless Chromium (" << kChromium << ") is missing: tools/setup installs it");
}

inline fs::path build_dir() {
  return fs::path(IPUSIM_BINARY_DIR);
}

// Screenshots `page` at 1,400 x `height` px into the build folder as `name`, and into
// $IPUSIM_SCREENSHOTS_DIR when that is set and `for_docs`. With `section` (an id), a copy of the
// page shows that section alone: scrolling to an anchor is not reliably painted by headless
// Chromium. Returns the console errors the page logged.
inline std::vector<std::string> screenshot(const fs::path& page, const std::string& name,
                                           int height, const std::string& section = "",
                                           bool for_docs = true) {
  const fs::path png = build_dir() / name;
  fs::remove(png);
  fs::path target = page;
  if (!section.empty()) {
    std::string html = read_file(page);
    html.insert(html.find("</head>"), "<style>main>:not(#" + section + "){display:none}</style>");
    target = page.string() + "." + section + ".html";
    write_file(target, html);
  }
  auto run = open_in_chromium(target, "--hide-scrollbars --window-size=1400," +
                                          std::to_string(height) + " --screenshot=" + png.string());
  CHECK(fs::exists(png));
  if (const char* docs = std::getenv("IPUSIM_SCREENSHOTS_DIR"); for_docs && docs && *docs)
    fs::copy_file(png, fs::path(docs) / name, fs::copy_options::overwrite_existing);
  return run.console_errors;
}

// What a script run in the page after it loaded measured at a 1,400 px wide window: the lines
// it wrote into <pre id="probe">, and the console errors.
struct Probe {
  std::string lines;
  std::vector<std::string> console_errors;
};

// Runs `script` (a <script> element) at the end of the page at a 1,400 px wide window; the
// script reports in a <pre id="probe"> it appends to the body.
inline Probe run_in_page(const fs::path& page, const std::string& html, const std::string& script) {
  std::string probed = html;
  probed.insert(probed.rfind("</body>"), script);
  const fs::path path = page.string() + ".probe.html";
  write_file(path, probed);
  auto run = open_in_chromium(path, "--hide-scrollbars --window-size=1400,1000 --dump-dom");
  const auto begin = run.dom.find("<pre id=\"probe\">");
  const auto end = run.dom.find("</pre>", begin);
  REQUIRE(begin != std::string::npos);
  return {run.dom.substr(begin + 16, end - begin - 16), run.console_errors};
}

// Measures the page as a reader at 1,400 px sees it: its scroll width, the right edge of the
// widest table wrapper, tables outside a wrapper, tables whose last column cannot be scrolled
// into view, headers aligned otherwise than the values under them, and (when it has pan and zoom)
// the plot's transform after one click on "+", after a Ctrl+wheel and a drag, and after each of
// the keys 0, + and ArrowRight.
inline Probe probe_page(const fs::path& page, const std::string& html) {
  const std::string script =
      "<script>(function(){var r=[],right=0,loose=0,hidden=0;"
      "r.push('page '+document.documentElement.scrollWidth);"
      "document.querySelectorAll('.table-wrap').forEach(function(w){"
      "right=Math.max(right,Math.ceil(w.getBoundingClientRect().right));"
      "w.scrollLeft=w.scrollWidth;var row=w.querySelector('tr');if(!row)return;"
      "var last=row.lastElementChild.getBoundingClientRect();"
      "if(last.width>0&&last.right>w.getBoundingClientRect().right+1)hidden++;});"
      "document.querySelectorAll('table').forEach(function(t){"
      "if(!t.parentElement.classList.contains('table-wrap'))loose++;});"
      "r.push('tables '+right,'loose '+loose,'hidden '+hidden);"
      // A header aligned otherwise than the first row's value under it.
      "var mis=[];document.querySelectorAll('table').forEach(function(t){"
      "var rows=t.querySelectorAll('tr');if(rows.length<2)return;"
      "var h=rows[0].children,d=rows[1].children;"
      "for(var i=0;i<h.length&&i<d.length;i++)if(getComputedStyle(h[i]).textAlign!=="
      "getComputedStyle(d[i]).textAlign)mis.push(h[i].textContent);});"
      "r.push('misaligned '+mis.length+(mis.length?' '+mis.join('|'):''));"
      "var b=document.querySelector('.pz-in');if(b){b.click();"
      "var f=b.closest('.gantt-frame'),g=f.querySelector('g.pz'),s=f.querySelector('svg');"
      "r.push('zoom '+g.getAttribute('transform'));"
      // Ctrl+wheel and a drag go through the same handlers a reader's mouse does.
      "s.dispatchEvent(new WheelEvent('wheel',{deltaY:-100,ctrlKey:true,clientX:600,"
      "clientY:100,bubbles:true,cancelable:true}));"
      "s.dispatchEvent(new MouseEvent('mousedown',{clientX:600,clientY:100,bubbles:true}));"
      "window.dispatchEvent(new MouseEvent('mousemove',{clientX:500,clientY:100}));"
      "window.dispatchEvent(new MouseEvent('mouseup',{}));"
      "r.push('after '+g.getAttribute('transform'));"
      // Keys on the focused chart: 0 resets, + zooms about the middle, ArrowRight pans.
      "f.focus();['0','+','ArrowRight'].forEach(function(k){f.dispatchEvent(new KeyboardEvent("
      "'keydown',{key:k,bubbles:true,cancelable:true}));"
      "r.push('key '+k+' '+g.getAttribute('transform'))});}"
      "var p=document.createElement('pre');p.id='probe';p.textContent=r.join('\\n');"
      "document.body.appendChild(p);})();</script>";
  return run_in_page(page, html, script);
}

}  // namespace ipusim::testing
