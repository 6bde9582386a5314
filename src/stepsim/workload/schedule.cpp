#include "stepsim/workload/schedule.hpp"

#include <algorithm>

namespace stepsim::workload {

int warmup_steps(spec::PipelineSchedule schedule, int stage, int stages, int chunks, int m) {
  switch (schedule) {
    case spec::PipelineSchedule::GPipe: return m;
    case spec::PipelineSchedule::OneFOneB: return std::min(stages - stage - 1, m);
    case spec::PipelineSchedule::Interleaved1F1B: {
      const int total = m * chunks;
      if (m == stages) return total;  // Megatron: all forwards first when micro-batches == stages
      return std::min((stages - stage - 1) * 2 + (chunks - 1) * stages, total);
    }
  }
  return 0;
}

std::vector<PipelineStep> pipeline_steps(spec::PipelineSchedule schedule, int stage, int stages, int chunks, int m) {
  std::vector<PipelineStep> out;
  if (schedule == spec::PipelineSchedule::GPipe) {
    for (int i = 0; i < m; ++i) out.push_back({true, i, 0});
    for (int i = 0; i < m; ++i) out.push_back({false, i, 0});
    return out;
  }
  if (schedule == spec::PipelineSchedule::OneFOneB) {
    const int warm = warmup_steps(schedule, stage, stages, chunks, m);
    int f = 0, b = 0;
    for (int i = 0; i < warm; ++i) out.push_back({true, f++, 0});
    while (f < m) {
      out.push_back({true, f++, 0});
      out.push_back({false, b++, 0});
    }
    while (b < m) out.push_back({false, b++, 0});
    return out;
  }
  // Interleaved 1F1B (Megatron's forward_backward_pipelining_with_interleaving, micro-batch groups of
  // `stages`): virtual micro-batch k runs chunk (k / p) % v of micro-batch (k / (p v)) p + k % p;
  // backward visits chunks in reverse.
  const int p = stages, v = chunks, total = m * v;
  auto mb_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  const int warm = warmup_steps(schedule, stage, stages, chunks, m);
  int f = 0, b = 0;
  for (int i = 0; i < warm; ++i, ++f) out.push_back({true, mb_of(f), (f / p) % v});
  while (f < total) {
    out.push_back({true, mb_of(f), (f / p) % v});
    ++f;
    out.push_back({false, mb_of(b), v - 1 - (b / p) % v});
    ++b;
  }
  while (b < total) {
    out.push_back({false, mb_of(b), v - 1 - (b / p) % v});
    ++b;
  }
  return out;
}

}  // namespace stepsim::workload
