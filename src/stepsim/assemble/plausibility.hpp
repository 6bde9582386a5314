#pragma once
// Inputs that are valid but unlikely to be what the user meant (issue 46 item 6): each is simulated as written and
// named in a printed note, with the reading that would make sense.
#include <string>
#include <vector>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/job/job_spec.hpp"

namespace stepsim::sim {

// The fastest NIC a GPU has today: 800 Gb/s (ConnectX-8, one per GPU): 100 GB/s.
inline constexpr double kFastestNicGBps = 100.0;

std::vector<std::string> plausibility_notes(const spec::JobSpec& job, const hw::GpuSpec& gpu);
// The cluster's part of them (its link rates), also for `stepsim comm`.
std::vector<std::string> cluster_plausibility_notes(const spec::ClusterSpec& c, const hw::GpuSpec& gpu);

}  // namespace stepsim::sim
