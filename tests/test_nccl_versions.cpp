// NCCL's tuning constants per release (issue 45 item 2): data/nccl-tuner.yaml `versions`, read from
// src/graph/tuning.cc at each release commit, picked by simulation.nccl_version / comm --nccl-version.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "stepsim/api/comm.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/catalog/nccl_tuner_table.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

// Indexes as NcclTunerTable keeps them (NCCL's order).
constexpr int kTree = 0, kCollnetDirect = 2, kNvls = 4, kNvlsTree = 5, kSimple = 2;
constexpr int kNvlink = 0, kPci = 1, kNet = 2;

bool absent(const cost::NcclTunerTable& t, const std::string& a) {
  return std::find(t.absent_algorithms.begin(), t.absent_algorithms.end(), a) != t.absent_algorithms.end();
}

// Each value below is what tuning.cc of that release holds (checked against the release commits of NVIDIA/nccl).
TEST(NcclVersions, EachReleaseHasItsOwnLatencies) {
  const cost::NcclTunerTable& newest = catalog::shipped().nccl_tuner;
  EXPECT_EQ(newest.version, "2.30.7");
  EXPECT_DOUBLE_EQ(newest.hw_latency_us[kNet][kNvlsTree][kSimple], 20.9);
  EXPECT_DOUBLE_EQ(newest.for_version("2.28.9", "k").hw_latency_us[kNet][kNvlsTree][kSimple], 20.9);

  const cost::NcclTunerTable v227 = newest.for_version("2.27.7", "k");
  EXPECT_DOUBLE_EQ(v227.hw_latency_us[kNet][kNvlsTree][kSimple], 14);
  EXPECT_DOUBLE_EQ(v227.hw_latency_us[kNvlink][kTree][kSimple], 4.0);
  EXPECT_FALSE(absent(v227, "pat"));

  const cost::NcclTunerTable v221 = newest.for_version("2.21.5-1", "k");  // a release tag as NCCL writes it
  EXPECT_EQ(v221.version, "2.21.5");
  EXPECT_DOUBLE_EQ(v221.hw_latency_us[kNet][kNvlsTree][kSimple], 14);
  EXPECT_DOUBLE_EQ(v221.hw_latency_us[kNvlink][kTree][kSimple], 28);
  EXPECT_DOUBLE_EQ(v221.hw_latency_us[kPci][kTree][kSimple], 28);
  EXPECT_DOUBLE_EQ(v221.base_latency_us[kTree][kSimple], 0);
  EXPECT_DOUBLE_EQ(v221.hw_latency_us[kNvlink][kNvls][kSimple], 25);
  EXPECT_TRUE(absent(v221, "pat"));

  EXPECT_DOUBLE_EQ(newest.for_version("2.19.4", "k").hw_latency_us[kNvlink][kNvls][kSimple], 23);

  const cost::NcclTunerTable v218 = newest.for_version("2.18.3", "k");
  EXPECT_DOUBLE_EQ(v218.base_latency_us[kNvls][kSimple], 23);
  EXPECT_DOUBLE_EQ(v218.hw_latency_us[kNvlink][kNvls][kSimple], 0);
  EXPECT_DOUBLE_EQ(v218.hw_latency_us[kNet][kNvlsTree][kSimple], 19);
  EXPECT_DOUBLE_EQ(v218.hw_latency_us[kNvlink][kTree][kSimple], 4);  // 2.19's 28 undone
  EXPECT_DOUBLE_EQ(v218.hw_latency_us[kNet][kCollnetDirect][kSimple], 10.7);

  const cost::NcclTunerTable v217 = newest.for_version("2.17.1", "k");
  EXPECT_DOUBLE_EQ(v217.base_latency_us[kNvls][kSimple], 40);
  EXPECT_DOUBLE_EQ(v217.hw_latency_us[kNet][1][kSimple], 9.6);  // Ring Simple across nodes
  EXPECT_TRUE(absent(v217, "nvls_tree"));
  EXPECT_FALSE(absent(v217, "nvls"));
  const cost::NcclTunerTable v215 = newest.for_version("2.15.5", "k");
  EXPECT_TRUE(absent(v215, "nvls"));
  EXPECT_TRUE(absent(v215, "pat"));

  std::string note;
  newest.for_version("2.13.4", "simulation.nccl_version", &note);
  EXPECT_NE(note.find("tabulated back to 2.14.0 (data/nccl-tuner.yaml versions); 2.16.5's are used"),
            std::string::npos)
      << note;
  note.clear();
  newest.for_version("2.14.3", "simulation.nccl_version", &note);
  EXPECT_TRUE(note.empty()) << note;
  EXPECT_THROW(newest.for_version("two", "k"), InputError);
}

// Two nodes of 8 H20 with NVLS-tree forced, an 8-byte all-reduce: NCCL's latency is intraLat + 2 log2(nodes) interLat,
// so 2.21.5 (NET NVLSTree 14 us) is 2 x (20.9 - 14) = 13.8 us below 2.30.7. (The development data's 2 x 8 H20 on NCCL
// 2.21.5 measured 46-48 us, data/nccl-tests-public nccl-1244: 70.2 us predicted with 2.30.7's constants, 56.4 with its
// own.)
TEST(NcclVersions, TheReleaseAskedForSetsTheTime) {
  auto us = [](const std::string& version) {
    api::CommOptions o;
    o.collective = "all_reduce";
    o.gpus = 16;
    o.sizes = "8";
    o.algo = "nvls_tree";
    o.store = "none";
    o.nccl_version = version;
    o.overrides = {"cluster.gpu=H20"};
    return api::comm(o).rows.at(0).time_us;
  };
  EXPECT_NEAR(us("") - us("2.21.5"), 13.8, 0.05);
  EXPECT_NEAR(us("2.28.9"), us(""), 1e-9);
}

// PAT came with 2.23: an older release never picks it, and forcing it is refused by name.
TEST(NcclVersions, AnAlgorithmTheReleaseLacksIsNeverUsed) {
  api::CommOptions o;
  o.collective = "all_gather";
  o.gpus = 4;
  o.gpus_per_node = 1;
  o.sizes = "1M";
  o.store = "none";
  EXPECT_EQ(api::comm(o).rows.at(0).algorithm, "pat");
  o.nccl_version = "2.21.5";
  EXPECT_NE(api::comm(o).rows.at(0).algorithm, "pat");
  o.algo = "pat";
  try {
    api::comm(o);
    ADD_FAILURE() << "PAT was forced on NCCL 2.21.5";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL 2.21.5 (the NCCL version asked for) has no pat"), std::string::npos)
        << e.what();
  }
  // A version that does not parse is refused by the flag, or by the job's key with its file.
  o.algo = "auto";
  o.nccl_version = "latest";
  try {
    api::comm(o);
    ADD_FAILURE() << "--nccl-version latest was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--nccl-version: 'latest' is not an NCCL version"), std::string::npos)
        << e.what();
  }
  const std::string job = test::with_simulation(test::small_gpt_yaml(1, 1, 8, 8), "nccl_version: latest");
  EXPECT_NE(test::job_error(job).find("key simulation.nccl_version: must be an NCCL release"), std::string::npos)
      << test::job_error(job);
}

}  // namespace
}  // namespace stepsim
