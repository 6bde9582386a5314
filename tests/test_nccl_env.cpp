// The NCCL environment (issue 45 item 2): cluster.nccl_env and `comm --env NAME=VALUE` change the nccl model as the
// variables change NCCL: NCCL_ALGO / NCCL_PROTO lists (^ excludes), NCCL_NVLS_ENABLE, NCCL_MIN/MAX_NCHANNELS and
// NCCL_BUFFSIZE; other NCCL_* variables are named in a note, anything else is refused.
#include <gtest/gtest.h>

#include <string>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/cost/collective/nccl_model.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/job/cluster_rates.hpp"
#include "stepsim/job/nccl_env.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace nccl_env_test {

std::string error_of(const std::vector<std::pair<std::string, std::string>>& vars) {
  try {
    spec::parse_nccl_env(vars, "cluster.nccl_env");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(NcclEnv, VariablesReadAsNcclReadsThem) {
  spec::NcclEnv e = spec::parse_nccl_env({{"NCCL_ALGO", "Ring,tree"}, {"NCCL_PROTO", "^LL128"}}, "cluster.nccl_env");
  EXPECT_EQ(e.algorithms, (std::vector<std::string>{"ring", "tree"}));
  EXPECT_EQ(e.protocols, (std::vector<std::string>{"LL", "Simple"}));
  e = spec::parse_nccl_env({{"NCCL_ALGO", "^NVLS,NVLSTree"}, {"NCCL_NVLS_ENABLE", "0"}, {"NCCL_MAX_NCHANNELS", "8"},
                            {"NCCL_BUFFSIZE", "8388608"}, {"NCCL_IB_HCA", "mlx5_0"}},
                           "cluster.nccl_env");
  EXPECT_EQ(e.algorithms, (std::vector<std::string>{"ring", "tree", "pat", "collnet_direct", "collnet_chain"}));
  EXPECT_TRUE(e.nvls_disabled);
  EXPECT_EQ(e.max_channels, 8);
  EXPECT_EQ(e.buffsize, 8388608);
  EXPECT_EQ(e.unmodelled, (std::vector<std::string>{"NCCL_IB_HCA"}));
  EXPECT_EQ(spec::nccl_env_text(e).substr(0, 32), "NCCL_ALGO=^NVLS,NVLSTree NCCL_NV");

  EXPECT_NE(error_of({{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}).find("not an NCCL variable"), std::string::npos);
  EXPECT_NE(error_of({{"NCCL_ALGO", "Rang"}}).find("cluster.nccl_env.NCCL_ALGO: unknown 'Rang'"), std::string::npos);
  EXPECT_NE(error_of({{"NCCL_ALGO", "allreduce:ring;allgather:tree"}}).find("per-collective lists"), std::string::npos);
  EXPECT_NE(error_of({{"NCCL_PROTO", "LL256"}}).find("NCCL_PROTO: unknown 'LL256'"), std::string::npos);
  EXPECT_NE(error_of({{"NCCL_MIN_NCHANNELS", "16"}, {"NCCL_MAX_NCHANNELS", "4"}}).find("above NCCL_MAX_NCHANNELS 4"),
            std::string::npos);
  EXPECT_NE(error_of({{"NCCL_MAX_NCHANNELS", "0"}}).find("must be a whole number from 1 to 64"), std::string::npos);
}

// One 8-GPU H100 node (NVSwitch: NVLS available), the nccl model with data/nccl.yaml's parameters.
cost::CollectiveEstimate all_reduce(const std::string& env_yaml, uint64_t bytes) {
  const spec::ClusterSpec c = spec::load_cluster(catalog::shipped().gpus, "", 8, 8,
                                                 env_yaml.empty() ? std::vector<std::string>{}
                                                                  : std::vector<std::string>{env_yaml});
  const auto model = cost::make_nccl_model(catalog::shipped(), c);
  return model->estimate(workload::CollType::AllReduce, bytes, {8, 1, 8});
}

TEST(NcclEnv, TheModelChoosesOnlyWhatTheVariablesAllow) {
  const uint64_t gib = uint64_t{1} << 30;
  const cost::CollectiveEstimate free = all_reduce("", gib);
  EXPECT_EQ(free.algorithm, cost::Algorithm::Nvls);  // NCCL's choice on an NVSwitch node at 1 GiB
  const cost::CollectiveEstimate ring = all_reduce("cluster.nccl_env.NCCL_ALGO=Ring", gib);
  EXPECT_EQ(ring.algorithm, cost::Algorithm::Ring);
  EXPECT_GT(ring.ns, free.ns);
  // NVLS off, or excluded by name: the same ring.
  EXPECT_EQ(all_reduce("cluster.nccl_env.NCCL_NVLS_ENABLE=0", gib).ns, ring.ns);
  EXPECT_EQ(all_reduce("cluster.nccl_env.NCCL_ALGO=^NVLS", gib).ns, ring.ns);
  // A protocol list: at 1 MiB NCCL's tuner takes LL; with LL excluded it takes another.
  EXPECT_EQ(all_reduce("cluster.nccl_env.NCCL_ALGO=Ring", 1 << 20).protocol, cost::Protocol::LL);
  EXPECT_NE(all_reduce("cluster.nccl_env.NCCL_PROTO=^LL", 1 << 20).protocol, cost::Protocol::LL);
  // Fewer channels drive less of the links: a 4-channel ring is slower than the 16-channel one.
  const cost::CollectiveEstimate four = all_reduce("cluster.nccl_env={NCCL_ALGO: Ring, NCCL_MAX_NCHANNELS: 4}", gib);
  EXPECT_EQ(four.channels, 4);
  EXPECT_GT(four.ns, ring.ns);
  // NCCL_BUFFSIZE scales the Simple protocol's chunks: four times the buffer, fewer pipeline steps, another time.
  EXPECT_NE(all_reduce("cluster.nccl_env={NCCL_ALGO: Ring, NCCL_BUFFSIZE: 16777216}", gib).ns, ring.ns);
  // Nothing left to run is an error naming the variables.
  EXPECT_THROW(all_reduce("cluster.nccl_env.NCCL_ALGO=CollnetDirect", gib), InputError);
}

TEST(NcclEnv, OtherModelsAndOtherVariablesAreNamedNotIgnored) {
  const spec::ClusterSpec c = spec::load_cluster(catalog::shipped().gpus, "", 8, 8,
                                                 {"cluster.nccl_env={NCCL_ALGO: Ring, NCCL_SOCKET_IFNAME: eth0}"});
  const auto ab = spec::unused_network_notes(c, spec::CommModel::AlphaBeta);
  ASSERT_EQ(ab.size(), 1u);
  EXPECT_NE(ab[0].find("cluster.nccl_env (NCCL_ALGO=Ring NCCL_SOCKET_IFNAME=eth0): NCCL's own choices, used by the "
                       "nccl model only"),
            std::string::npos);
  const auto nccl = spec::unused_network_notes(c, spec::CommModel::Nccl);
  ASSERT_EQ(nccl.size(), 1u);
  EXPECT_NE(nccl[0].find("NCCL_SOCKET_IFNAME read; the nccl model times nothing it changes"), std::string::npos);
  // comm --env is cluster.nccl_env: printed in the header.
  const auto r = test::run_cli("comm --collective all_reduce --gpus 8 --sizes 1G --model nccl --store none "
                               "--env NCCL_ALGO=Ring");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("# nccl env: NCCL_ALGO=Ring"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" ring "), std::string::npos) << r.output;
  const auto bad = test::run_cli("comm --collective all_reduce --gpus 8 --sizes 1G --env NCCL_ALGO");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("--env NCCL_ALGO: must be NAME=VALUE"), std::string::npos) << bad.output;
}

}  // namespace nccl_env_test
}  // namespace stepsim
