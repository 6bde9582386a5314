// The shared skeleton of the HTML reports (html_page.hpp).
#include "stepsim/report/html_page.hpp"
#include "stepsim/io/utf8.hpp"

#include <cstdio>

#include "stepsim/io/input_error.hpp"

namespace stepsim::report {

// cmake/embed_chart_js.cmake writes these from report-ui/node_modules/chart.js (build folder, report_assets.cpp).
extern const char* const kChartJsParts[];
extern const int kChartJsPartCount;
extern const char* const kChartJsVersion;

std::string chart_library_js() {
  std::string js;
  for (int i = 0; i < kChartJsPartCount; ++i) js += kChartJsParts[i];
  return js;
}
std::string chart_library_version() { return kChartJsVersion; }

namespace {

// Before every page script: the registry a browser test reads, and what all reports draw with.
constexpr const char* kPreludeJs = R"JS(
const D = JSON.parse(document.getElementById('stepsim-data').textContent);
Chart.defaults.animation = false;
Chart.defaults.font.family = 'system-ui, sans-serif';
Chart.defaults.maintainAspectRatio = false;
const R = window.stepsimReport = {charts: []};
const COLORS = {forward: '#4e79a7', backward: '#f28e2b', recompute: '#76b7b2', idle: '#d3d3d3', compute: '#4e79a7',
                bubble: '#bab0ac', optimizer: '#59a14f', comm: '#e15759', other: '#b07aa1', fits: '#59a14f',
                risk: '#edc948', tight: '#edc948', over: '#e15759', invalid: '#d3d3d3'};
const STAGE_COLORS = ['#4e79a7','#f28e2b','#e15759','#76b7b2','#59a14f','#edc948','#b07aa1','#ff9da7','#9c755f','#bab0ac'];
function add(id, config) { R.charts.push({id, chart: new Chart(document.getElementById(id), config)}); }
// A logarithmic axis labelled at 1, 2 and 5 times the powers of ten only (Chart.js labels every minor tick, and
// 60,000 .. 100,000 cover each other).
const LOG_TICKS = {callback: v => {
  const m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
  return [1, 2, 5].some(x => Math.abs(m - x) < 1e-6) ? Number(v).toLocaleString('en-US') : '';
}};
R.drawn = () => R.charts.map(c => ({id: c.id, datasets: c.chart.data.datasets.map((d, i) => ({
  label: d.label, drawn: c.chart.getDatasetMeta(i).data.length}))}));
// Tick labels that overlap their neighbours on an axis, measured from the page's own layout: each shown label's extent
// along its axis (its text width, or for a rotated label the line height over the sine of the angle; its line height
// on a vertical axis) against the distance to the next one; and a legend over the plot area. The browser test expects
// none.
R.overlaps = () => {
  const out = [];
  for (const c of R.charts) {
    const ctx = c.chart.ctx;
    for (const scale of Object.values(c.chart.scales)) {
      if (!scale.options.display || !scale.options.ticks.display) continue;
      const font = Chart.helpers.toFont(scale.options.ticks.font);
      ctx.save();
      ctx.font = font.string;
      const rot = (scale.labelRotation || 0) * Math.PI / 180;
      const shown = [];
      scale.ticks.forEach((t, i) => {
        const lines = [].concat(t.label === undefined || t.label === null ? [] : t.label).map(String).filter(x => x);
        if (!lines.length) return;
        const w = Math.max(...lines.map(x => ctx.measureText(x).width)), h = font.lineHeight * lines.length;
        const extent = !scale.isHorizontal() ? h : rot < 0.02 ? w : Math.min(w * Math.cos(rot) + h * Math.sin(rot),
                                                                            h / Math.sin(rot));
        shown.push({pos: scale.getPixelForTick(i), extent, text: lines.join(' ')});
      });
      ctx.restore();
      shown.sort((a, b) => a.pos - b.pos);
      for (let i = 1; i < shown.length; ++i) {
        const a = shown[i - 1], b = shown[i];
        if (b.pos - a.pos + 1 < (a.extent + b.extent) / 2) out.push({chart: c.id, axis: scale.id, labels: [a.text, b.text]});
      }
    }
    // A legend drawn over the plot hides marks: its box must not cut into the chart area.
    const lg = c.chart.legend, area = c.chart.chartArea;
    if (lg && lg.options.display && area && Math.min(lg.right, area.right) - Math.max(lg.left, area.left) > 1 &&
        Math.min(lg.bottom, area.bottom) - Math.max(lg.top, area.top) > 1) {
      out.push({chart: c.id, axis: 'legend', labels: ['legend', 'plot area']});
    }
  }
  return out;
};
)JS";

}  // namespace

std::string escape_html(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

std::string html_page(const std::string& title, const std::string& header_html, const std::vector<HtmlSection>& sections,
                      const nlohmann::json& data, const std::string& page_js) {
  if (kChartJsPartCount == 0) {
    throw InputError("--report: this build has no chart library: run `npm ci` in report-ui/ (npm from Debian's npm "
                     "package), then re-run cmake and rebuild");
  }
  std::string d = io::json_text(data);
  for (size_t p = 0; (p = d.find("</", p)) != std::string::npos; p += 3) d.replace(p, 2, "<\\/");
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>stepsim: " + escape_html(title) +
      "</title>\n<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
      "h2{margin-top:2em;font-size:1.1em}.chart{position:relative}p.note,ul.note{color:#555;font-size:.9em}"
      "table{border-collapse:collapse;font-size:.9em}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}"
      "</style>\n</head><body>\n<h1>stepsim: " + escape_html(title) + "</h1>\n" + header_html + "\n";
  for (const HtmlSection& s : sections) {
    html += "<h2>" + escape_html(s.title) + "</h2><div class=\"chart\" style=\"height:" + std::to_string(s.height_px) +
            "px\"><canvas id=\"" + s.canvas_id + "\"></canvas></div>\n";
  }
  html += "<p class=\"note\">Generated by stepsim; charts drawn with " + escape_html(chart_library_version()) +
          " (inlined: the file opens offline). The numbers behind every chart are in the JSON block below.</p>\n";
  html += "<script type=\"application/json\" id=\"stepsim-data\">" + d + "</script>\n";
  html += "<script>" + chart_library_js() + "</script>\n<script>" + std::string(kPreludeJs) + page_js +
          "\nR.ready = true;\n</script>\n</body></html>\n";
  return html;
}

}  // namespace stepsim::report
