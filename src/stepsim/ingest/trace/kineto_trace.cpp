#include "stepsim/ingest/trace/kineto_trace.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/json_read.hpp"
#include "stepsim/ingest/trace/readers.hpp"
#include "stepsim/ingest/trace/trace_document.hpp"
#include "stepsim/ingest/trace/traced_program_json.hpp"

namespace stepsim::trace {
namespace {

namespace od = json::od;

constexpr size_t kMaxGroupRanks = 1 << 20;
constexpr int kMaxStackScan = 64;  // enclosing CPU ops searched for collective metadata

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

struct Args {
  int64_t external_id = -1, rf_id = -1, correlation = -1, stream = -1, device = -1;
  int64_t device_type = -1, device_id = -1, bytes = INT64_MIN, total_allocated = -1;  // [memory] events
  CollMeta meta;
  int64_t input_nelems = -1;  // product of "Input Dims"[0]
  std::string input_type;     // "Input type"[0]
};

using json::throw_if;

int64_t product_of_dims(od::value v) {
  od::array outer;
  if (v.get_array().get(outer)) return -1;
  for (auto first : outer) {
    od::value fv;
    throw_if(first.get(fv));
    od::array dims;
    if (fv.get_array().get(dims)) return -1;
    int64_t n = 1;
    for (auto d : dims) {
      od::value dv;
      throw_if(d.get(dv));
      const auto x = json::int_of(dv);
      if (!x || *x < 0) return -1;
      n = (*x != 0 && n > (int64_t{1} << 62) / *x) ? (int64_t{1} << 62) : n * *x;
    }
    return n;  // only the first input
  }
  return -1;
}

std::string first_string_of(od::value v) {
  od::array a;
  if (v.get_array().get(a)) return {};
  for (auto e : a) {
    od::value ev;
    throw_if(e.get(ev));
    return json::string_of(ev).value_or("");
  }
  return {};
}

Args read_args(od::object o) {
  Args a;
  for (auto field : o) {
    od::field f;
    throw_if(std::move(field).get(f));
    const std::string_view k = json::key_of(f);
    od::value v = f.value();
    auto i = [&] { return json::int_of(v).value_or(-1); };
    if (k == "External id") a.external_id = i();
    else if (k == "Record function id") a.rf_id = i();
    else if (k == "correlation") a.correlation = i();
    else if (k == "stream") a.stream = i();
    else if (k == "device") a.device = i();
    else if (k == "Device Type") a.device_type = i();
    else if (k == "Device Id") a.device_id = i();
    else if (k == "Bytes") a.bytes = json::int_of(v).value_or(INT64_MIN);
    else if (k == "Total Allocated") a.total_allocated = i();
    else if (k == "Collective name") a.meta.name = json::string_of(v).value_or("");
    else if (k == "In msg nelems") a.meta.in_nelems = std::max<int64_t>(-1, i());
    else if (k == "Out msg nelems") a.meta.out_nelems = std::max<int64_t>(-1, i());
    else if (k == "Group size") a.meta.group_size = static_cast<int>(std::clamp<int64_t>(i(), -1, 1 << 24));
    else if (k == "dtype") a.meta.dtype = json::string_of(v).value_or("");
    else if (k == "Process Group Ranks") a.meta.group_ranks = json::int_list_of(v, kMaxGroupRanks);
    else if (k == "Input Dims") a.input_nelems = product_of_dims(v);
    else if (k == "Input type") a.input_type = first_string_of(v);
  }
  return a;
}

}  // namespace

bool is_nccl_kernel(const std::string& name) {
  std::string_view s = name;
  if (starts_with(s, "void ")) s.remove_prefix(5);
  return starts_with(s, "ncclKernel_") || starts_with(s, "ncclDevKernel_");
}

KinetoReader::KinetoReader(const std::string& name) { t_.path = name; }

uint32_t KinetoReader::intern(std::string_view s) {
  auto [it, added] = name_ids_.try_emplace(std::string(s), static_cast<uint32_t>(t_.names.size()));
  if (added) t_.names.emplace_back(s);
  return it->second;
}

size_t count_kernel_events(std::string_view s) {
  constexpr std::string_view kKey = "\"cat\"";
  constexpr std::string_view kValue = "\"kernel\"";
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  size_t n = 0;
  for (size_t at = s.find(kKey); at != std::string_view::npos; at = s.find(kKey, at + 1)) {
    if (at > 0 && s[at - 1] == '\\') continue;  // an escaped quote: text inside a string
    size_t i = at + kKey.size();
    while (i < s.size() && blank(s[i])) ++i;
    if (i >= s.size() || s[i] != ':') continue;
    ++i;
    while (i < s.size() && blank(s[i])) ++i;
    if (s.substr(i, kValue.size()) == kValue) ++n;
  }
  return n;
}

void check_kernel_events_fit(const std::string& path, size_t kernels, uintmax_t op_bytes) {
  const uintmax_t least = static_cast<uintmax_t>(kernels) * op_bytes;
  if (least <= kMaxRankFileBytes) return;
  throw InputError(path + ": " + std::to_string(kernels) + " kernel events: the rank's program would be at least " +
                   std::to_string((least + (uintmax_t{1} << 20) - 1) >> 20) + " MiB (" + std::to_string(op_bytes) +
                   " bytes an op), more than the " + std::to_string(kMaxRankFileBytes >> 20) +
                   " MiB a rank file of `simulate --workload` may hold; trace fewer steps (torch.profiler's schedule "
                   "with active=1) or a smaller part of the run");
}

void KinetoReader::expect_events(const TextBuffer& text, uintmax_t op_bytes) {
  const std::string_view s(text.data.get(), text.size);
  if (op_bytes > 0) check_kernel_events_fit(t_.path, count_kernel_events(s), op_bytes);
  auto count = [&](std::string_view token) {
    size_t n = 0;
    for (size_t at = s.find(token); at != std::string_view::npos && n < kMaxTraceEvents; at = s.find(token, at + 1)) ++n;
    return n;
  };
  t_.kernels.reserve(count("\"kernel\""));
  t_.cpu_ops.reserve(count("\"cpu_op\""));
  runtimes_.reserve(count("\"cuda_runtime\""));
}

bool KinetoReader::field(std::string_view key, od::value v) {
  if (key == "distributedInfo") {
    od::object o;
    if (v.get_object().get(o)) return true;
    for (auto f : o) {
      std::string_view k;
      throw_if(f.unescaped_key().get(k));
      od::value fv;
      throw_if(f.value().get(fv));
      if (k == "rank" || k == "world_size") {
        const auto x = json::int_of(fv);
        if (!x || *x < 0 || *x >= (1 << 24))
          throw InputError(t_.path + ": distributedInfo." + std::string(k) + " must be an integer in [0, 2^24)");
        (k == "rank" ? t_.rank : t_.world_size) = static_cast<int>(*x);
      }
    }
    return true;
  }
  if (key != "traceEvents") return false;
  od::array events;
  if (v.get_array().get(events)) throw InputError(t_.path + ": traceEvents must be an array");
  saw_events_ = true;
  json::for_each_event(events, [this](od::object o) { event(o); });
  return true;
}

void KinetoReader::event(od::object o) {
  if (t_.kernels.size() + t_.cpu_ops.size() + t_.memory.size() + runtimes_.size() >= kMaxTraceEvents) {
    throw InputError(t_.path + ": more than " + std::to_string(kMaxTraceEvents) +
                     " events kept (kernels, CPU ops, runtime calls, memory events): over the limit for one trace file "
                     "(trace one step per file)");
  }
  std::string_view ph, cat, name;
  int64_t pid = -1, tid = -1;
  std::optional<int64_t> ts, dur;
  Args args;
  for (auto field : o) {
    od::field f;
    throw_if(std::move(field).get(f));
    const std::string_view k = json::key_of(f);
    od::value v = f.value();
    if (k == "ph") { if (!json::string_view_of(v, ph)) ph = {}; }
    else if (k == "cat") { if (!json::string_view_of(v, cat)) cat = {}; }
    else if (k == "name") { if (!json::string_view_of(v, name)) name = {}; }
    else if (k == "pid") pid = json::int_of(v).value_or(-1);
    else if (k == "tid") tid = json::int_of(v).value_or(-1);
    else if (k == "ts") ts = json::micros_to_ns(v);
    else if (k == "dur") dur = json::micros_to_ns(v);
    else if (k == "args") {
      od::object a;
      if (!v.get_object().get(a)) args = read_args(a);
    }
  }
  if (ph == "i" && name == "[memory]") {
    if (ts && args.bytes != INT64_MIN) {
      t_.memory.push_back({*ts, static_cast<int>(std::clamp<int64_t>(args.device_type, -1, 64)), args.device_id,
                           args.bytes, args.total_allocated});
    }
    return;
  }
  if (ph != "X") return;
  auto need_times = [&](const char* what) {
    if (!ts || !dur || *dur < 0)
      throw InputError(t_.path + ": a " + what + " event (\"" + std::string(name.substr(0, 80)) +
                       "\") needs numeric ts and dur >= 0");
  };
  if (cat == "kernel") {
    need_times("kernel");
    Kernel k;
    k.name = intern(name);
    k.nccl = is_nccl_kernel(t_.names[k.name]);
    k.stream = args.stream >= 0 ? args.stream : tid;
    k.device = args.device >= 0 ? args.device : pid;
    k.start_ns = *ts;
    k.dur_ns = *dur;
    k.correlation = args.correlation;
    k.external_id = args.external_id;
    if (args.meta.any()) {
      k.meta = static_cast<int>(t_.metas.size());
      t_.metas.push_back(std::move(args.meta));
    }
    t_.kernels.push_back(k);
  } else if (cat == "cpu_op" || cat == "user_annotation") {
    if (!ts || !dur || *dur < 0) return;  // a CPU op without a span cannot enclose a launch
    if (starts_with(name, "ProfilerStep#")) {
      ProfilerStep s;
      s.number = -1;
      const std::string_view num = name.substr(13);
      int64_t n = 0;
      if (!num.empty() && num.size() < 18 &&
          std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        for (char c : num) n = n * 10 + (c - '0');
        s.number = n;
      }
      s.start_ns = *ts;
      s.dur_ns = *dur;
      t_.steps.push_back(s);
    }
    CpuOp op;
    op.name = intern(name);
    op.pid = pid;
    op.tid = tid;
    op.start_ns = *ts;
    op.dur_ns = *dur;
    op.external_id = args.external_id;
    op.rf_id = args.rf_id;
    if (starts_with(name, "nccl:") && args.meta.name.empty()) {
      args.meta.name = std::string(name.substr(5));
      if (args.meta.in_nelems < 0) args.meta.in_nelems = args.input_nelems;
      if (args.meta.dtype.empty()) args.meta.dtype = args.input_type;
    }
    if (args.meta.any()) {
      op.meta = static_cast<int>(t_.metas.size());
      t_.metas.push_back(std::move(args.meta));
    }
    t_.cpu_ops.push_back(op);
  } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
    if (ts && args.correlation >= 0) runtimes_.push_back({args.correlation, pid, tid, *ts});
  }
}

KinetoTrace KinetoReader::finish() {
  KinetoTrace& t = t_;
  std::stable_sort(t.kernels.begin(), t.kernels.end(), [](const Kernel& a, const Kernel& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.stream < b.stream;
  });
  std::sort(t.steps.begin(), t.steps.end(),
            [](const ProfilerStep& a, const ProfilerStep& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(t.memory.begin(), t.memory.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) { return a.ts_ns < b.ts_ns; });

  // The CPU pid: the one with the most CPU ops (smallest on a tie).
  std::map<int64_t, int64_t> per_pid;
  for (const CpuOp& op : t.cpu_ops) ++per_pid[op.pid];
  int64_t most = 0;
  for (const auto& [pid, n] : per_pid)
    if (n > most) most = n, t.cpu_pid = pid;

  // Kernel -> its launch (runtime call with the same correlation id) -> innermost CPU op enclosing the launch.
  std::sort(runtimes_.begin(), runtimes_.end(), [](const Runtime& a, const Runtime& b) {
    return a.correlation != b.correlation ? a.correlation < b.correlation : a.ts_ns < b.ts_ns;
  });
  struct Probe {
    int64_t pid, tid, ts;
    int kernel;
  };
  std::vector<Probe> probes;
  std::vector<int64_t> launch_ts(t.kernels.size(), INT64_MIN);
  for (size_t i = 0; i < t.kernels.size(); ++i) {
    const int64_t c = t.kernels[i].correlation;
    if (c < 0) continue;
    auto it = std::lower_bound(runtimes_.begin(), runtimes_.end(), c,
                               [](const Runtime& r, int64_t x) { return r.correlation < x; });
    if (it == runtimes_.end() || it->correlation != c) continue;
    probes.push_back({it->pid, it->tid, it->ts_ns, static_cast<int>(i)});
    launch_ts[i] = it->ts_ns;
    ++t.launches_found;
  }
  std::vector<int> order(t.cpu_ops.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const CpuOp &x = t.cpu_ops[a], &y = t.cpu_ops[b];
    if (x.pid != y.pid) return x.pid < y.pid;
    if (x.tid != y.tid) return x.tid < y.tid;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    if (x.dur_ns != y.dur_ns) return x.dur_ns > y.dur_ns;  // the outer op first
    return a < b;
  });
  std::sort(probes.begin(), probes.end(), [](const Probe& a, const Probe& b) {
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.tid != b.tid) return a.tid < b.tid;
    return a.ts != b.ts ? a.ts < b.ts : a.kernel < b.kernel;
  });
  auto has_coll = [&](int op) { return t.cpu_ops[op].meta >= 0 && !t.metas[t.cpu_ops[op].meta].name.empty(); };
  std::vector<int> stack;
  size_t next = 0;
  int64_t cur_pid = INT64_MIN, cur_tid = INT64_MIN;
  for (const Probe& p : probes) {
    if (p.pid != cur_pid || p.tid != cur_tid) {
      stack.clear();
      cur_pid = p.pid, cur_tid = p.tid;
      // Skip ops of threads before this one.
      while (next < order.size()) {
        const CpuOp& op = t.cpu_ops[order[next]];
        if (op.pid > p.pid || (op.pid == p.pid && op.tid >= p.tid)) break;
        ++next;
      }
    }
    while (next < order.size()) {
      const CpuOp& op = t.cpu_ops[order[next]];
      if (op.pid != p.pid || op.tid != p.tid || op.start_ns > p.ts) break;
      while (!stack.empty() && t.cpu_ops[stack.back()].start_ns + t.cpu_ops[stack.back()].dur_ns < op.start_ns)
        stack.pop_back();
      stack.push_back(order[next++]);
    }
    while (!stack.empty() && t.cpu_ops[stack.back()].start_ns + t.cpu_ops[stack.back()].dur_ns < p.ts)
      stack.pop_back();
    Kernel& k = t.kernels[p.kernel];
    if (!stack.empty()) k.cpu_op = stack.back();
    for (int d = 0; d < kMaxStackScan && d < static_cast<int>(stack.size()); ++d) {
      const int op = stack[stack.size() - 1 - d];
      if (has_coll(op)) {
        k.comm_op = op;
        break;
      }
    }
  }

  // Without a launch event (sampled traces), newer traces still name the launching op by "External id".
  std::vector<int> by_ext;
  for (size_t i = 0; i < t.cpu_ops.size(); ++i)
    if (t.cpu_ops[i].external_id >= 0) by_ext.push_back(static_cast<int>(i));
  std::sort(by_ext.begin(), by_ext.end(), [&](int a, int b) {
    return t.cpu_ops[a].external_id != t.cpu_ops[b].external_id ? t.cpu_ops[a].external_id < t.cpu_ops[b].external_id
                                                                 : a < b;
  });
  for (size_t i = 0; i < t.kernels.size(); ++i) {
    Kernel& k = t.kernels[i];
    if (launch_ts[i] != INT64_MIN || k.external_id < 0 || k.external_id == k.correlation) continue;
    auto it = std::lower_bound(by_ext.begin(), by_ext.end(), k.external_id,
                               [&](int op, int64_t x) { return t.cpu_ops[op].external_id < x; });
    if (it == by_ext.end() || t.cpu_ops[*it].external_id != k.external_id) continue;
    k.cpu_op = *it;
    if (has_coll(*it)) k.comm_op = *it;
    launch_ts[i] = t.cpu_ops[*it].start_ns;
  }

  // The step of a kernel is the ProfilerStep whose CPU span holds its launch.
  for (size_t i = 0; i < t.kernels.size(); ++i) {
    t.kernels[i].launch_ns = launch_ts[i];
    if (launch_ts[i] == INT64_MIN) continue;
    auto it = std::upper_bound(t.steps.begin(), t.steps.end(), launch_ts[i],
                               [](int64_t x, const ProfilerStep& s) { return x < s.start_ns; });
    if (it == t.steps.begin()) continue;
    --it;
    if (launch_ts[i] <= it->start_ns + it->dur_ns) t.kernels[i].step = static_cast<int>(it->number);
  }
  runtimes_.clear();
  return std::move(t_);
}

KinetoTrace parse_kineto_trace(const TextBuffer& text, const std::string& name) {
  TraceDocument d = parse_trace_document(text, name);
  if (d.format != TraceFormat::Kineto)
    throw InputError(name + ": an execution trace where a Kineto trace (traceEvents) was expected");
  return std::move(d.kineto);
}

KinetoTrace read_kineto_trace(const std::string& path) { return parse_kineto_trace(read_text_file(path), path); }

}  // namespace stepsim::trace
