#pragma once
// What the simulated job is, beyond its parallel layout, for the summary's header and JSON (issue 46 item 6): the
// model's total and active parameters, how data parallelism shards and overlaps, the fp8 recipe and the links used.
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::report {

// "parameters 6.74 B (active 6.74 B); distributed optimizer (ZeRO-1), grad-reduce and param-gather overlapped;
// links: intra-node 450 GB/s, inter-node 400 Gb/s per GPU" (one line, no indent, no newline). `inter_node_efficiency`:
// the fraction of the NICs' line rate the transport reaches (catalog/transport_rates.hpp).
std::string job_setup_text(const spec::JobSpec& job, double inter_node_efficiency);
// The same as JSON: {parameters, active_parameters, zero_stage, data_parallel, overlap_grad_reduce, ...}.
nlohmann::json job_setup_json(const spec::JobSpec& job, double inter_node_efficiency);

}  // namespace stepsim::report
