#pragma once
// Measured per-rank volume by parallelism type next to the §2.4 models, as the thesis' Table 5.1 compares them.
// Measured = Σ count × type size of the rank's logged calls of that type (the thesis' observed accounting, §5.3.5);
// the models are volume_model.hpp's. Ratio = measured / model (Table 5.1's "Obs./Theor.").
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/ingest/profile/profile.hpp"

namespace stepsim::profile {

// {"model": inputs, P and sizes used, "rows": [{rank, parallelism, measured_bytes, model_bytes, ratio}],
//  "by_type": [{parallelism, ranks, measured_bytes, model_bytes, ratio}]}; null when no model was given.
nlohmann::json volume_vs_model_json(const ProfileResult& r);
// The readable table of that JSON; empty for null.
std::string volume_vs_model_text(const nlohmann::json& v);

}  // namespace stepsim::profile
