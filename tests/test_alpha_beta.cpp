// Alpha-beta collective model: closed forms on hand-computed cases, bus bandwidth, monotonicity, and one
// comparison with a public nccl-tests measurement.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/op.hpp"

#ifndef STEPSIM_SHARED_DIR
#define STEPSIM_SHARED_DIR "../shared"
#endif

namespace {

using stepsim::InputError;
using stepsim::cost::GroupGeometry;
using stepsim::cost::make_alpha_beta_model;
using stepsim::spec::ClusterSpec;
using stepsim::workload::bus_factor;
using stepsim::workload::CollType;

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kMiB = 1ull << 20;
constexpr CollType kAllColls[] = {CollType::AllReduce, CollType::AllGather, CollType::ReduceScatter,
                                  CollType::AllToAll,  CollType::Broadcast, CollType::Reduce};

ClusterSpec cluster(double intra_GBps = 450, double intra_us = 1, double inter_GBps = 50, double inter_us = 5) {
  ClusterSpec c;
  c.intra_node = {intra_GBps, intra_us, ""};
  c.inter_node = {inter_GBps, inter_us, "fat-tree"};
  return c;
}

GroupGeometry geo(int ranks, int nodes, int per_node) { return GroupGeometry{ranks, nodes, per_node}; }

double ns(double seconds) { return seconds * 1e9; }

TEST(AlphaBeta, RingExchangeIsOneTransferOverTheSlowestHop) {
  // CollType::SendRecv (context parallelism's K/V ring step): every member sends S to its successor at once.
  const auto m = make_alpha_beta_model(cluster());
  // One node: 1 us + 1 GiB / 450 GB/s; across nodes the NIC hop paces it: 5 us + 1 GiB / 50 GB/s.
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::SendRecv, kGiB, geo(8, 1, 8))),
              ns(1e-6 + kGiB / 450e9), 1.0);
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::SendRecv, kGiB, geo(16, 2, 8))),
              ns(5e-6 + kGiB / 50e9), 1.0);
  EXPECT_EQ(m->collective_ns(CollType::SendRecv, kGiB, geo(1, 1, 1)), 0);
}

TEST(AlphaBeta, RingAllReduceOnOneNode) {
  const auto m = make_alpha_beta_model(cluster());
  // 1 GiB on 8 GPUs at 450 GB/s, 1 us per step: 2*7/8*S/450e9 + 14 * 1 us = 4,189,662.6 ns.
  const double expected = ns(2.0 * 7 / 8 * kGiB / 450e9 + 14 * 1e-6);
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::AllReduce, kGiB, geo(8, 1, 8))), expected, 1.0);
  EXPECT_NEAR(expected, 4189662.6, 0.1);
}

TEST(AlphaBeta, RingAllReduceOnFourNodesOfEight) {
  const auto m = make_alpha_beta_model(cluster());
  // n=32, N=4, k=8: bus bandwidth min(450, 8 x 50) = 400 GB/s; of the 62 steps, 2*(4-1) = 6 cross nodes.
  const double ring = ns(2.0 * 31 / 32 * kGiB / 400e9 + (56 * 1e-6 + 6 * 5e-6));
  const double tree = ns(2 * (7 * 1e-6 + 2 * 5e-6) + 2.0 * kGiB / 400e9);
  ASSERT_LT(ring, tree);  // large messages: the ring's 2(n-1)/n < 2 wins
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::AllReduce, kGiB, geo(32, 4, 8))), ring, 1.0);
  EXPECT_NEAR(ring, 5286937.0, 0.1);
}

TEST(AlphaBeta, TreeAllReduceWinsForSmallMessagesAcrossNodes) {
  const auto m = make_alpha_beta_model(cluster());
  const uint64_t S = 1024;
  const double tree = ns(2 * (7 * 1e-6 + 2 * 5e-6) + 2.0 * S / 400e9);    // 34 us of latency
  const double ring = ns(56 * 1e-6 + 6 * 5e-6 + 2.0 * 31 / 32 * S / 400e9);  // 86 us of latency
  ASSERT_LT(tree, ring);
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::AllReduce, S, geo(32, 4, 8))), tree, 1.0);
  // One rank per node (a DP group across 16 nodes): bus bandwidth is one NIC; tree depth ceil(log2 16) = 4.
  const double tree16 = ns(2 * (4 * 5e-6) + 2.0 * S / 50e9);
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::AllReduce, S, geo(16, 16, 1))), tree16, 1.0);
}

TEST(AlphaBeta, AllGatherIsHalfARingAllReduceLessLatency) {
  const auto m = make_alpha_beta_model(cluster());
  for (const auto& [g, intra_steps_ag, inter_steps_ag] :
       {std::tuple{geo(8, 1, 8), 7, 0}, std::tuple{geo(32, 4, 8), 28, 3}}) {
    const double lat_ag = intra_steps_ag * 1e3 + inter_steps_ag * 5e3;  // ns
    const double ag = static_cast<double>(m->collective_ns(CollType::AllGather, kGiB, g));
    const double ar = static_cast<double>(m->collective_ns(CollType::AllReduce, kGiB, g));
    EXPECT_NEAR(ag - lat_ag, (ar - 2 * lat_ag) / 2, 1.0);
    EXPECT_EQ(m->collective_ns(CollType::ReduceScatter, kGiB, g), m->collective_ns(CollType::AllGather, kGiB, g));
  }
}

TEST(AlphaBeta, GroupsOfOneAndEmptyMessagesCostNothing) {
  const auto m = make_alpha_beta_model(cluster());
  for (CollType c : kAllColls) {
    EXPECT_EQ(m->collective_ns(c, kGiB, geo(1, 1, 1)), 0);
    EXPECT_EQ(m->collective_ns(c, 0, geo(8, 1, 8)), 0);
    EXPECT_GE(m->collective_ns(c, 1, geo(2, 1, 2)), 1);
  }
  EXPECT_EQ(m->p2p_ns(0, true), 0);
}

TEST(AlphaBeta, PointToPoint) {
  const auto m = make_alpha_beta_model(cluster());
  EXPECT_EQ(m->p2p_ns(kMiB, true), std::llround(ns(1e-6 + kMiB / 450e9)));   // 3,330 ns
  EXPECT_EQ(m->p2p_ns(kMiB, false), std::llround(ns(5e-6 + kMiB / 50e9)));   // 25,972 ns
  EXPECT_EQ(m->p2p_ns(kMiB, true), 3330);
  EXPECT_EQ(m->p2p_ns(kMiB, false), 25972);
}

TEST(AlphaBeta, AllToAllAndBroadcast) {
  const auto m = make_alpha_beta_model(cluster());
  // One node: 7/8 of S over NVLink, one latency per peer.
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::AllToAll, kGiB, geo(8, 1, 8))),
              ns(7.0 / 8 * kGiB / 450e9 + 7e-6), 1.0);
  // Two nodes of 8: 7/16 of S over NVLink and 8/16 over the rank's NIC, concurrently; the NIC is slower.
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::AllToAll, kGiB, geo(16, 2, 8))),
              ns(8.0 / 16 * kGiB / 50e9 + 7 * 1e-6 + 8 * 5e-6), 1.0);
  // Broadcast/reduce: pipelined chain, S / bus bandwidth + one latency per hop.
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::Broadcast, kGiB, geo(8, 1, 8))),
              ns(1.0 * kGiB / 450e9 + 7e-6), 1.0);
  EXPECT_NEAR(static_cast<double>(m->collective_ns(CollType::Reduce, kGiB, geo(32, 4, 8))),
              ns(1.0 * kGiB / 400e9 + 28 * 1e-6 + 3 * 5e-6), 1.0);
}

// nccl-tests: busbw = S * bus_factor / time. For large S the model's busbw is its bus bandwidth.
TEST(AlphaBeta, LargeMessageBusBandwidthIsTheModelBandwidth) {
  const auto m = make_alpha_beta_model(cluster());
  const uint64_t S = 64 * kGiB;
  struct Case {
    GroupGeometry g;
    double bus_GBps;
  };
  for (const Case& c : {Case{geo(8, 1, 8), 450}, Case{geo(32, 4, 8), 400}, Case{geo(16, 16, 1), 50},
                        Case{geo(8, 2, 4), 200}}) {
    for (CollType coll : {CollType::AllReduce, CollType::AllGather, CollType::ReduceScatter, CollType::Broadcast,
                          CollType::Reduce}) {
      const double t = static_cast<double>(m->collective_ns(coll, S, c.g)) * 1e-9;
      const double busbw = S * bus_factor(coll, c.g.ranks) / t / 1e9;
      EXPECT_NEAR(busbw, c.bus_GBps, c.bus_GBps * 0.005) << static_cast<int>(coll) << " n=" << c.g.ranks;
    }
  }
  // All-to-all on one node runs at NVLink speed.
  const double t = static_cast<double>(m->collective_ns(CollType::AllToAll, S, geo(8, 1, 8))) * 1e-9;
  EXPECT_NEAR(S * bus_factor(CollType::AllToAll, 8) / t / 1e9, 450, 450 * 0.005);
}

TEST(AlphaBeta, MonotoneInSizeAndBandwidth) {
  const std::vector<GroupGeometry> geos{geo(2, 1, 2), geo(8, 1, 8), geo(16, 2, 8), geo(64, 8, 8), geo(16, 16, 1)};
  const auto m = make_alpha_beta_model(cluster());
  for (CollType c : kAllColls) {
    for (const auto& g : geos) {
      int64_t prev = 0;
      for (uint64_t s = 1; s <= (1ull << 36); s *= 2) {
        const int64_t t = m->collective_ns(c, s, g);
        EXPECT_GE(t, prev) << static_cast<int>(c) << " n=" << g.ranks << " S=" << s;
        prev = t;
      }
      for (uint64_t s : {uint64_t{4096}, 64 * kMiB}) {
        int64_t prev_intra = INT64_MAX, prev_inter = INT64_MAX;
        for (double bw = 10; bw <= 2000; bw *= 1.5) {
          const int64_t ti = make_alpha_beta_model(cluster(bw, 1, 50, 5))->collective_ns(c, s, g);
          const int64_t tn = make_alpha_beta_model(cluster(450, 1, bw, 5))->collective_ns(c, s, g);
          EXPECT_LE(ti, prev_intra);
          EXPECT_LE(tn, prev_inter);
          prev_intra = ti;
          prev_inter = tn;
        }
      }
    }
  }
  int64_t prev = 0;
  for (uint64_t s = 1; s <= (1ull << 36); s *= 2) {
    EXPECT_GE(m->p2p_ns(s, false), prev);
    prev = m->p2p_ns(s, false);
  }
}

TEST(AlphaBeta, RejectsBadClusterLinks) {
  EXPECT_THROW(make_alpha_beta_model(cluster(0)), InputError);
  EXPECT_THROW(make_alpha_beta_model(cluster(450, -1)), InputError);
  try {
    make_alpha_beta_model(cluster(450, 1, 0, 5));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.inter_node.bandwidth_Gbps"), std::string::npos) << e.what();
  }
}

// --- comparison with ../shared/data/nccl-tests/a100-8gpu-all_reduce.csv -----------------------------------------

struct Measured {
  uint64_t bytes;
  double time_us;
  double busbw_GBps;
};

// Splits one CSV line, honouring double quotes (the GPU column holds commas); the file has CRLF line ends.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else if (c != '\r') {
      out.back().push_back(c);
    }
  }
  return out;
}

std::vector<Measured> read_a100_allreduce() {
  std::ifstream in(std::string(STEPSIM_SHARED_DIR) + "/data/nccl-tests/a100-8gpu-all_reduce.csv");
  std::vector<Measured> rows;
  std::string line;
  if (!std::getline(in, line)) return rows;
  const auto head = split_csv(line);
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < head.size(); ++i)
      if (head[i] == name) return i;
    ADD_FAILURE() << "no column " << name;
    return size_t{0};
  };
  const size_t c_bytes = col("message_size_bytes"), c_time = col("time_us"), c_bus = col("busbw_GBps"),
               c_n = col("num_gpus");
  while (std::getline(in, line)) {
    const auto f = split_csv(line);
    if (f.size() != head.size() || std::stoi(f[c_n]) != 8) continue;
    rows.push_back({std::stoull(f[c_bytes]), std::stod(f[c_time]), std::stod(f[c_bus])});
  }
  return rows;
}

// Intra bandwidth = the file's busbw plateau (its largest busbw, 234.89 GB/s at 16 GiB); latency left at the
// ClusterSpec default (1 us). Nothing else is fitted.
double relative_error_at(const Measured& r, double plateau_GBps) {
  const auto m = make_alpha_beta_model(cluster(plateau_GBps, 1.0));
  const double model_us = static_cast<double>(m->collective_ns(CollType::AllReduce, r.bytes, geo(8, 1, 8))) / 1e3;
  return (model_us - r.time_us) / r.time_us;
}

TEST(AlphaBetaVsNcclTests, A100AllReduceWithin10PercentFrom1GiB) {
  const auto rows = read_a100_allreduce();
  ASSERT_FALSE(rows.empty()) << "no " STEPSIM_SHARED_DIR "/data/nccl-tests/a100-8gpu-all_reduce.csv";
  double plateau = 0;
  for (const auto& r : rows) plateau = std::max(plateau, r.busbw_GBps);
  EXPECT_NEAR(plateau, 234.89, 0.01);
  const auto m = make_alpha_beta_model(cluster(plateau, 1.0));
  for (const auto& r : rows) {
    const double err = relative_error_at(r, plateau);
    std::printf("  all_reduce 8xA100 %12llu B: measured %10.1f us, model %+6.1f%%\n",
                static_cast<unsigned long long>(r.bytes), r.time_us, 100 * err);
    if (r.bytes >= kGiB) {
      EXPECT_LT(std::abs(err), 0.10) << r.bytes;
    }
    if (r.bytes == kGiB) {  // busbw at 1 GiB: model vs measured 229.04 GB/s
      const double t = static_cast<double>(m->collective_ns(CollType::AllReduce, kGiB, geo(8, 1, 8))) * 1e-9;
      const double busbw = kGiB * bus_factor(CollType::AllReduce, 8) / t / 1e9;
      EXPECT_NEAR(busbw, r.busbw_GBps, 0.10 * r.busbw_GBps);
    }
  }
}

// Below 1 GiB the alpha-beta model is optimistic: NCCL reaches its plateau only from ~1 GiB (pipeline fill
// of the chunked ring), which one bandwidth term cannot express. This pins the size of that known gap
// (model 10-30% faster at 64-256 MiB) so that the white-box NCCL model has a baseline to beat.
TEST(AlphaBetaVsNcclTests, A100AllReduceIsOptimisticBelow1GiB) {
  const auto rows = read_a100_allreduce();
  ASSERT_FALSE(rows.empty());
  double plateau = 0;
  for (const auto& r : rows) plateau = std::max(plateau, r.busbw_GBps);
  int checked = 0;
  for (const auto& r : rows) {
    if (r.bytes >= 64 * kMiB && r.bytes <= 256 * kMiB) {
      const double err = relative_error_at(r, plateau);
      EXPECT_LT(err, -0.10) << r.bytes;
      EXPECT_GT(err, -0.30) << r.bytes;
      ++checked;
    }
  }
  EXPECT_GE(checked, 2);
}

}  // namespace
