// Chakra's point-to-point semantics as ASTRA-sim runs them (issue 47 item 1): a send completes on its own and its
// data waits at the receiver, so ASTRA-sim's custom ring all-reduce (each rank sends, then receives, then reduces)
// runs; other traces keep NCCL's rendezvous, where the same order cannot complete.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace stepsim {
namespace eager_sends_test {

// Rank r of a 3-rank ring: send 131,072 B to r+1, receive as much from r-1, then 7 us of compute. `chakra`: the file
// as `trace import` writes a Chakra trace (its "chakra" block), else as a Kineto import.
std::string ring_rank(int r, bool chakra) {
  nlohmann::json j = {{"format", "stepsim-trace-program"}, {"version", 1}, {"rank", r}, {"source", "ring"}};
  if (chakra) j["chakra"] = {{"nodes", 3}, {"cpu_nodes_skipped", 0}, {"other_nodes_skipped", 0}, {"comm_groups", nullptr}};
  j["ops"] = nlohmann::json::array(
      {{{"after", nlohmann::json::array()}, {"group", "pp"}, {"kind", "p2p"}, {"name", "send"},
        {"sends", {{{"bytes", 131072}, {"peer", (r + 1) % 3}}}}},
       {{"after", {0}}, {"group", "pp"}, {"kind", "p2p"}, {"name", "recv"},
        {"recvs", {{{"bytes", 131072}, {"peer", (r + 2) % 3}}}}},
       {{"after", {1}}, {"category", "elementwise"}, {"duration_ns", 7000}, {"kind", "compute"}, {"name", "reduce"},
        {"phase", "forward"}}});
  return j.dump();
}

std::string ring_dir(const std::string& name, bool chakra) {
  const std::string dir = test::temp_dir() + name;
  std::filesystem::create_directories(dir);
  for (int r = 0; r < 3; ++r) std::ofstream(dir + "/rank" + std::to_string(r) + ".json") << ring_rank(r, chakra);
  return dir;
}

TEST(EagerSends, AChakraRingWhereEveryRankSendsFirstRuns) {
  const std::string job = test::write_temp("ring3.yaml", test::small_gpt_yaml(1, 1, 3, 3));
  const auto r = test::run_cli("simulate " + job + " --workload " + ring_dir("ring-chakra", true) + " --quiet --json -");
  ASSERT_EQ(r.code, 0) << r.output;
  // Each send leaves at 0 and arrives after the alpha-beta point-to-point time inside a node, 1 us + 131,072 B at
  // 450 GB/s = 1,291.3 ns; the receive, posted when the send completes, finds the data there; then 7 us of compute.
  const double step_ns = 1e9 * nlohmann::json::parse(r.output)["step_time_s"].get<double>();
  EXPECT_NEAR(step_ns, 7000 + 1000 + 131072 / 450.0, 2.0);
  // The same order under NCCL's rendezvous (a trace that is not Chakra's) cannot complete: every send waits for a
  // receive its peer posts only after its own send.
  const auto k = test::run_cli("simulate " + job + " --workload " + ring_dir("ring-kineto", false) + " --quiet");
  EXPECT_EQ(k.code, 2) << k.output;
  EXPECT_NE(k.output.find("cannot complete in this order"), std::string::npos) << k.output;
}

}  // namespace eager_sends_test
}  // namespace stepsim
