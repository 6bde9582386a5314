// The engine with a ContendedNetwork: a network double that times every transfer alone with the same
// CollectiveModel must reproduce the plain engine bit for bit; a network that carries one transfer at a time
// can only make the step longer.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <deque>
#include <map>

#include "stepsim/sim/contended_network.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::sim {
namespace {

// Every transfer on its own: end = start + the model's time. `serial` instead queues them one after another.
class DoubleNetwork final : public ContendedNetwork {
 public:
  DoubleNetwork(const cost::CollectiveModel& m, int gpus_per_node, bool serial)
      : model_(m), gpn_(gpus_per_node), serial_(serial) {}

  void start_collective(uint64_t tag, workload::CollType coll, uint64_t bytes, std::span<const int> ranks,
                        int64_t t) override {
    std::map<int, int> per_node;
    for (int r : ranks) ++per_node[r / gpn_];
    int rpn = 0;
    for (const auto& [node, k] : per_node) rpn = std::max(rpn, k);
    const workload::GroupGeometry g{static_cast<int>(ranks.size()), static_cast<int>(per_node.size()), rpn};
    add(tag, t, model_.collective_ns(coll, bytes, g));
  }
  void start_p2p(uint64_t tag, int src, int dst, uint64_t bytes, int64_t t) override {
    add(tag, t, model_.p2p_ns(bytes, src / gpn_ == dst / gpn_));
  }
  int64_t next_event_ns() const override { return pending_.empty() ? INT64_MAX : pending_.begin()->first.first; }
  void advance(int64_t t, std::vector<uint64_t>& done) override {
    while (!pending_.empty() && pending_.begin()->first.first <= t) {
      done.push_back(pending_.begin()->second);
      pending_.erase(pending_.begin());
    }
    ++advances;
  }
  int advances = 0;

 private:
  void add(uint64_t tag, int64_t t, int64_t d) {
    const int64_t begin = serial_ ? std::max(t, busy_until_) : t;
    busy_until_ = begin + d;
    pending_.emplace(std::pair{begin + d, seq_++}, tag);
  }
  const cost::CollectiveModel& model_;
  int gpn_;
  bool serial_;
  int64_t busy_until_ = 0;
  uint64_t seq_ = 0;
  std::map<std::pair<int64_t, uint64_t>, uint64_t> pending_;
};

SimResult run(const std::string& yaml, ContendedNetwork* net) {
  auto job = test::job_from_yaml(yaml);
  workload::Workload w = workload::build_megatron_workload(job);
  const auto compute = cost::make_roofline_model(stepsim::catalog::shipped().gpus.find(job.cluster.gpu), job.training.precision, test::shipped_efficiency(job.cluster.gpu));
  assign_compute_durations(w, *compute);
  const auto comm = make_collective_model(stepsim::catalog::shipped(), job);
  EngineOptions opt;
  opt.record_ranks = {0};
  opt.network = net;
  return simulate(w, *comm, opt);
}

TEST(EngineNetwork, IndependentNetworkReproducesThePlainEngine) {
  // TP 2 x PP 2 x DP 4 on nodes of 8: TP and DP collectives, pipeline send/recv across stages.
  const std::string yaml = test::small_gpt_yaml(2, 2, 4, 32);
  const SimResult plain = run(yaml, nullptr);
  const auto model = make_collective_model(stepsim::catalog::shipped(), test::job_from_yaml(yaml));
  DoubleNetwork net(*model, 8, false);
  const SimResult via = run(yaml, &net);
  EXPECT_GT(net.advances, 0);
  EXPECT_EQ(via.step_ns, plain.step_ns);
  EXPECT_EQ(via.finish_ns, plain.finish_ns);
  ASSERT_EQ(via.recorded.size(), 1u);
  ASSERT_EQ(via.recorded[0].ops.size(), plain.recorded[0].ops.size());
  for (size_t i = 0; i < via.recorded[0].ops.size(); ++i) {
    EXPECT_EQ(via.recorded[0].ops[i].end_ns, plain.recorded[0].ops[i].end_ns) << i;
  }
}

TEST(EngineNetwork, SerialNetworkOnlySlowsTheStep) {
  const std::string yaml = test::small_gpt_yaml(2, 2, 4, 32);
  const SimResult plain = run(yaml, nullptr);
  const auto model = make_collective_model(stepsim::catalog::shipped(), test::job_from_yaml(yaml));
  DoubleNetwork net(*model, 8, true);
  const SimResult serial = run(yaml, &net);
  EXPECT_GT(serial.step_ns, plain.step_ns);
}

}  // namespace
}  // namespace stepsim::sim
