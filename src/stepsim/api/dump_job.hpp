#pragma once
// The job as stepsim read it, written back in the job-file schema (`simulate --dump-job OUT.yaml`, issue 46 item 6):
// what the converters (Megatron arguments, torchtitan TOML, DeepSpeed JSON, a Hugging Face config), the cluster
// include and the --set overrides made of the input. Simulating the file gives the same step.
#include <string>

#include "stepsim/api/job_input.hpp"

namespace stepsim::api {

// The YAML text: a comment header naming the source and what was assumed, then the tree without stepsim's own
// bookkeeping keys, with relative paths made absolute (so the file runs from any folder).
std::string resolved_job_yaml(const JobInput& in);

}  // namespace stepsim::api
