#pragma once
// Helpers shared by the tests: jobs from inline YAML, running the CLI binary, reading files.
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <chrono>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/csv_table.hpp"

namespace stepsim::test {

inline spec::JobSpec job_from_yaml(const std::string& yaml) {
  return spec::job_from_node(stepsim::catalog::shipped().gpus, spec::parse_yaml(yaml, "test.yaml"), "test.yaml");
}

// The InputError message a job is refused with, "" when it loads: tests look for the key and the rule in it.
inline std::string job_error(const std::string& yaml) {
  try {
    job_from_yaml(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A small dense GPT-style job; callers append or override sections with --set-like edits.
// The host issue model is off (simulation.host_time_scale 0): this small model is host-bound in eager PyTorch, and the
// tests that use it check the GPU timeline's closed forms; tests of the host model turn it on. `extra_simulation`
// continues the simulation map (", comm_model: nccl"). The cluster map is the last line (tests extend it).
inline std::string small_gpt_yaml(int t, int p, int d, int gbs, const std::string& extra_parallel = "",
                                  const std::string& extra_training = "", const std::string& extra_simulation = "") {
  std::ostringstream o;
  o << "model: {name: tiny, num_layers: 8, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
       " vocab_size: 32000, seq_length: 1024}\n"
    << "parallelism: {tensor: " << t << ", pipeline: " << p << ", data: " << d << extra_parallel << "}\n"
    << "training: {micro_batch_size: 1, global_batch_size: " << gbs << extra_training << "}\n"
    << "simulation: {host_time_scale: 0" << extra_simulation << "}\n"
    << "cluster: {gpu: H100-SXM, num_gpus: " << t * p * d
    << ", gpus_per_node: 8, intra_node: {bandwidth_GBps: 450, latency_us: 1}, inter_node: {bandwidth_Gbps: 400, latency_us: 5}}\n";
  return o.str();
}

// small_gpt_yaml's job with more simulation keys ("calibration_store: none, sustained_clock: 1.0").
inline std::string with_simulation(std::string yaml, const std::string& keys) {
  const std::string at = "simulation: {host_time_scale: 0";
  yaml.insert(yaml.find(at) + at.size(), ", " + keys);
  return yaml;
}

struct CliResult {
  int code = -1;
  std::string output;           // stdout and stderr together
  int64_t peak_rss_bytes = 0;   // the command's own largest resident set (wait4's ru_maxrss, KiB on Linux)
};

// A shell command line, its stdout read whole. fork, exec and wait4 rather than popen, so that the peak memory is this
// command's alone: getrusage(RUSAGE_CHILDREN) holds the largest of every child the test process has waited for, and
// ctest runs a whole suite in one process.
inline CliResult run_command(const std::string& cmd) {
  CliResult r;
  int fd[2];
  if (pipe(fd) != 0) return r;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return r;
  }
  if (pid == 0) {
    dup2(fd[1], STDOUT_FILENO);
    close(fd[0]);
    close(fd[1]);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fd[1]);
  std::array<char, 4096> buf{};
  ssize_t n;
  while ((n = read(fd[0], buf.data(), buf.size())) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) r.output.append(buf.data(), static_cast<size_t>(n));
  }
  close(fd[0]);
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.peak_rss_bytes = int64_t{usage.ru_maxrss} * 1024;
  return r;
}

// `env` (e.g. "STEPSIM_DATA_DIR=/tmp/x") is put before the command, for a run with other environment variables.
inline CliResult run_cli_env(const std::string& env, const std::string& args) {
  return run_command((env.empty() ? "" : env + " ") + std::string(STEPSIM_BINARY) + " " + args + " 2>&1");
}

inline CliResult run_cli(const std::string& args) { return run_cli_env("", args); }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One measurement file of data/measurements/<dir> (bench/gpu/*.py's CSVs), parsed; an absent file fails the test.
inline cost::CsvTable measurements(const std::string& dir, const std::string& file) {
  const std::string path = hw::data_dir() + "/measurements/" + dir + "/" + file;
  if (!std::filesystem::exists(path)) throw std::runtime_error("missing measurement file " + path);
  return cost::parse_csv(read_file(path), path);
}

// A folder of this test process's own: ctest runs each test suite in its own process, two at a time, and tests
// that wrote the same fixed name under TempDir() read each other's files. (The tests of one suite share it, one
// after the other: a test that asserts a file is absent must use a name no other test writes.)
inline std::string temp_dir() {
  const std::string dir = std::string(::testing::TempDir()) + "stepsim-" + std::to_string(::getpid()) + "/";
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_dir() + name;
  std::ofstream(path) << text;
  return path;
}

// The shipped efficiency table of a GPU by name, for tests that build a compute model by hand.
inline cost::EfficiencyTable shipped_efficiency(const std::string& gpu) {
  return catalog::shipped().efficiency.resolve(catalog::shipped().gpus.find(gpu));
}

inline std::string source_dir() { return STEPSIM_SOURCE_DIR; }
// A file of the real traces and logs under ../shared/data/real.
inline std::string real(const std::string& rel) { return std::string(STEPSIM_SHARED_DIR) + "/data/real/" + rel; }
// A development file of published runs: ../shared/data/published-runs/<file>.
inline std::string published_runs(const std::string& file) {
  return std::string(STEPSIM_SHARED_DIR) + "/data/published-runs/" + file;
}

// 1 GB = 1e9 bytes, for hand-solved link and transfer times (shared: unity batches join the flow tests).
inline constexpr double GB = 1e9;

// How long refusing bad input may take (issue 48: "within 2 s", which the release suite checks); the ASan+UBSan build
// runs the same code, its cold folders at -O0, up to 40 times slower (the 8,192-GPU export estimate: 0.75 s -> 27 s).
#if defined(__SANITIZE_ADDRESS__)
#define STEPSIM_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STEPSIM_TEST_SANITIZED 1
#endif
#endif
#ifdef STEPSIM_TEST_SANITIZED
inline constexpr std::chrono::seconds kRefusalTime{90};
#else
inline constexpr std::chrono::seconds kRefusalTime{2};
#endif

// The message of the InputError `f` throws ("<no error>" when it throws none), for tests of error texts.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace stepsim::test
