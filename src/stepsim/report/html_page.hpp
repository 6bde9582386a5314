#pragma once
// The skeleton every HTML report shares (docs/REPORTS.md): a header, one canvas per chart section, the report's
// numbers as a JSON block, Chart.js inlined (report-ui/, embedded at build time) and the report's own page script,
// which draws each chart through add(id, config) so that window.stepsimReport.drawn() tells a browser test what every
// chart laid out.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/report/text_format.hpp"  // format_number, for the reports' header lines

namespace stepsim::report {

// The chart library inlined into every report ("" when the build had none: report-ui/ was not installed).
std::string chart_library_js();
std::string chart_library_version();

struct HtmlSection {
  std::string title;
  std::string canvas_id;
  int height_px = 320;
};

std::string escape_html(const std::string& s);

// `header_html` is trusted markup (built from escaped text); `page_js` draws the charts from `D` (the data). InputError
// when the build has no chart library.
std::string html_page(const std::string& title, const std::string& header_html, const std::vector<HtmlSection>& sections,
                      const nlohmann::json& data, const std::string& page_js);

}  // namespace stepsim::report
