// Inter-node transports (issue 45 item 1): the fraction of the NICs' line rate each one reaches, honoured by every
// communication model, printed, refused when unknown, and the shipped table complete.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stepsim/api/comm.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/catalog/transport_rates.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/report/summary.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

// A 16 GiB all-gather over two nodes of 8 H100s with `nics` NICs of `gbits` Gb/s each, and more cluster keys.
api::CommOptions two_nodes(const std::string& model, const std::string& nics, const std::string& gbits,
                           std::vector<std::string> more = {}) {
  api::CommOptions o;
  o.collective = "all_gather";
  o.gpus = 16;
  o.gpus_per_node = 8;
  o.sizes = "16G";
  o.model = model;
  o.store = "none";
  o.overrides = {"cluster.network.nics_per_node=" + nics, "cluster.network.nic_Gbps=" + gbits};
  for (std::string& m : more) o.overrides.push_back("cluster." + std::move(m));
  return o;
}

// Two A3 High-like nodes: 8 H100s sharing four 200 Gb/s NICs (100 Gb/s = 12.5 GB/s of line rate per GPU).
api::CommOutput two_nodes_of_four_nics(const std::string& model, const std::string& transport,
                                       const std::string& efficiency = "") {
  std::vector<std::string> more = {"inter_node.transport=" + transport};
  if (!efficiency.empty()) more.push_back("inter_node.bandwidth_efficiency=" + efficiency);
  return api::comm(two_nodes(model, "4", "200", more));
}

bool mentions(const std::vector<std::string>& notes, const std::string& what) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(what) != n.npos; });
}

// A 16 GiB ring all-gather over two nodes is bound by the NICs: every byte but a node's own crosses them once, so the
// bus bandwidth is the node's NIC total, 4 x 200 Gb/s = 100 GB/s, times the fraction the transport reaches (by hand:
// 50 GB/s over GPUDirect-TCPX at 0.5). alpha-beta reaches it exactly; the flow model's links carry the 0.96 of a NIC's
// rate NCCL reaches (data/nccl.yaml, Hopper inter_efficiency), and so does the nccl model's Simple protocol.
TEST(Transports, TcpxPlateauIsHalfTheLineRateUnderEveryModel) {
  for (const std::string model : {"alpha-beta", "flow", "nccl"}) {
    const double ib = two_nodes_of_four_nics(model, "ib").rows.at(0).busbw_GBps;
    const api::CommOutput tcpx = two_nodes_of_four_nics(model, "tcpx");
    const double reached = model == "alpha-beta" ? 1.0 : 0.96;
    EXPECT_NEAR(ib, 100.0 * reached, 0.2) << model;
    EXPECT_NEAR(tcpx.rows.at(0).busbw_GBps, 50.0 * reached, 0.1) << model;
    EXPECT_NEAR(tcpx.rows.at(0).time_us / two_nodes_of_four_nics(model, "ib").rows.at(0).time_us, 2.0, 0.02) << model;
    EXPECT_DOUBLE_EQ(tcpx.transport_bandwidth_efficiency, 0.5) << model;
    // The assumption is printed, and the link line says what rate it gave.
    EXPECT_TRUE(mentions(tcpx.notes, "cluster.inter_node.transport tcpx")) << model;
    const std::string text = api::comm_text(api::CommOptions{}, tcpx);
    EXPECT_NE(text.find("over tcpx at 0.5 of line rate (50 Gb/s)"), std::string::npos) << text;
  }
}

// A node of 8 GPUs with two 400 Gb/s NICs: each GPU gets 2 x 400 / 8 = 100 Gb/s across nodes (printed), and a two-node
// 16 GiB all-gather's bus bandwidth is the node's NIC total, 2 x 50 = 100 GB/s (alpha-beta exactly; the flow and nccl
// models at the 0.96 NCCL reaches).
TEST(Transports, ATwoNicNodeSharesItsNicsAmongItsGpus) {
  for (const std::string model : {"alpha-beta", "flow", "nccl"}) {
    const api::CommOptions o = two_nodes(model, "2", "400");
    const api::CommOutput out = api::comm(o);
    EXPECT_NEAR(out.rows.at(0).busbw_GBps, model == "alpha-beta" ? 100.0 : 96.0, 0.2) << model;
    const std::string text = api::comm_text(o, out);
    EXPECT_NE(text.find("inter-node 100 Gb/s per GPU (2 NICs of 400 Gb/s per node) over ib\n"), std::string::npos)
        << text;
  }
}

// AWS p5 as written: 32 EFA NICs of 100 Gb/s for 8 GPUs, four of its own per GPU, 400 Gb/s per GPU: the same rates as
// eight 400 Gb/s NICs under every model. A count that does not split evenly over the GPUs is refused by key.
TEST(Transports, MoreNicsThanGpusGiveEachGpuItsOwn) {
  auto comm = [](const std::string& model, const std::string& nics, const std::string& gbits) {
    return api::comm(two_nodes(model, nics, gbits));
  };
  for (const std::string model : {"alpha-beta", "flow", "nccl"}) {
    const api::CommOutput p5 = comm(model, "32", "100");
    EXPECT_NEAR(p5.rows.at(0).time_us / comm(model, "8", "400").rows.at(0).time_us, 1.0, 0.005) << model;
    EXPECT_NE(api::comm_text(api::CommOptions{}, p5).find("inter-node 400 Gb/s per GPU"), std::string::npos) << model;
  }
  try {
    comm("nccl", "12", "100");
    ADD_FAILURE() << "12 NICs for 8 GPUs was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("key cluster.network.nics_per_node: more NICs than cluster.gpus_per_node 8"),
              std::string::npos)
        << e.what();
  }
}

// A measured fraction the user states replaces the transport's assumed one, and silences its note.
TEST(Transports, TheUsersOwnFractionWins) {
  const api::CommOutput stated = two_nodes_of_four_nics("alpha-beta", "tcpx", "0.8");
  EXPECT_NEAR(stated.rows.at(0).busbw_GBps, 80.0, 0.1);
  EXPECT_FALSE(mentions(stated.notes, "transport"));
  // On InfiniBand too: a fabric that reaches 0.9 of its line rate.
  EXPECT_NEAR(two_nodes_of_four_nics("alpha-beta", "ib", "0.9").rows.at(0).busbw_GBps, 90.0, 0.1);
  EXPECT_NEAR(two_nodes_of_four_nics("flow", "ib", "0.9").rows.at(0).busbw_GBps, 90.0 * 0.96, 0.1);
}

// A job on one node uses no NIC: no note about the transport's numbers.
TEST(Transports, OneNodeHasNoTransportNote) {
  api::CommOptions o;
  o.collective = "all_reduce";
  o.gpus = 8;
  o.sizes = "1M";
  o.store = "none";
  o.overrides = {"cluster.inter_node.transport=tcpxo"};
  EXPECT_FALSE(mentions(api::comm(o).notes, "transport"));
}

// A whole job: the step's data-parallel traffic crosses the NICs at the transport's rate, and the summary says so.
TEST(Transports, AJobsSummaryNamesTheTransportAndItsRate) {
  const std::string yaml = test::small_gpt_yaml(1, 1, 16, 64);
  auto run = [&](const std::string& transport) {
    std::string y = yaml;
    y.replace(y.find("latency_us: 5}"), 14, "latency_us: 5, transport: " + transport + "}");
    const spec::JobSpec job = test::job_from_yaml(y);
    return std::make_pair(job, sim::run_simulation(catalog::shipped(), job, {0}));
  };
  const auto [ib_job, ib] = run("ib");
  const auto [tcpx_job, tcpx] = run("tcpx");
  EXPECT_GT(tcpx.result.step_ns, ib.result.step_ns);
  const report::Summary s = report::summarize(tcpx, 0);
  const std::string text = report::to_text(s, tcpx_job);
  EXPECT_NE(text.find("inter-node 400 Gb/s per GPU (one NIC per GPU) over tcpx at 0.5 of line rate (200 Gb/s)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("note: cluster.inter_node.transport tcpx"), std::string::npos) << text;
  const nlohmann::json j = report::to_json(s, tcpx_job);
  EXPECT_EQ(j["job"]["inter_node_transport"], "tcpx");
  EXPECT_DOUBLE_EQ(j["job"]["inter_node_bandwidth_efficiency"].get<double>(), 0.5);
}

TEST(Transports, UnknownTransportOrFractionIsRefusedByKey) {
  const std::string yaml = test::small_gpt_yaml(1, 1, 16, 64);
  auto error = [&](const std::string& keys) {
    std::string y = yaml;
    y.replace(y.find("latency_us: 5}"), 14, "latency_us: 5, " + keys + "}");
    return test::job_error(y);
  };
  const std::string tcp = error("transport: tcp");
  EXPECT_NE(tcp.find("key cluster.inter_node.transport"), std::string::npos) << tcp;
  EXPECT_NE(tcp.find("tcpx"), std::string::npos) << tcp;
  const std::string above = error("bandwidth_efficiency: 1.5");
  EXPECT_NE(above.find("key cluster.inter_node.bandwidth_efficiency"), std::string::npos) << above;
  const std::string zero = error("bandwidth_efficiency: 0");
  EXPECT_NE(zero.find("key cluster.inter_node.bandwidth_efficiency"), std::string::npos) << zero;
  // The fraction is a NIC's: inside a node it is an unknown key.
  std::string y = yaml;
  y.replace(y.find("latency_us: 1}"), 14, "latency_us: 1, bandwidth_efficiency: 0.5}");
  const std::string intra = test::job_error(y);
  EXPECT_NE(intra.find("cluster.intra_node.bandwidth_efficiency"), std::string::npos) << intra;
}

// Every transport the cluster accepts has its own entry in the shipped data/nccl.yaml, and InfiniBand is the reference.
TEST(Transports, TheShippedTableHasEveryTransport) {
  const cost::NcclProfiles& nccl = catalog::shipped().nccl;
  const std::string file = test::read_file(catalog::shipped().dir + "/nccl.yaml");
  for (const std::string_view t : spec::kInterNodeTransports) {
    EXPECT_NE(file.find("\n  " + std::string(t) + ": {"), std::string::npos) << t;
    const cost::NetTransport& entry = nccl.transport(std::string(t));
    EXPECT_GT(entry.bandwidth_efficiency, 0) << t;
    EXPECT_LE(entry.bandwidth_efficiency, 1) << t;
  }
  EXPECT_EQ(nccl.transport("ib").bandwidth_efficiency, 1);
  EXPECT_EQ(nccl.transport("ib").net_latency_scale, 1);
  EXPECT_TRUE(nccl.transport("ib").note.empty());
  // Applying the rate twice does not halve it twice.
  spec::ClusterSpec c;
  c.inter_node.transport = "tcpx";
  c.inter_node.bandwidth_GBps = 50;
  const spec::ClusterSpec once = cost::at_transport_rates(nccl, c);
  EXPECT_DOUBLE_EQ(once.inter_node.bandwidth_GBps, 25);
  EXPECT_DOUBLE_EQ(cost::at_transport_rates(nccl, once).inter_node.bandwidth_GBps, 25);
}

}  // namespace
}  // namespace stepsim
