// stepsim._stepsim_native: the library's commands (src/stepsim/api/) for Python. Each function takes the options of
// its CLI command, runs with the GIL released, and returns what the command's --json writes as Python objects.
// The binding holds no logic of its own: the keyword arguments, defaults and result objects are in
// python/stepsim/api.py; every check and every figure is the library's. docs/PYTHON.md.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "stepsim/api/comm.hpp"
#include "stepsim/api/job_input.hpp"
#include "stepsim/api/output_file.hpp"
#include "stepsim/api/plan.hpp"
#include "stepsim/api/profile_nccl.hpp"
#include "stepsim/api/reliability.hpp"
#include "stepsim/api/simulate.hpp"
#include "stepsim/api/validate.hpp"
#include "stepsim/api/whatif.hpp"
#include "stepsim/api/memory.hpp"
#include "stepsim/io/input_error.hpp"

namespace py = pybind11;
using nlohmann::json;

namespace {

// nlohmann::json -> Python objects (dict, list, str, int, float, bool, None); doubles pass unchanged.
py::object to_python(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return py::none();
    case json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case json::value_t::number_integer:
      return py::int_(j.get<int64_t>());
    case json::value_t::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case json::value_t::number_float:
      return py::float_(j.get<double>());
    case json::value_t::string:
      return py::str(j.get_ref<const std::string&>());
    case json::value_t::array: {
      py::list l;
      for (const json& x : j) l.append(to_python(x));
      return l;
    }
    case json::value_t::object: {
      py::dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d[py::str(it.key())] = to_python(it.value());
      return d;
    }
    default:
      return py::none();  // binary and discarded values never appear in the library's JSON
  }
}

template <class T>
T get(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) && !d[key].is_none() ? d[key].cast<T>() : fallback;
}

template <class T>
std::optional<T> get_optional(const py::dict& d, const char* key) {
  if (!d.contains(key) || d[key].is_none()) return std::nullopt;
  return d[key].cast<T>();
}

// The job's source as api.py assembles it (keys are JobInput's fields).
stepsim::api::JobInput job_input(const py::dict& d) {
  stepsim::api::JobInput in;
  in.job_path = get<std::string>(d, "job_path", "");
  in.megatron_args = get<std::string>(d, "megatron_args", "");
  in.torchtitan_config = get<std::string>(d, "torchtitan_config", "");
  in.deepspeed_config = get<std::string>(d, "deepspeed_config", "");
  in.hf_config_path = get<std::string>(d, "hf_config_path", "");
  in.cluster_path = get<std::string>(d, "cluster_path", "");
  in.overrides = get<std::vector<std::string>>(d, "overrides", {});
  in.job_text = get<std::string>(d, "job_text", "");
  in.cluster_text = get<std::string>(d, "cluster_text", "");
  in.hf_config_text = get<std::string>(d, "hf_config_text", "");
  in.text_source = get<std::string>(d, "text_source", "job");
  return in;
}

py::dict simulate(const py::dict& job, const py::dict& opts) {
  stepsim::api::SimulateOptions o;
  o.job = job_input(job);
  o.json_path = get<std::string>(opts, "json", "");
  o.trace_path = get<std::string>(opts, "trace", "");
  o.trace_ranks = get<std::string>(opts, "trace_ranks", "");
  o.memory_csv = get<std::string>(opts, "memory_csv", "");
  o.dump_job_path = get<std::string>(opts, "dump_job", "");
  o.rank = get<int>(opts, "rank", 0);
  o.require_fit = get<bool>(opts, "require_fit", false);
  o.record_stages = true;  // the result carries the memory series of one rank per stage
  o.workload_dir = get<std::string>(opts, "workload", "");
  o.step = get<int>(opts, "step", -1);
  o.no_host_gaps = get<bool>(opts, "no_host_gaps", false);
  stepsim::api::SimulateOutput out;
  {
    py::gil_scoped_release release;
    out = stepsim::api::simulate(o);
    stepsim::api::write_outputs(o, out);
  }
  py::list series;
  for (const stepsim::sim::RankTimeline& tl : out.sim.result.recorded) {
    py::list t, b;
    for (const stepsim::sim::MemorySample& m : tl.memory) {
      t.append(static_cast<double>(m.t_ns) * 1e-9);
      b.append(m.bytes);
    }
    py::dict s;
    s["rank"] = tl.rank;
    s["time_s"] = t;
    s["allocated_bytes"] = b;
    series.append(s);
  }
  py::dict r;
  r["summary"] = to_python(out.json);
  r["memory_series"] = series;
  r["text"] = stepsim::report::to_text(out.summary, out.sim.workload.job);
  stepsim::api::check_fit(o, out);
  return r;
}

py::object memory(const py::dict& job, const py::dict& opts) {
  const stepsim::api::JobInput in = job_input(job);
  const std::string json_path = get<std::string>(opts, "json", "");
  json j;
  {
    py::gil_scoped_release release;
    j = stepsim::api::memory(in).json;
    if (!json_path.empty()) stepsim::api::write_output_file(json_path, j.dump(2) + "\n", "memory JSON");
  }
  return to_python(j);
}

py::object whatif(const py::dict& job, const py::dict& opts) {
  stepsim::api::WhatIfOptions o;
  o.job = job_input(job);
  o.scales = get<std::vector<std::string>>(opts, "scale", {});
  o.to = get<std::vector<std::string>>(opts, "to", {});
  o.replan = get<bool>(opts, "replan", false);
  o.tokens = get_optional<double>(opts, "tokens");
  if (o.tokens && opts.contains("steps")) {
    throw stepsim::InputError("tokens= gives the steps of each side; not with steps=");
  }
  o.settings.steps = get<int64_t>(opts, "steps", o.settings.steps);
  o.settings.failures_per_node_day = get<double>(opts, "failure_rate", o.settings.failures_per_node_day);
  o.settings.storage_GBps = get<double>(opts, "storage_GBps", o.settings.storage_GBps);
  o.settings.usd_per_gpu_hour = get<double>(opts, "price", o.settings.usd_per_gpu_hour);
  const std::string json_path = get<std::string>(opts, "json", "");
  json j;
  {
    py::gil_scoped_release release;
    j = stepsim::api::whatif(o).json;
    if (!json_path.empty()) stepsim::api::write_output_file(json_path, j.dump(2) + "\n", "what-if JSON");
  }
  return to_python(j);
}

py::object reliability(const py::dict& job, const py::dict& opts) {
  stepsim::api::ReliabilityOptions o;
  o.job = job_input(job);
  o.step_time_s = get_optional<double>(opts, "step_time");
  o.recovery_time_s = get_optional<double>(opts, "recovery_time");
  o.save_time_s = get_optional<double>(opts, "save_time");
  o.checkpoint_GB = get_optional<double>(opts, "checkpoint_GB");
  o.nodes = get_optional<int64_t>(opts, "nodes");
  o.steps = get_optional<int64_t>(opts, "steps");
  o.tokens = get_optional<double>(opts, "tokens");
  o.interval = get_optional<int64_t>(opts, "interval");
  o.runs = get_optional<int64_t>(opts, "monte_carlo");
  o.failure_rate = get<double>(opts, "failure_rate", o.failure_rate);
  if (auto s = get_optional<double>(opts, "storage_GBps")) {
    o.storage_GBps = *s;
    o.storage_given = true;
  }
  o.init_time_s = get<double>(opts, "init_time", o.init_time_s);
  o.recovery_mix = get_optional<std::string>(opts, "recovery_mix");
  o.recovery_level_times = get_optional<std::string>(opts, "recovery_level_times");
  o.seed = get_optional<std::string>(opts, "seed");
  const std::string json_path = get<std::string>(opts, "json", "");
  json j;
  {
    py::gil_scoped_release release;
    j = stepsim::api::reliability(o).json;
    if (!json_path.empty()) stepsim::api::write_output_file(json_path, j.dump(2) + "\n", "reliability JSON");
  }
  return to_python(j);
}

py::object plan(const py::dict& job, const py::dict& opts) {
  stepsim::api::PlanOptions o;
  o.job = job_input(job);
  o.gpus = get<int>(opts, "gpus", o.gpus);
  o.global_batch = get<int64_t>(opts, "global_batch", o.global_batch);
  o.top = get<int>(opts, "top", o.top);
  o.simulate = get<int>(opts, "simulate", o.simulate);
  o.threads = get<int>(opts, "threads", o.threads);
  o.memory_margin = get<double>(opts, "memory_margin", o.memory_margin);
  o.tie_tolerance = get<double>(opts, "tie_tolerance", o.tie_tolerance);
  o.objective = get<std::string>(opts, "objective", o.objective);
  o.steps = get_optional<int64_t>(opts, "steps");
  o.tokens = get_optional<double>(opts, "tokens");
  o.failure_rate = get_optional<double>(opts, "failure_rate");
  o.storage_GBps = get_optional<double>(opts, "storage_GBps");
  o.init_time_s = get_optional<double>(opts, "init_time");
  o.price = get<double>(opts, "price", o.price);
  o.keep_layout = get<bool>(opts, "keep_layout", o.keep_layout);
  o.fp8_recipes = get<std::string>(opts, "fp8_recipes", "");
  o.framework = get<std::string>(opts, "framework", "");
  o.fix = get<std::vector<std::string>>(opts, "fix", {});
  o.allow = get<std::vector<std::string>>(opts, "allow", {});
  o.exclude = get<std::vector<std::string>>(opts, "exclude", {});
  o.max_tp_per_nvlink_domain = get<int>(opts, "max_tp_per_nvlink_domain", o.max_tp_per_nvlink_domain);
  const std::string json_path = get<std::string>(opts, "json", "");
  json j;
  {
    py::gil_scoped_release release;
    j = stepsim::api::plan(o).json;
    if (!json_path.empty()) stepsim::api::write_output_file(json_path, j.dump(2) + "\n", "plan JSON");
  }
  return to_python(j);
}

// plan --memory-map: the CSV --csv writes (api.py turns it into rows).
std::string memory_map(const py::dict& job, const py::dict& opts) {
  const stepsim::api::JobInput in = job_input(job);
  const int gpus = get<int>(opts, "gpus", 0);
  const int64_t gbs = get<int64_t>(opts, "global_batch", 0);
  const std::string csv_path = get<std::string>(opts, "csv", "");
  py::gil_scoped_release release;
  std::string csv = stepsim::api::memory_map(in, gpus, gbs).csv;
  if (!csv_path.empty()) stepsim::api::write_output_file(csv_path, csv, "memory map CSV");
  return csv;
}

py::object comm(const py::dict& opts) {
  stepsim::api::CommOptions o;
  o.collective = get<std::string>(opts, "collective", o.collective);
  o.gpus = get<int>(opts, "gpus", o.gpus);
  o.gpus_per_node = get<int>(opts, "gpus_per_node", o.gpus_per_node);
  o.sizes = get<std::string>(opts, "sizes", o.sizes);
  o.cluster_path = get<std::string>(opts, "cluster", o.cluster_path);
  o.model = get<std::string>(opts, "model", o.model);
  o.algo = get<std::string>(opts, "algo", o.algo);
  o.proto = get<std::string>(opts, "proto", o.proto);
  o.overrides = get<std::vector<std::string>>(opts, "overrides", {});
  o.store = get<std::string>(opts, "store", o.store);
  o.nccl_version = get<std::string>(opts, "nccl_version", o.nccl_version);
  o.env = get<std::vector<std::string>>(opts, "env", {});
  o.launch = get<std::string>(opts, "launch", o.launch);
  const std::string json_path = get<std::string>(opts, "json", "");
  json j;
  {
    py::gil_scoped_release release;
    j = stepsim::api::comm_json(stepsim::api::comm(o));
    if (!json_path.empty()) stepsim::api::write_output_file(json_path, j.dump(2) + "\n", "comm JSON");
  }
  return to_python(j);
}

py::object validate(const py::dict& opts) {
  stepsim::api::ValidateOptions o;
  o.csvs = get<std::vector<std::string>>(opts, "runs", {});
  o.only = get<std::vector<std::string>>(opts, "only", {});
  o.overrides = get<std::vector<std::string>>(opts, "overrides", {});
  o.jobs = get<unsigned>(opts, "jobs", 0);
  const std::string json_path = get<std::string>(opts, "json", "");
  const std::string markdown_path = get<std::string>(opts, "markdown", "");
  const std::string jobs_dir = get<std::string>(opts, "jobs_dir", "");
  json j;
  {
    py::gil_scoped_release release;
    const stepsim::api::ValidateOutput out = stepsim::api::validate(o);
    j = out.json;
    if (!json_path.empty()) stepsim::api::write_output_file(json_path, j.dump(2) + "\n", "validation JSON");
    if (!markdown_path.empty()) {
      stepsim::api::write_output_file(markdown_path, stepsim::api::validation_markdown(out.result, o, markdown_path),
                                      "validation report (--markdown)");
    }
    if (!jobs_dir.empty()) stepsim::api::write_row_jobs(out.result, jobs_dir);
  }
  return to_python(j);
}

py::object profile_nccl(const py::dict& opts) {
  stepsim::api::ProfileNcclOptions o;
  o.logs = get<std::vector<std::string>>(opts, "log", {});
  o.dbs = get<std::vector<std::string>>(opts, "nsys", {});
  o.parallelism = get<std::string>(opts, "parallelism", "");
  o.model = get<std::string>(opts, "model", "");
  o.model_config = get<std::string>(opts, "model_config", "");
  o.sync_clocks = get<bool>(opts, "sync_clocks", false);
  o.nvtx = get<bool>(opts, "nvtx", false);
  const std::string out_path = get<std::string>(opts, "out", "");
  const std::string summary_path = get<std::string>(opts, "summary", "");
  json j;
  {
    py::gil_scoped_release release;
    const stepsim::profile::ProfileResult r = stepsim::api::profile_nccl(o);
    j = stepsim::api::profile_summary_json(r);
    if (!summary_path.empty()) stepsim::api::write_output_file(summary_path, j.dump(2) + "\n", "the summary (--summary)");
    if (!out_path.empty()) stepsim::api::write_profile_trace(out_path, r, o.nvtx);
  }
  return to_python(j);
}

}  // namespace

PYBIND11_MODULE(_stepsim_native, m) {
  m.doc() = "stepsim's library for Python (use the functions of the stepsim package; docs/PYTHON.md)";
  // InputError -> stepsim.InputError (python/stepsim/errors.py), whose message is the CLI's exit-2 line.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const stepsim::InputError& e) {
      py::object cls = py::module_::import("stepsim.errors").attr("InputError");
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
  m.def("simulate", &simulate, py::arg("job"), py::arg("options"));
  m.def("memory", &memory, py::arg("job"), py::arg("options"));
  m.def("whatif", &whatif, py::arg("job"), py::arg("options"));
  m.def("reliability", &reliability, py::arg("job"), py::arg("options"));
  m.def("plan", &plan, py::arg("job"), py::arg("options"));
  m.def("memory_map", &memory_map, py::arg("job"), py::arg("options"));
  m.def("comm", &comm, py::arg("options"));
  m.def("validate", &validate, py::arg("options"));
  m.def("profile_nccl", &profile_nccl, py::arg("options"));
}
