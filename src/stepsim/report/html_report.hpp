#pragma once
// Self-contained HTML reports (`stepsim simulate JOB --report OUT.html`, docs/REPORTS.md): one file that opens offline,
// its charts drawn by Chart.js (installed from npm in report-ui/ and inlined at build time) from a JSON block of the
// numbers, so that what a chart shows can be checked against the summary (tests/report/check_report.mjs).
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/report/html_page.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"

namespace stepsim::report {

// The data of a simulate report: the summary JSON, the step breakdown, the per-stage timeline of the first
// micro-batches (forward, backward, recompute blocks and the idle gaps between them, on one rank per stage), memory
// over time per stage against capacity, communication per parallel dimension, the prediction interval.
// `summary_json` is what --json writes; the simulation must have recorded one rank per stage (record_stages).
nlohmann::json simulate_report_data(const sim::Simulation& s, const Summary& sum, const nlohmann::json& summary_json);
// The page. InputError when the build has no chart library.
std::string simulate_report_html(const sim::Simulation& s, const Summary& sum, const nlohmann::json& summary_json);

}  // namespace stepsim::report
