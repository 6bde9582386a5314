// Issue 45 item 5: the flow model is built on the same network description as the nccl model and agrees with it
// where no link is shared: NCCL's ring collectives and all-to-all on the systems of the development sweeps
// (shared/data/nccl-tests/published_sweeps.csv: a DGX H100 node, an H100 cluster as 10 x 1, 2 x 8 and 10 x 8, an
// A100-40GB node), plus a B200 pair.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "stepsim/api/comm.hpp"

namespace stepsim {
namespace {

double time_us(const std::string& model, const std::string& gpu, int gpus, int per_node, const std::string& coll,
               const std::string& size) {
  api::CommOptions o;
  o.collective = coll;
  o.gpus = gpus;
  o.gpus_per_node = per_node;
  o.sizes = size;
  o.model = model;
  o.store = "none";
  // NCCL's ring, which the flow model runs; all-to-all has no algorithm choice.
  if (model == "nccl" && coll != "alltoall") o.algo = "ring";
  o.overrides = {"cluster.gpu=" + gpu};
  return api::comm(o).rows.at(0).time_us;
}

// Bandwidth-bound sizes, where both models move the same bytes over the same links: within 7 % (the rest is NCCL's
// per-step latencies, which the flow model's hops do not repeat, and the Simple protocol's 0.96 on a link). With the
// nominal link rates the flow model was 18-21 % faster than the nccl model on every single node (NVLink carries
// 20.6 of an NVLink4 link's 25 GB/s to NCCL; data/nccl.yaml intra_efficiency).
TEST(FlowAgreement, FlowAndNcclAgreeWhereNoLinkIsShared) {
  struct System {
    std::string gpu;
    int gpus, per_node;
  };
  for (const System& s : {System{"H100-SXM", 8, 8}, System{"H100-SXM", 10, 1}, System{"H100-SXM", 16, 8},
                          System{"H100-SXM", 80, 8}, System{"A100-40GB", 8, 8}, System{"B200", 16, 8}}) {
    for (const std::string coll : {"all_gather", "reduce_scatter", "all_reduce", "alltoall"}) {
      for (const std::string size : {"1G", "4G"}) {
        const std::string what = s.gpu + " " + std::to_string(s.gpus) + "x" + std::to_string(s.per_node) + " " +
                                 coll + " " + size;
        const double nccl = time_us("nccl", s.gpu, s.gpus, s.per_node, coll, size);
        const double flow = time_us("flow", s.gpu, s.gpus, s.per_node, coll, size);
        EXPECT_LT(std::fabs(flow / nccl - 1), 0.07) << what << ": nccl " << nccl << " us, flow " << flow << " us";
      }
    }
  }
}

}  // namespace
}  // namespace stepsim
