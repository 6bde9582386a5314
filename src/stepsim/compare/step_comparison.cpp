#include "stepsim/compare/step_comparison.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "stepsim/compare/op_type.hpp"

namespace stepsim::compare {
namespace {

using TypeMap = std::map<std::string, SideStats>;

// Counts and times per type, and the exposed share of the step window (busy time clipped to the window; the
// rest is idle).
TypeMap side_stats(const StepTrace& t) {
  TypeMap out;
  std::vector<std::string> types;
  std::map<std::string, size_t> index;
  struct Point {
    int64_t at;
    int delta;
    size_t type;
  };
  std::vector<Point> points;
  for (const GpuEvent& e : t.events) {
    if (e.role != EventRole::Busy) continue;
    SideStats& s = out[e.type];
    ++s.count;
    s.total_ns += e.end_ns() - e.begin_ns();
    const int64_t b = std::max(e.begin_ns(), t.begin_ns), en = std::min(e.end_ns(), t.end_ns);
    if (en <= b) continue;
    auto [it, added] = index.try_emplace(e.type, types.size());
    if (added) types.push_back(e.type);
    points.push_back({b, +1, it->second});
    points.push_back({en, -1, it->second});
  }
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.at < b.at; });
  std::vector<int64_t> active(types.size(), 0);
  std::vector<double> exposed(types.size(), 0.0);
  int64_t running = 0, busy = 0, prev = t.begin_ns;
  for (size_t i = 0; i < points.size();) {
    const int64_t now = points[i].at;
    if (running > 0 && now > prev) {
      const double dt = static_cast<double>(now - prev);
      busy += now - prev;
      for (size_t j = 0; j < types.size(); ++j)
        if (active[j]) exposed[j] += dt * static_cast<double>(active[j]) / static_cast<double>(running);
    }
    for (; i < points.size() && points[i].at == now; ++i) {
      active[points[i].type] += points[i].delta;
      running += points[i].delta;
    }
    prev = now;
  }
  for (size_t j = 0; j < types.size(); ++j) out[types[j]].exposed_ns = exposed[j];
  SideStats& idle = out[kIdle];
  idle.total_ns = t.step_ns() - busy;
  idle.exposed_ns = static_cast<double>(idle.total_ns);
  return out;
}

// A kernel's name without "void " and its parameter list: the trailing balanced "(...)" (names hold parentheses
// of their own, "(anonymous namespace)", "{lambda()#1}").
std::string kernel_name(const std::string& n) {
  std::string_view s = n;
  if (s.substr(0, 5) == "void ") s.remove_prefix(5);
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
      if (depth == 0) {
        if (i > 0) s = s.substr(0, i);
        break;
      }
    }
  }
  return std::string(s);
}

std::map<std::string, std::pair<int64_t, int64_t>> per_name(const StepTrace& t, int64_t& ops) {
  std::map<std::string, std::pair<int64_t, int64_t>> m;  // name -> (count, time)
  for (const GpuEvent& e : t.events) {
    if (e.role != EventRole::Busy) continue;
    auto& [n, ns] = m[kernel_name(t.name(e))];
    ++n;
    ns += e.end_ns() - e.begin_ns();
    ++ops;
  }
  return m;
}

}  // namespace

std::optional<double> relative(double error, double reference) {
  if (reference == 0) return std::nullopt;
  return error / reference;
}

Comparison compare_steps(const StepTrace& sim, const StepTrace& meas) {
  Comparison c;
  c.sim_step_ns = sim.step_ns();
  c.meas_step_ns = meas.step_ns();
  const TypeMap s = side_stats(sim), m = side_stats(meas);
  std::vector<std::string> types;
  for (const auto& [t, _] : s) types.push_back(t);
  for (const auto& [t, _] : m)
    if (!s.count(t)) types.push_back(t);
  std::sort(types.begin(), types.end(), type_before);
  for (const std::string& t : types) {
    TypeRow r;
    r.type = t;
    if (auto it = s.find(t); it != s.end()) r.sim = it->second;
    if (auto it = m.find(t); it != m.end()) r.meas = it->second;
    c.types.push_back(r);
  }
  const auto sn = per_name(sim, c.sim_ops), mn = per_name(meas, c.meas_ops);
  for (const auto& [name, v] : sn) {
    auto it = mn.find(name);
    if (it == mn.end() || it->second.first != v.first) continue;
    c.kernels.push_back({name, v.first, v.second, it->second.second});
    c.matched_ops += v.first;
  }
  std::stable_sort(c.kernels.begin(), c.kernels.end(), [](const KernelRow& a, const KernelRow& b) {
    return std::llabs(a.error_ns()) > std::llabs(b.error_ns());
  });
  return c;
}

}  // namespace stepsim::compare
