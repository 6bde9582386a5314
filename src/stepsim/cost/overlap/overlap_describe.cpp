#include "stepsim/cost/overlap/overlap_describe.hpp"

#include <algorithm>

namespace stepsim::cost {

OverlapCompute describe_overlap_compute(const workload::Op& op, double peak_flops, double hbm_Bps) {
  OverlapCompute c;
  c.category = op.category;
  c.isolated_us = static_cast<double>(op.duration_ns) * 1e-3;
  c.comm_sms = op.comm_sms;
  if (op.duration_ns > 0) {
    const double sec = static_cast<double>(op.duration_ns) * 1e-9;
    if (peak_flops > 0) c.sm_throughput_pct = std::min(100.0, 100.0 * op.flops / sec / peak_flops);
    if (hbm_Bps > 0) c.dram_throughput_pct = std::min(100.0, 100.0 * static_cast<double>(op.bytes) / sec / hbm_Bps);
    c.memory_throughput_pct = c.dram_throughput_pct;
  }
  return c;
}

OverlapComm describe_overlap_comm(const workload::Op& c, const CollectiveModel& comm, const GroupGeometry& geo) {
  OverlapComm m;
  m.kind = c.kind;
  m.coll = c.coll;
  m.group = c.group;
  if (c.kind == workload::OpKind::P2P) {
    m.bytes = std::max({c.send_prev, c.send_next, c.recv_prev, c.recv_next});
    m.algorithm = Algorithm::Direct;
    return m;
  }
  m.bytes = c.bytes;
  const CollectiveEstimate e = comm.estimate(c.coll, c.bytes, geo, Algorithm::Auto);
  m.algorithm = e.algorithm;
  m.protocol = e.protocol;
  m.channels = e.channels;
  return m;
}

}  // namespace stepsim::cost
