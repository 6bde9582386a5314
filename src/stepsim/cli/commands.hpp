#pragma once
// Subcommands: each registers its options on the app and returns the action to run after parsing.
#include <functional>

#include <CLI/CLI.hpp>

#include "stepsim/api/job_input.hpp"

namespace stepsim::cli {

using Action = std::function<int()>;

Action add_simulate(CLI::App& app);
Action add_memory(CLI::App& app);
Action add_comm(CLI::App& app);
Action add_calibrate(CLI::App& app);
Action add_whatif(CLI::App& app);
Action add_reliability(CLI::App& app);
Action add_compare(CLI::App& app);  // cmd_compare.cpp (docs/COMPARE.md)
Action add_validate(CLI::App& app);
Action add_calibrate_compute(CLI::App& calibrate);  // cmd_calibrate_compute.cpp: `calibrate compute`  // cmd_validate.cpp (docs/VALIDATION.md)

// Options every job-taking command shares: JOB.yaml | --megatron-args + --cluster, and --set overrides.
// The struct lives in the library (api/job_input.hpp) so that the Python API loads jobs the same way.
using JobOptions = api::JobInput;
void add_job_options(CLI::App& cmd, JobOptions& o);

// Writes `text` to `path`; InputError naming the path and `what` when it cannot.
void write_output_file(const std::string& path, const std::string& text, const std::string& what);
// CLI11 check on an output file option, run while parsing (before any work): refuses a directory, a missing or
// read-only folder, an existing file that cannot be written. Devices (/dev/stdout) pass: they are valid targets.
CLI::Validator output_file();
// The same for an output folder (created with its missing parents): refuses an existing path that is not a folder
// and a folder that cannot be written or created (its nearest existing ancestor not a writable folder).
CLI::Validator output_folder();
// CLI11 check on a whole-number option: at least `min` (1 for a count, 0 for an index), so that a zero or negative
// value given by hand is refused rather than read as the option's default.
CLI::Validator whole_number_at_least(long long min);

// Now, UTC, ISO 8601 ("2026-11-25T18:03:45Z"): the `created` of calibration rows.
std::string utc_now_iso();

}  // namespace stepsim::cli
