#include "stepsim/report/memory_series.hpp"

#include <cstdio>
#include <fstream>

#include "stepsim/io/input_error.hpp"

namespace stepsim::report {

void write_memory_csv(std::ostream& out, const sim::Simulation& s) {
  out << "rank,time_s,allocated_bytes\n";
  char line[96];
  for (const sim::RankTimeline& tl : s.result.recorded) {
    for (const sim::MemorySample& m : tl.memory) {
      std::snprintf(line, sizeof line, "%d,%.9f,%lld\n", tl.rank, static_cast<double>(m.t_ns) * 1e-9,
                    static_cast<long long>(m.bytes));
      out << line;
    }
  }
}

void write_memory_csv_file(const std::string& path, const sim::Simulation& s) {
  std::ofstream out(path);
  if (!out) throw InputError(path + ": cannot write memory CSV");
  write_memory_csv(out, s);
}

}  // namespace stepsim::report
