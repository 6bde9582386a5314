// cluster.nvlink_domain (issue 44 item 2): an NVLink domain larger than a host (GB200 NVL72: 18 trays of 4 GPUs). The
// job spreads over the fewest domains, the same whole trays in each; the communication node is the job's GPUs in one
// domain, the host stays the node for failures; what does not split evenly is refused by key.
#include <gtest/gtest.h>

#include <string>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/job/cluster_rates.hpp"
#include "stepsim/job/nvlink_domain.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace nvlink_domain_test {

// A small dense model under TP 8 on GB200s; `cluster` continues the cluster map.
std::string gb200_yaml(int gpus, const std::string& cluster) {
  return "model: {name: tiny, num_layers: 4, hidden_size: 4096, num_attention_heads: 32, ffn_hidden_size: 14336,"
         " activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: 4096}\n"
         "parallelism: {tensor: 8}\n"
         "training: {micro_batch_size: 1, global_batch_size: " + std::to_string(gpus / 8) + "}\n"
         "simulation: {host_time_scale: 0}\n"
         "cluster: {gpu: GB200, num_gpus: " + std::to_string(gpus) + ", " + cluster + "}\n";
}

bool has_nic_note(const sim::Simulation& s) {
  for (const std::string& n : s.notes) {
    if (n.find("traffic between these nodes goes over the NICs") != std::string::npos) return true;
  }
  return false;
}

TEST(NvlinkDomain, ATrayJobOnTwoRacksKeepsItsTensorGroupsOnNvlink) {
  // 128 GPUs of 4-GPU trays on NVL72 racks: ceil(128 / 72) = 2 domains, 64 GPUs (16 trays) in each.
  const spec::JobSpec racks = test::job_from_yaml(gb200_yaml(128, "gpus_per_node: 4, nvlink_domain: 72"));
  EXPECT_EQ(racks.cluster.gpus_per_node, 64);
  EXPECT_EQ(racks.cluster.gpus_per_host(), 4);
  EXPECT_EQ(racks.cluster.nvlink_domain, 72);
  // The same step as the job written with 64 GPUs per node (what validate wrote for such rows before), and no note.
  const sim::Simulation a = sim::run_simulation(catalog::shipped(), racks, {0});
  const sim::Simulation b =
      sim::run_simulation(catalog::shipped(), test::job_from_yaml(gb200_yaml(128, "gpus_per_node: 64")), {0});
  EXPECT_EQ(a.result.step_ns, b.result.step_ns);
  EXPECT_FALSE(has_nic_note(a));
  // Trays without the domain: TP 8 spans two trays over the NICs, slower, and the note says how to describe the rack.
  const sim::Simulation trays =
      sim::run_simulation(catalog::shipped(), test::job_from_yaml(gb200_yaml(128, "gpus_per_node: 4")), {0});
  EXPECT_GT(trays.result.step_ns, a.result.step_ns);
  EXPECT_TRUE(has_nic_note(trays));
}

TEST(NvlinkDomain, HostFiguresStayPerHost) {
  // Four NICs per 4-GPU tray: one per GPU, whether the node is the tray or the domain's 64 GPUs.
  const std::string nics = "network: {nics_per_node: 4, nic_Gbps: 400}";
  const spec::JobSpec racks = test::job_from_yaml(gb200_yaml(128, "gpus_per_node: 4, nvlink_domain: 72, " + nics));
  EXPECT_EQ(racks.cluster.network.nics_per_node, 64);
  const spec::JobSpec trays = test::job_from_yaml(gb200_yaml(128, "gpus_per_node: 4, " + nics));
  EXPECT_DOUBLE_EQ(spec::inter_node_GBps_per_gpu(racks.cluster), spec::inter_node_GBps_per_gpu(trays.cluster));
  EXPECT_DOUBLE_EQ(spec::inter_node_GBps_per_gpu(racks.cluster), 50.0);
  // Failures are per host: 128 GPUs are 32 trays.
  const std::string job = test::write_temp("nvl-racks.yaml", gb200_yaml(128, "gpus_per_node: 4, nvlink_domain: 72"));
  const auto r = test::run_cli("reliability " + job + " --steps 1000 --step-time 10");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("stepsim reliability: 32 nodes"), std::string::npos) << r.output;
}

TEST(NvlinkDomain, AnotherGpuCountSplitsAgain) {
  spec::JobSpec j = test::job_from_yaml(gb200_yaml(128, "gpus_per_node: 4, nvlink_domain: 72"));
  spec::set_num_gpus(j.cluster, 144);  // two full racks
  EXPECT_EQ(j.cluster.gpus_per_node, 72);
  spec::set_num_gpus(j.cluster, 256);  // four racks of 64
  EXPECT_EQ(j.cluster.gpus_per_node, 64);
  spec::set_num_gpus(j.cluster, 48);  // inside one rack
  EXPECT_EQ(j.cluster.gpus_per_node, 48);
  EXPECT_EQ(j.cluster.gpus_per_host(), 4);
}

TEST(NvlinkDomain, WhatDoesNotSplitEvenlyIsRefusedByKey) {
  EXPECT_NE(test::job_error(gb200_yaml(152, "gpus_per_node: 4, nvlink_domain: 72"))
                .find("key cluster.num_gpus: 152 GPUs do not split evenly over the 3 NVLink domains of 72 that hold "
                      "them, in whole nodes of cluster.gpus_per_node 4 (uneven domains are not modelled)"),
            std::string::npos);
  EXPECT_NE(test::job_error(gb200_yaml(128, "gpus_per_node: 4, nvlink_domain: 70"))
                .find("key cluster.nvlink_domain: 70 must be whole nodes of cluster.gpus_per_node 4"),
            std::string::npos);
  EXPECT_NE(test::job_error(gb200_yaml(128, "gpus_per_node: 8, nvlink_domain: 4")).find("key cluster.nvlink_domain"),
            std::string::npos);
  EXPECT_NE(test::job_error(gb200_yaml(128, "gpus_per_node: 4, nvlink_domain: 72, network: {node: ring}"))
                .find("needs cluster.network.node nvswitch"),
            std::string::npos);
  // The domain equal to the node is the default: nothing changes.
  const spec::JobSpec same = test::job_from_yaml(gb200_yaml(128, "gpus_per_node: 8, nvlink_domain: 8"));
  EXPECT_EQ(same.cluster.gpus_per_node, 8);
  EXPECT_EQ(same.cluster.nvlink_domain, 0);
}

}  // namespace nvlink_domain_test
}  // namespace stepsim
