#pragma once
// Shared by the libFuzzer targets (each target is its own executable and includes this once).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include <yaml-cpp/yaml.h>

// UBSan only prints and goes on by default; a fuzzer must stop on the first report to save the input.
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }

namespace fuzz_support {

// A broken invariant is a finding: abort so libFuzzer saves the input.
inline void require(bool ok) {
  if (!ok) std::abort();
}

// n[key] must be an integer in [min, 2^31 - 1] (the parsers' size limits).
inline int64_t in_range(const YAML::Node& n, const char* key, int64_t min) {
  const int64_t v = n[key].as<int64_t>();
  require(v >= min && v <= 2147483647);
  return v;
}

// A file for the readers that take a path, one per fuzzing process and rewritten for each input: in /dev/shm where
// there is one (rewriting a file on a disk file system costs a writeback per input, a fifth of a target's time), else
// in /tmp.
inline std::string scratch_path(const std::string& stem, const std::string& extension) {
  const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/stepsim-fuzz-" + stem + "-" + std::to_string(::getpid()) + extension;
}

}  // namespace fuzz_support
