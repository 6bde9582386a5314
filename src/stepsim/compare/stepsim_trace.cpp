#include "stepsim/compare/stepsim_trace.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include <simdjson.h>

#include "stepsim/compare/op_type.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/json_read.hpp"

namespace stepsim::compare {
namespace {

namespace od = simdjson::ondemand;

constexpr size_t kMaxName = 1 << 16;  // longer event names are cut (C++ kernel names reach a few KB, not this)
constexpr size_t kMaxToken = 256;   // args values carried into the side-by-side trace
constexpr int64_t kMaxNanos = int64_t{9} << 50;  // |ts| and dur below ~104 days: sums stay far from overflow

void throw_if(simdjson::error_code e) {
  if (e) throw simdjson::simdjson_error(e);
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// Microseconds as the writer prints them (three decimals), read exactly to the nanosecond by the importer's
// reader; bounded so that sums of times stay far from int64 overflow.
std::optional<int64_t> micros(od::value v) {
  const std::optional<int64_t> ns = trace::json::micros_to_ns(v);
  if (!ns || *ns > kMaxNanos || *ns < -kMaxNanos) return std::nullopt;
  return ns;
}

std::string text_of(od::value v) {
  std::string_view s;
  if (v.get_string().get(s)) return {};
  return std::string(s.substr(0, kMaxName));
}

// Args of a complete event: what classifies it, and the scalar members the side-by-side trace keeps verbatim.
struct Args {
  std::string kernel, collective, group, name;
  int64_t sync_wait_ns = 0;
  std::string kept;  // "\"key\":value,..." without braces
};

Args read_args(od::object o) {
  static const std::set<std::string_view> keep{"kernel", "collective", "group", "group_size", "bytes", "phase",
                                                "microbatch", "layer", "chunk", "flops", "sync_wait_us"};
  Args a;
  for (auto f : o) {
    std::string_view k;
    throw_if(f.unescaped_key().get(k));
    od::value v;
    throw_if(f.value().get(v));
    od::json_type t;
    throw_if(v.type().get(t));
    if (t == od::json_type::object || t == od::json_type::array) continue;  // skipped unread
    if (keep.count(k)) {
      const std::string_view raw = trimmed(v.raw_json_token());
      if (raw.size() <= kMaxToken) {
        if (!a.kept.empty()) a.kept += ',';
        a.kept.append(1, '"').append(k).append("\":").append(raw);  // append, not +: GCC 12 -Wrestrict (PR105329)
      }
    }
    if (k == "kernel") a.kernel = text_of(v);
    else if (k == "collective") a.collective = text_of(v);
    else if (k == "group") a.group = text_of(v);
    else if (k == "name") a.name = text_of(v);
    else if (k == "sync_wait_us") a.sync_wait_ns = micros(v).value_or(0);
  }
  return a;
}

class Reader {
 public:
  Reader(std::string name, std::optional<int> rank) : want_(rank) { t_.path = std::move(name); }

  void events(od::array a) {
    trace::json::for_each_event(a, [this](od::object o) { event(o); });
  }

  void stated_step(int64_t ns) { step_ns_ = ns; }

  StepTrace finish() {
    if (!want_) throw InputError(t_.path + ": the trace has no rank (no event with a pid)");
    const std::string r = std::to_string(*want_);
    if (!recorded_.count(*want_)) {
      std::string list;
      for (int x : recorded_) list += (list.empty() ? "" : ", ") + std::to_string(x);
      throw InputError(t_.path + ": rank " + r + " is not in this trace (recorded ranks: " +
                       (list.empty() ? "none" : list) + "); simulate with --trace-ranks " + r);
    }
    if (t_.events.empty()) throw InputError(t_.path + ": rank " + r + " has no complete events (ph X): an empty step");
    t_.rank = *want_;
    t_.format = "stepsim";
    std::stable_sort(t_.events.begin(), t_.events.end(),
                     [](const GpuEvent& a, const GpuEvent& b) { return a.start_ns < b.start_ns; });
    // Every rank's step starts at 0 and ends with the job's step: the step time the trace states, else the last
    // event of any recorded rank (with all ranks recorded, the step time `stepsim simulate` reports).
    t_.begin_ns = 0;
    t_.end_ns = step_ns_ ? *step_ns_ : job_end_ns_;
    for (const GpuEvent& e : t_.events) {
      t_.begin_ns = std::min(t_.begin_ns, e.begin_ns());
      t_.end_ns = std::max(t_.end_ns, e.end_ns());
    }
    t_.label = "simulated step";
    if (step_ns_) t_.label.append(" (otherData.step_time_s)");
    else
      t_.label.append(", to the last event of ").append(std::to_string(recorded_.size())).append(" recorded rank(s)");
    for (const GpuEvent& e : t_.events) {
      auto it = thread_names_.find(e.tid);
      t_.threads[e.tid] = it != thread_names_.end() ? it->second : "tid " + std::to_string(e.tid);
    }
    return std::move(t_);
  }

 private:
  void event(od::object o) {
    std::string_view ph, cat;
    std::string name;
    std::optional<int64_t> pid, tid, ts, dur;
    Args args;
    for (auto f : o) {
      std::string_view k;
      throw_if(f.unescaped_key().get(k));
      od::value v;
      throw_if(f.value().get(v));
      if (k == "ph") { if (v.get_string().get(ph)) ph = {}; }
      else if (k == "cat") { if (v.get_string().get(cat)) cat = {}; }
      else if (k == "name") name = text_of(v);
      else if (k == "pid") pid = trace::json::int_of(v);
      else if (k == "tid") tid = trace::json::int_of(v);
      else if (k == "ts") ts = micros(v);
      else if (k == "dur") dur = micros(v);
      else if (k == "args") {
        od::object a;
        if (!v.get_object().get(a)) args = read_args(a);
      }
    }
    if (!pid || *pid < 0 || *pid >= (1 << 24)) return;  // stepsim's pids are ranks; anything else is not ours
    const int rank = static_cast<int>(*pid);
    if (ph == "M" && name == "process_name") recorded_.insert(rank);
    if (ph == "X" && ts && dur && *dur >= 0) {
      job_end_ns_ = std::max(job_end_ns_, *ts + *dur);
      recorded_.insert(rank);
    }
    if (!want_ && (ph == "M" || ph == "X")) want_ = rank;  // the first rank listed
    if (rank != *want_) return;
    if (ph == "M" && name == "thread_name" && tid) {
      thread_names_[*tid] = args.name;
      return;
    }
    if (ph != "X") return;  // counters, flow arrows
    if (!ts || !dur || *dur < 0)
      throw InputError(t_.path + ": a complete event (\"" + name.substr(0, 80) + "\") needs numeric ts and dur >= 0");
    GpuEvent e;
    e.name = intern(name);
    e.tid = tid.value_or(0);
    e.start_ns = *ts;
    e.dur_ns = *dur;
    e.args = std::move(args.kept);
    if (cat == "sync") {
      e.role = EventRole::Sync;
    } else if (args.kernel == "host") {
      e.role = EventRole::HostGap;
    } else {
      // A kernel names its category; a collective its collective; send/recv neither (it has a group).
      e.type = !args.kernel.empty() ? args.kernel : !args.collective.empty() ? args.collective
                                                    : !args.group.empty() ? kSendRecv : "other";
      if (e.type == kIdle) e.type = "other";  // "idle" is the step's time without ops, no op's type
      e.wait_ns = std::max<int64_t>(0, args.sync_wait_ns);
    }
    t_.events.push_back(std::move(e));
  }

  uint32_t intern(const std::string& s) {
    auto [it, added] = ids_.try_emplace(s, static_cast<uint32_t>(t_.names.size()));
    if (added) t_.names.push_back(s);
    return it->second;
  }

  StepTrace t_;
  std::optional<int64_t> step_ns_;  // otherData.step_time_s
  std::optional<int> want_;
  int64_t job_end_ns_ = 0;
  std::set<int> recorded_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::map<int64_t, std::string> thread_names_;
};

}  // namespace

StepTrace parse_stepsim_trace(const trace::TextBuffer& text, const std::string& name, std::optional<int> rank) {
  Reader reader(name, rank);
  bool stepsim = false, events = false;
  trace::json::for_each_root_field(text, name, [&](std::string_view key, od::value v) {
    if (key == "otherData") {
      od::object o;
      if (v.get_object().get(o)) return;
      for (auto g : o) {
        const std::string_view k = g.unescaped_key().value();
        od::value gv = g.value();
        std::string_view s;
        double d;
        if (k == "generator" && !gv.get_string().get(s)) stepsim = s == "stepsim";
        if (k == "step_time_s" && !gv.get_double().get(d) && d >= 0 && d < 9e6) reader.stated_step(std::llround(d * 1e9));
      }
    } else if (key == "traceEvents") {
      od::array a;
      if (v.get_array().get(a)) throw InputError(name + ": traceEvents must be an array");
      events = true;
      reader.events(a);
    }
  });
  if (!stepsim || !events)
    throw InputError(name + ": not a stepsim trace (otherData.generator \"stepsim\" and traceEvents; write one with "
                     "stepsim simulate --trace)");
  return reader.finish();
}

}  // namespace stepsim::compare
