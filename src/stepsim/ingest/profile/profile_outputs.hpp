#pragma once
// Outputs of the profiler: the summary JSON (op counts and bytes per type and rank, message-size histogram,
// volume per parallelism type, communicators, unmatched operations, aligned records for calibration), the
// Chrome trace of thesis Fig. 4.2-4.3 and a readable report.
#include <functional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/ingest/profile/profile.hpp"

namespace stepsim::profile {

nlohmann::json summary_json(const ProfileResult& r);
nlohmann::json chrome_trace(const ProfileResult& r, bool nvtx);
// The same trace written event by event (what `chrome_trace(r, nvtx).dump()` gives, without holding it whole: a log of
// millions of calls would need gigabytes as one JSON value).
void write_chrome_trace(std::ostream& out, const ProfileResult& r, bool nvtx);
std::string report_text(const ProfileResult& r);

}  // namespace stepsim::profile
