#include "stepsim/compare/side_by_side.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "stepsim/compare/json_text.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::compare {
namespace {

std::string us(int64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1000.0);
  return buf;
}

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}
  void event(const std::string& body) {
    out_ << (first_ ? "\n" : ",\n") << "{" << body << "}";
    first_ = false;
  }

  void side(int pid, const std::string& title, const StepTrace& t) {
    const std::string p = std::to_string(pid);
    event("\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + p + ",\"args\":{\"name\":" + quoted(title) + "}");
    event("\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + p + ",\"args\":{\"sort_index\":" + p + "}");
    // The step thread takes the smallest tid >= 0 no stream uses, and sorts first.
    int64_t step_tid = 0;
    while (t.threads.count(step_tid)) ++step_tid;
    const std::string st = std::to_string(step_tid);
    event("\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + p + ",\"tid\":" + st + ",\"args\":{\"name\":\"step\"}");
    event("\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + p + ",\"tid\":" + st +
          ",\"args\":{\"sort_index\":0}");
    int sort = 1;
    for (const auto& [tid, name] : t.threads) {
      const std::string tt = std::to_string(tid);
      event("\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + p + ",\"tid\":" + tt + ",\"args\":{\"name\":" +
            quoted(name) + "}");
      event("\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + p + ",\"tid\":" + tt +
            ",\"args\":{\"sort_index\":" + std::to_string(sort++) + "}");
    }
    int64_t origin = t.begin_ns;
    for (const GpuEvent& e : t.events) origin = std::min({origin, e.begin_ns(), e.start_ns});
    event("\"ph\":\"X\",\"name\":" + quoted(t.label) + ",\"cat\":\"step\",\"pid\":" + p + ",\"tid\":" + st +
          ",\"ts\":" + us(t.begin_ns - origin) + ",\"dur\":" + us(t.step_ns()) +
          ",\"args\":{\"type\":\"step\",\"source\":" +
          quoted(t.path) + "}");
    for (const GpuEvent& e : t.events) {
      const std::string type = e.role == EventRole::Sync ? "sync" : e.role == EventRole::HostGap ? "host gap" : e.type;
      event("\"ph\":\"X\",\"name\":" + quoted(t.name(e)) + ",\"cat\":" + quoted(type) + ",\"pid\":" + p +
            ",\"tid\":" + std::to_string(e.tid) + ",\"ts\":" + us(e.start_ns - origin) + ",\"dur\":" + us(e.dur_ns) +
            ",\"args\":{\"type\":" + quoted(type) + (e.args.empty() ? "" : "," + e.args) + "}");
    }
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

}  // namespace

void write_side_by_side(std::ostream& out, const StepTrace& sim, const StepTrace& meas) {
  // Not generator "stepsim": this file is no simulation and must not pass for one.
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"stepsim compare\",\"simulated\":"
      << quoted(sim.path) << ",\"measured\":" << quoted(meas.path) << ",\"rank\":" << sim.rank << "},\"traceEvents\":[";
  Writer w(out);
  w.side(0, "simulated rank " + std::to_string(sim.rank), sim);
  w.side(1, "measured rank " + std::to_string(meas.rank), meas);
  out << "\n]}\n";
}

void write_side_by_side_file(const std::string& path, const StepTrace& sim, const StepTrace& meas) {
  std::ofstream out(path);
  if (!out) throw InputError(path + ": cannot write the side-by-side trace");
  write_side_by_side(out, sim, meas);
  if (!out) throw InputError(path + ": error while writing the side-by-side trace");
}

}  // namespace stepsim::compare
