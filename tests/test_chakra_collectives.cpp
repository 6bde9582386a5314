// Every collective stepsim writes to Chakra's schema, and ASTRA-sim's own collective traces, with sizes checked by
// hand: `comm_size` as ASTRA-sim reads it (an all-gather's is each rank's part, the others' the message size S as
// nccl-tests counts it) and the bytes stepsim reads back (docs/CHAKRA.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/ingest/chakra/comm_groups.hpp"
#include "stepsim/ingest/chakra/et_export.hpp"
#include "stepsim/ingest/chakra/et_file.hpp"
#include "stepsim/ingest/chakra/et_import.hpp"
#include "test_util.hpp"

// Named, not anonymous: the unity build compiles this file with test_chakra.cpp, whose helpers have the same names.
namespace stepsim::chakra_collectives_test {

using chakra::CommType;
using chakra::NodeType;
using workload::CollType;

// Dense: TP 2 with sequence parallelism, PP 2, DP 2; rank 0 is TP rank 0 of the first stage. Tokens per micro-batch
// T = b s = 2048, h = 1024, bf16 activations (beta = 2 B).
const char* kDenseJob =
    "model: {name: small-gpt, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
    " vocab_size: 32000, seq_length: 2048}\n"
    "parallelism: {tensor: 2, pipeline: 2, data: 2, sequence_parallel: true}\n"
    "training: {micro_batch_size: 1, global_batch_size: 4, distributed_optimizer: true}\n"
    "simulation: {host_time_scale: 0}\n"
    "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\n";

// MoE: CP 2 (ring attention), EP 4, DP 4, TP 1. Tokens per rank T = b s / c = 4096 / 2 = 2048, h = 512, 8 experts
// (2 per EP rank), top-2, expert FFN 1024 (GELU: fc1 h x f_e and fc2 f_e x h, no biases).
const char* kMoeJob =
    "model: {name: small-moe, num_layers: 2, hidden_size: 512, num_attention_heads: 8, ffn_hidden_size: 2048,"
    " vocab_size: 32000, seq_length: 4096, moe: {num_experts: 8, topk: 2, ffn_hidden_size: 1024}}\n"
    "parallelism: {tensor: 1, pipeline: 1, context: 2, data: 4, expert: 4}\n"
    "training: {micro_batch_size: 1, global_batch_size: 8}\n"
    "simulation: {host_time_scale: 0}\n"
    "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\n";

struct Exported {
  std::string dir;
  chakra::EtGraph rank0;
  chakra::CommGroups groups;
  chakra::ChakraImport back;
};

Exported export_and_import(const std::string& yaml, const std::string& name) {
  Exported e;
  e.dir = test::temp_dir() + name;
  std::filesystem::remove_all(e.dir);
  const workload::Workload w = sim::timed_workload(catalog::shipped(), test::job_from_yaml(yaml));
  chakra::export_chakra(w, {e.dir, "workload"});
  e.rank0 = chakra::read_et_file(e.dir + "/workload.0.et");
  e.groups = chakra::read_comm_groups(e.dir + "/comm_group.json");
  std::vector<std::string> files;
  for (int r = 0; r < w.layout.world(); ++r) files.push_back(e.dir + "/workload." + std::to_string(r) + ".et");
  e.back = chakra::import_chakra(files, "");
  return e;
}

int64_t int_attr(const chakra::EtNode& n, const char* key) {
  const chakra::EtAttr* a = n.find(key);
  if (!a) return -1;
  if (const auto* v = std::get_if<int64_t>(&a->value)) return *v;
  if (const auto* v = std::get_if<int32_t>(&a->value)) return *v;
  return -1;
}

std::string string_attr(const chakra::EtNode& n, const char* key) {
  const chakra::EtAttr* a = n.find(key);
  return a ? std::get<std::string>(a->value) : "";
}

// The first node of `name` (over `members`, when given: a name like grad_norm_all_reduce runs over several groups).
const chakra::EtNode* node_named(const Exported& e, const std::string& name, const std::vector<int>& members = {}) {
  for (const chakra::EtNode& n : e.rank0.nodes) {
    if (n.name != name) continue;
    if (!members.empty() && e.groups.groups.at(string_attr(n, "pg_name")) != members) continue;
    return &n;
  }
  return nullptr;
}

const trace::TracedOp* op_named(const Exported& e, const std::string& name, const std::vector<int>& members = {}) {
  for (const trace::TracedOp& o : e.back.ranks.front().rank.ops) {
    if (o.name == name && (members.empty() || o.group_ranks == members)) return &o;
  }
  return nullptr;
}

struct CollCase {
  const char* name;
  std::vector<int> group;
  CommType type;
  int64_t comm_size;  // as written, ASTRA-sim's reading
  CollType coll;
  uint64_t bytes;     // as read back: S
};

void check_collective(const Exported& e, const CollCase& c) {
  SCOPED_TRACE(c.name);
  const chakra::EtNode* n = node_named(e, c.name, c.group);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->type, static_cast<int>(NodeType::CommColl));
  EXPECT_EQ(int_attr(*n, "comm_type"), static_cast<int64_t>(c.type));
  EXPECT_EQ(int_attr(*n, "comm_size"), c.comm_size);
  EXPECT_EQ(e.groups.groups.at(string_attr(*n, "pg_name")), c.group);
  const trace::TracedOp* o = op_named(e, c.name, c.group);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->kind, workload::OpKind::Collective);
  EXPECT_EQ(o->coll, c.coll);
  EXPECT_EQ(o->bytes, c.bytes);
}

// A copy of an all-gather node as another tool writes it (no stepsim attributes), imported over its group: the
// gathered bytes must come from comm_size x the group's size alone.
uint64_t gathered_without_stepsim_bytes(const Exported& e, const chakra::EtNode& ag) {
  chakra::EtGraph g;
  g.version = "0.0.4";
  chakra::EtNode n;
  n.id = 1;
  n.name = ag.name;
  n.type = ag.type;
  for (const char* key : {"is_cpu_op", "comm_type", "comm_size", "pg_name"}) n.attrs.push_back(*ag.find(key));
  g.nodes.push_back(n);
  std::string bytes;
  chakra::write_et(g, bytes);
  const auto r = chakra::import_graph(chakra::parse_et(bytes, "ag.0.et"), "ag.0.et", 0, &e.groups);
  return r.rank.ops.at(0).bytes;
}

// The dense job's collectives and pipeline transfers on rank 0 (groups by Megatron's rank order, tensor fastest,
// then data, then pipeline: TP {0,1}, DP {0,2}, PP {0,4}).
TEST(ChakraCollectives, DenseJobsCollectivesAndPipelineTransfersKeepTheirSizes) {
  const Exported e = export_and_import(kDenseJob, "coll-dense");
  // SP all-gather of the layer input: S = beta T h = 2 x 2048 x 1024 = 4,194,304 gathered; comm_size = S / t.
  check_collective(e, {"qkv_all_gather", {0, 1}, CommType::AllGather, 2'097'152, CollType::AllGather, 4'194'304});
  // SP reduce-scatter of the attention output: S = its input, beta T h = 4,194,304; comm_size = S.
  check_collective(e, {"attention_reduce_scatter", {0, 1}, CommType::ReduceScatter, 4'194'304,
                       CollType::ReduceScatter, 4'194'304});
  // The gradient norm's all-reduce over the pipeline stages: one fp32 partial sum of squares, 4 bytes.
  check_collective(e, {"grad_norm_all_reduce", {0, 4}, CommType::AllReduce, 4, CollType::AllReduce, 4});

  const chakra::EtNode* ag = node_named(e, "qkv_all_gather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(gathered_without_stepsim_bytes(e, *ag), 4'194'304u);  // 2,097,152 x 2 ranks

  // Pipeline: with SP each TP rank sends its sequence shard to the next stage, beta (T / t) h = 2 x 1024 x 1024.
  const chakra::EtNode* send = node_named(e, "send_forward");
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->type, static_cast<int>(NodeType::CommSend));
  EXPECT_EQ(int_attr(*send, "comm_src"), 0);
  EXPECT_EQ(int_attr(*send, "comm_dst"), 4);
  EXPECT_EQ(int_attr(*send, "comm_size"), 2'097'152);
  const chakra::EtNode* recv = node_named(e, "recv_backward");
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->type, static_cast<int>(NodeType::CommRecv));
  EXPECT_EQ(int_attr(*recv, "comm_src"), 4);
  EXPECT_EQ(int_attr(*recv, "comm_dst"), 0);
  EXPECT_EQ(int_attr(*recv, "comm_size"), 2'097'152);
  const trace::TracedOp* s = op_named(e, "send_forward");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind, workload::OpKind::P2P);
  ASSERT_EQ(s->sends.size(), 1u);
  EXPECT_TRUE(s->recvs.empty());
  EXPECT_EQ(s->sends[0].peer, 4);
  EXPECT_EQ(s->sends[0].bytes, 2'097'152u);
}

// The MoE job's all-to-alls, its small all-gather, the expert gradients' all-reduce and the context-parallel ring
// steps on rank 0 (EP {0,1,2,3}, CP {0,1}, expert-data-parallel {0,4}).
TEST(ChakraCollectives, MoeJobsAllToAllsRingStepsAndExpertGradientsKeepTheirSizes) {
  const Exported e = export_and_import(kMoeJob, "coll-moe");
  // Dispatch: S = beta R h with R = T k = 2048 x 2 routed tokens: 2 x 4096 x 512 = 4,194,304 (the send buffer).
  check_collective(e, {"moe_dispatch_all_to_all", {0, 1, 2, 3}, CommType::AllToAll, 4'194'304, CollType::AllToAll,
                       4'194'304});
  // Tokens per expert, int64: each rank's part is 8 B x 8 experts = 64; gathered over EP 4: 256.
  check_collective(e, {"moe_token_count_all_gather", {0, 1, 2, 3}, CommType::AllGather, 64, CollType::AllGather,
                       256});
  // Expert gradients (no distributed optimizer: all-reduced): 2 layers x 2 local experts x (512 x 1024 + 1024 x 512)
  // parameters x 4 B (fp32 gradients under bf16) = 16,777,216.
  check_collective(e, {"dp_grad_all_reduce", {0, 4}, CommType::AllReduce, 16'777'216, CollType::AllReduce,
                       16'777'216});

  const chakra::EtNode* ag = node_named(e, "moe_token_count_all_gather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(gathered_without_stepsim_bytes(e, *ag), 256u);  // 64 x 4 ranks

  // A ring step of CP 2: a send to the successor and a receive from the predecessor, both rank 1, each this rank's
  // K/V block beta T kv_w = 2 x 2048 x (2 x 512) = 4,194,304 (no grouped-query attention: K and V h wide each).
  std::vector<const chakra::EtNode*> step;
  for (const chakra::EtNode& n : e.rank0.nodes) {
    if (n.name == "cp_kv_ring_exchange") step.push_back(&n);
    if (step.size() == 2) break;
  }
  ASSERT_EQ(step.size(), 2u);
  EXPECT_EQ(step[0]->type, static_cast<int>(NodeType::CommSend));
  EXPECT_EQ(int_attr(*step[0], "comm_dst"), 1);
  EXPECT_EQ(step[1]->type, static_cast<int>(NodeType::CommRecv));
  EXPECT_EQ(int_attr(*step[1], "comm_src"), 1);
  for (const chakra::EtNode* n : step) {
    EXPECT_EQ(int_attr(*n, "comm_size"), 4'194'304);
    EXPECT_EQ(string_attr(*n, "stepsim_coll"), "send_recv");
    EXPECT_EQ(e.groups.groups.at(string_attr(*n, "pg_name")), (std::vector<int>{0, 1}));
  }
  EXPECT_EQ(int_attr(*step[0], "stepsim_op"), int_attr(*step[1], "stepsim_op"));  // one op, two nodes
  const trace::TracedOp* o = op_named(e, "cp_kv_ring_exchange");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->coll, CollType::SendRecv);
  EXPECT_EQ(o->bytes, 4'194'304u);
  EXPECT_EQ(o->group_ranks, (std::vector<int>{0, 1}));
}

// Broadcast and reduce: no Megatron program stepsim builds issues one, but export maps them to Chakra's types
// (et_def.proto: REDUCE = 1, BROADCAST = 5) and import reads them with comm_size = S, the buffer.
TEST(ChakraCollectives, BroadcastAndReduceMapToChakrasTypesAndReadBackWithTheirSize) {
  EXPECT_EQ(chakra::chakra_comm_type(CollType::Broadcast), 5);
  EXPECT_EQ(chakra::chakra_comm_type(CollType::Reduce), 1);
  chakra::EtGraph g;
  g.version = "0.0.4";
  for (const auto& [id, type] : {std::pair{1, CollType::Broadcast}, std::pair{2, CollType::Reduce}}) {
    chakra::EtNode n;
    n.id = static_cast<uint64_t>(id);
    n.name = std::string(workload::name_of(type));
    n.type = static_cast<int>(NodeType::CommColl);
    n.attrs = {{"is_cpu_op", false}, {"comm_type", int64_t{chakra::chakra_comm_type(type)}},
               {"comm_size", int64_t{1'048'576}}, {"pg_name", std::string("1")}};
    g.nodes.push_back(n);
  }
  std::string bytes;
  chakra::write_et(g, bytes);
  const chakra::CommGroups groups = chakra::parse_comm_groups("{\"1\": [0, 1, 2]}", "groups.json");
  const auto r = chakra::import_graph(chakra::parse_et(bytes, "bc.0.et"), "bc.0.et", 0, &groups);
  ASSERT_EQ(r.rank.ops.size(), 2u);
  EXPECT_EQ(r.rank.ops[0].coll, CollType::Broadcast);
  EXPECT_EQ(r.rank.ops[1].coll, CollType::Reduce);
  for (const auto& o : r.rank.ops) {
    EXPECT_EQ(o.bytes, 1'048'576u);
    EXPECT_EQ(o.group_ranks, (std::vector<int>{0, 1, 2}));
  }
}

// ASTRA-sim's examples/workload/microbenchmarks, copied to ../shared/data/real/chakra/astra-sim-examples: one
// collective node per rank file, comm_size 1 MiB (the directory's "1MB"), no pg_name, no world_size metadata.
struct Microbenchmark {
  const char* kind;  // directory and file prefix
  int npus;
  const char* coll;  // as stepsim reads it
  int64_t bytes;     // S read back
  double step_us;    // the alpha-beta time of that collective on the job below, by hand
};

// The job: H100s, 8 per node, NVLink 450 GB/s and 1 us (a_intra), NIC 400 Gb/s = 50 GB/s and 5 us (a_inter); for
// 16 ranks k = 8 per node, N = 2 nodes, B_bus = min(450, 8 x 50) = 400 GB/s (docs/COST-MODELS.md, "Formulas").
// An all-gather's S is 1 MiB x n (ASTRA-sim's ring all-gather moves comm_size x ranks); the others' S is 1 MiB.
//   all-gather, reduce-scatter: L_ring(n-1, N-1) + (n-1)/n S / B_bus
//   all-reduce: min(ring L_ring(2(n-1), 2(N-1)) + 2(n-1)/n S / B_bus, tree 2((k-1) a_intra + ceil(log2 N) a_inter)
//               + 2 S / B_bus)
//   all-to-all: (k-1) a_intra + (n-k) a_inter + max(S (k-1)/n / B_intra, S (n-k)/n / B_nic)
// 4 ranks: AG 3 + 3,145,728 B / 450 GB/s = 3 + 6.990507 us; RS and A2A 3 + 786,432 / 450e9 = 3 + 1.747627;
//          AR ring 6 + 1,572,864 / 450e9 = 6 + 3.495253 (tree 6 + 4.660338).
// 8 ranks: AG 7 + 7,340,032 / 450e9 = 7 + 16.311182; RS and A2A 7 + 917,504 / 450e9 = 7 + 2.038898;
//          AR ring 14 + 1,835,008 / 450e9 = 14 + 4.077796 (tree 14 + 4.660338).
// 16 ranks: AG 14 + 5 + 15,728,640 / 400e9 = 19 + 39.3216; RS 19 + 983,040 / 400e9 = 19 + 2.4576;
//          AR tree 2 (7 + 5) + 2,097,152 / 400e9 = 24 + 5.24288 (ring 28 + 10 + 4.9152 = 42.9152);
//          A2A 7 + 8 x 5 + max(458,752 / 450e9, 524,288 / 50e9) = 47 + 10.48576.
const Microbenchmark kMicrobenchmarks[] = {
    {"all_gather", 4, "all_gather", 4 * 1'048'576, 3 + 6.990507},
    {"all_gather", 8, "all_gather", 8 * 1'048'576, 7 + 16.311182},
    {"all_gather", 16, "all_gather", 16 * 1'048'576, 19 + 39.3216},
    {"reduce_scatter", 4, "reduce_scatter", 1'048'576, 3 + 1.747627},
    {"reduce_scatter", 8, "reduce_scatter", 1'048'576, 7 + 2.038898},
    {"reduce_scatter", 16, "reduce_scatter", 1'048'576, 19 + 2.4576},
    {"all_to_all", 4, "all_to_all", 1'048'576, 3 + 1.747627},
    {"all_to_all", 8, "all_to_all", 1'048'576, 7 + 2.038898},
    {"all_to_all", 16, "all_to_all", 1'048'576, 47 + 10.48576},
    {"all_reduce", 4, "all_reduce", 1'048'576, 6 + 3.495253},
    {"all_reduce", 8, "all_reduce", 1'048'576, 14 + 4.077796},
    {"all_reduce", 16, "all_reduce", 1'048'576, 24 + 5.24288},
};

std::string microbenchmark_files(const Microbenchmark& m, int first = 0) {
  const std::string dir = test::real("chakra/astra-sim-examples/microbenchmarks/") + m.kind + "/" +
                          std::to_string(m.npus) + "npus_1MB/" + m.kind + ".";
  std::string files;
  for (int r = first; r < m.npus; ++r) files += dir + std::to_string(r) + ".et ";
  return files;
}

std::string microbenchmark_job(int npus) {
  return test::write_temp(
      "astra-mb-" + std::to_string(npus) + ".yaml",
      "model: {name: tiny, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " vocab_size: 32000, seq_length: 1024}\n"
      "parallelism: {tensor: 1, pipeline: 1, data: " + std::to_string(npus) + "}\n"
      "training: {micro_batch_size: 1, global_batch_size: " + std::to_string(npus) + "}\n"
      "simulation: {host_time_scale: 0}\n"
      "cluster: {gpu: H100-SXM, num_gpus: " + std::to_string(npus) + ", gpus_per_node: 8,"
      " intra_node: {bandwidth_GBps: 450, latency_us: 1}, inter_node: {bandwidth_Gbps: 400, latency_us: 5}}\n");
}

// Every microbenchmark imports with the world of its rank files (said in a note), its size as ASTRA-sim reads it,
// and simulates in the time the alpha-beta formulas give by hand.
TEST(ChakraCollectives, AstraSimMicrobenchmarksImportAtTheirSizesAndSimulate) {
  for (const Microbenchmark& m : kMicrobenchmarks) {
    SCOPED_TRACE(std::string(m.kind) + " " + std::to_string(m.npus));
    const std::string out = test::temp_dir() + "astra-mb-" + m.kind + std::to_string(m.npus);
    std::filesystem::remove_all(out);
    auto r = test::run_cli("trace import " + microbenchmark_files(m) + "--out " + out + " --quiet");
    ASSERT_EQ(r.code, 0) << r.output;
    for (int rank = 0; rank < m.npus; ++rank) {
      const auto prog = nlohmann::json::parse(test::read_file(out + "/rank" + std::to_string(rank) + ".json"));
      ASSERT_EQ(prog["ops"].size(), 1u);
      EXPECT_EQ(prog["ops"][0]["coll"], m.coll);
      EXPECT_EQ(prog["ops"][0]["bytes"].get<int64_t>(), m.bytes);
      EXPECT_EQ(prog["ops"][0]["group_ranks"], nlohmann::json::array());  // the whole world
      EXPECT_EQ(prog["world_size"].get<int>(), m.npus);
    }
    const auto summary = nlohmann::json::parse(test::read_file(out + "/summary.json"));
    ASSERT_EQ(summary["notes"].size(), 1u);
    const std::string n = std::to_string(m.npus);
    EXPECT_NE(summary["notes"][0].get<std::string>().find(n + " of " + n + " ranks have collectives without a "
                                                          "pg_name"), std::string::npos) << summary["notes"][0];
    const std::string json = out + "-sim.json";
    r = test::run_cli_env("STEPSIM_CALIBRATION_DB=none",
                          "simulate " + microbenchmark_job(m.npus) + " --workload " + out + " --json " + json);
    ASSERT_EQ(r.code, 0) << r.output;
    const double step_us = nlohmann::json::parse(test::read_file(json))["step_time_s"].get<double>() * 1e6;
    EXPECT_NEAR(step_us, m.step_us, 0.002);  // the engine keeps whole nanoseconds
  }
}

// The world taken from the rank files holds only if they are all of it; and simulate holds the import to it.
TEST(ChakraCollectives, TheRankFilesAreTheWorldOnlyWhenTheyAreAllOfIt) {
  const Microbenchmark& ag8 = kMicrobenchmarks[1];
  const std::string out = test::temp_dir() + "astra-mb-partial";
  std::filesystem::remove_all(out);
  // Ranks 1 .. 7: seven files, but rank 7 is not among ranks 0 .. 6.
  auto r = test::run_cli("trace import " + microbenchmark_files(ag8, 1) + "--out " + out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("all_gather.7.et: rank 7, but the 7 rank files given are the world"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(out + "/rank1.json"));

  // Eight files make the world 8: a job of 16 GPUs is refused rather than run the collective over 16.
  const Microbenchmark& ar8 = kMicrobenchmarks[10];
  r = test::run_cli("trace import " + microbenchmark_files(ar8) + "--out " + out + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  r = test::run_cli_env("STEPSIM_CALIBRATION_DB=none", "simulate " + microbenchmark_job(16) + " --workload " + out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("world_size 8, but the job runs 16 GPUs"), std::string::npos) << r.output;
}

}  // namespace stepsim::chakra_collectives_test
