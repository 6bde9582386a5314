// Chakra execution traces (docs/CHAKRA.md): `stepsim trace export-chakra` writes what ASTRA-sim reads, `stepsim trace
// import` reads it (and Chakra's JSON form of real traces) back, and the round trip reproduces the simulated step.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <zlib.h>

#include "stepsim/ingest/chakra/et_export.hpp"
#include "stepsim/ingest/chakra/et_file.hpp"
#include "stepsim/ingest/chakra/et_import.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

using namespace stepsim;

namespace {

const char* kChakraJob =
    "model: {name: small-gpt, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
    " vocab_size: 32000, seq_length: 2048}\n"
    "parallelism: {tensor: 2, pipeline: 2, data: 2}\n"
    "training: {micro_batch_size: 1, global_batch_size: 8, distributed_optimizer: true}\n"
    "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\n";

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const chakra::EtAttr* find(const chakra::EtNode& n, const char* name) { return n.find(name); }
int64_t int_attr(const chakra::EtNode& n, const char* name) {
  const chakra::EtAttr* a = find(n, name);
  return a ? std::get<int64_t>(a->value) : -1;
}

nlohmann::json summary_of(const std::string& job, const std::string& extra) {
  const std::string out = test::temp_dir() + "chakra-summary.json";
  const auto r = test::run_cli_env("STEPSIM_CALIBRATION_DB=none", "simulate " + job + " " + extra + " --json " + out);
  EXPECT_EQ(r.code, 0) << r.output;
  return nlohmann::json::parse(test::read_file(out));
}

}  // namespace

// Megatron's rank order (tensor fastest, then data, then pipeline: rank = tp + 2 (dp + 2 pp)) gives these groups by
// hand: TP {0,1} {2,3} {4,5} {6,7}, DP {0,2} {1,3} {4,6} {5,7}, PP {0,4} {1,5} {2,6} {3,7}.
TEST(Chakra, ExportWritesAFilePerRankAndTheJobsGroups) {
  const std::string dir = test::temp_dir() + "chakra-export";
  std::filesystem::remove_all(dir);
  const auto r = test::run_cli("trace export-chakra " + test::write_temp("chakra.yaml", kChakraJob) + " --out " + dir);
  ASSERT_EQ(r.code, 0) << r.output;
  for (int rank = 0; rank < 8; ++rank) EXPECT_TRUE(std::filesystem::exists(dir + "/workload." + std::to_string(rank) + ".et"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/workload.8.et"));
  const auto groups = nlohmann::json::parse(test::read_file(dir + "/comm_group.json"));
  std::set<std::vector<int>> got;
  for (auto it = groups.begin(); it != groups.end(); ++it) {
    EXPECT_GE(std::stoi(it.key()), 1);  // ASTRA-sim reads the ids with std::stoi
    got.insert(it.value().get<std::vector<int>>());
  }
  const std::set<std::vector<int>> want = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3},
                                           {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
  EXPECT_EQ(got, want);
  EXPECT_NE(r.output.find("--workload-configuration=" + dir + "/workload"), std::string::npos) << r.output;
}

// The bytes follow the protobuf wire format by hand, without the library: a varint length, then GlobalMetadata's
// field 1 (tag 0x0a = field 1, length-delimited) "0.0.4"; the first Node starts with field 1 (tag 0x08, varint) id 1.
TEST(Chakra, FilesAreLengthDelimitedChakraMessages) {
  const std::string dir = test::temp_dir() + "chakra-wire";
  std::filesystem::remove_all(dir);
  ASSERT_EQ(test::run_cli("trace export-chakra " + test::write_temp("chakra.yaml", kChakraJob) + " --out " + dir).code, 0);
  const std::string b = file_bytes(dir + "/workload.0.et");
  ASSERT_GT(b.size(), 16u);
  const auto meta_len = static_cast<uint8_t>(b[0]);
  ASSERT_LT(meta_len, 0x80);  // one-byte varint: a short metadata message
  EXPECT_EQ(static_cast<uint8_t>(b[1]), 0x0a);
  EXPECT_EQ(static_cast<uint8_t>(b[2]), 5);
  EXPECT_EQ(b.substr(3, 5), "0.0.4");
  size_t at = 1 + meta_len;
  while (static_cast<uint8_t>(b[at]) & 0x80) ++at;  // the first node's length
  ++at;
  EXPECT_EQ(static_cast<uint8_t>(b[at]), 0x08);
  EXPECT_EQ(static_cast<uint8_t>(b[at + 1]), 1);
  // Each attribute in the value kind ASTRA-sim's ETFeederNode reads: an AttributeProto is name (0x0a, length, text)
  // then the value's tag = field number << 3 | wire type: int32_val 7 -> 0x38, int64_val 9 -> 0x48, uint64_val 13 ->
  // 0x68, bool_val 27 -> 0xd8 0x01, string_val 29 -> 0xea 0x01.
  auto kind_after = [&](const std::string& name) {
    const std::string key = std::string("\x0a") + static_cast<char>(name.size()) + name;
    const size_t p = b.find(key);
    return p == std::string::npos ? -1 : static_cast<int>(static_cast<uint8_t>(b[p + key.size()]));
  };
  EXPECT_EQ(kind_after("comm_src"), 0x38);
  EXPECT_EQ(kind_after("comm_dst"), 0x38);
  EXPECT_EQ(kind_after("comm_tag"), 0x38);
  EXPECT_EQ(kind_after("comm_size"), 0x48);
  EXPECT_EQ(kind_after("comm_type"), 0x48);
  EXPECT_EQ(kind_after("num_ops"), 0x48);
  EXPECT_EQ(kind_after("tensor_size"), 0x68);
  EXPECT_EQ(kind_after("is_cpu_op"), 0xd8);
  EXPECT_EQ(kind_after("pg_name"), 0xea);
}

// Every op of rank 0's program is in its file with the model's numbers: compute time, FLOPs, message sizes, groups.
TEST(Chakra, NodesCarryTheProgramsTimesSizesAndDependencies) {
  const spec::JobSpec job = test::job_from_yaml(kChakraJob);
  const workload::Workload w = sim::timed_workload(stepsim::catalog::shipped(), job);
  const std::string dir = test::temp_dir() + "chakra-nodes";
  std::filesystem::remove_all(dir);
  chakra::export_chakra(w, {dir, "workload"});
  const chakra::EtGraph g = chakra::read_et_file(dir + "/workload.0.et");
  const auto groups = chakra::read_comm_groups(dir + "/comm_group.json");
  const workload::Program& p = w.program_of_rank(0);
  int64_t compute_ops = 0, compute_ns = 0, coll_ops = 0, coll_bytes = 0;
  for (const auto& op : p.ops) {
    if (op.kind == workload::OpKind::Compute) ++compute_ops, compute_ns += op.duration_ns;
    if (op.kind == workload::OpKind::Collective) ++coll_ops, coll_bytes += static_cast<int64_t>(op.bytes);
  }
  int64_t nodes_compute = 0, nodes_ns = 0, nodes_coll = 0, nodes_bytes = 0, sends = 0, recvs = 0, gathers = 0;
  std::set<uint64_t> seen;
  for (const chakra::EtNode& n : g.nodes) {
    for (uint64_t d : n.data_deps) EXPECT_TRUE(seen.count(d)) << "node " << n.id << " depends on a later node " << d;
    seen.insert(n.id);
    if (n.type == static_cast<int>(chakra::NodeType::Comp)) {
      ++nodes_compute;
      const int64_t ns = int_attr(n, "duration_ns");
      nodes_ns += ns;
      EXPECT_EQ(n.duration_micros, std::max<uint64_t>(ns > 0 ? 1 : 0, static_cast<uint64_t>((ns + 500) / 1000)));
    } else if (n.type == static_cast<int>(chakra::NodeType::CommColl)) {
      ++nodes_coll;
      const auto& members = groups.groups.at(std::get<std::string>(find(n, "pg_name")->value));
      // An all-gather's comm_size is each rank's part, as ASTRA-sim reads it; stepsim_bytes the gathered output.
      if (int_attr(n, "comm_type") == chakra::chakra_comm_type(workload::CollType::AllGather)) {
        ++gathers;
        EXPECT_EQ(int_attr(n, "comm_size") * static_cast<int64_t>(members.size()), int_attr(n, "stepsim_bytes"));
        nodes_bytes += int_attr(n, "stepsim_bytes");
      } else {
        nodes_bytes += int_attr(n, "comm_size");
        EXPECT_EQ(find(n, "stepsim_bytes"), nullptr);
      }
      EXPECT_TRUE(std::count(members.begin(), members.end(), 0)) << n.name;  // rank 0's own group
      if (n.name.find("qkv") != std::string::npos || n.name.find("fc1") != std::string::npos) {
        EXPECT_EQ(members, (std::vector<int>{0, 1})) << n.name;  // a TP collective of rank 0
      }
    } else if (n.type == static_cast<int>(chakra::NodeType::CommSend)) {
      ++sends;
      EXPECT_EQ(int_attr(n, "comm_dst"), 4);  // stage 0 sends to stage 1 (rank 4)
    } else if (n.type == static_cast<int>(chakra::NodeType::CommRecv)) {
      ++recvs;
      EXPECT_EQ(int_attr(n, "comm_src"), 4);
    }
  }
  EXPECT_EQ(nodes_compute, compute_ops);
  EXPECT_EQ(nodes_ns, compute_ns);
  EXPECT_EQ(nodes_coll, coll_ops);
  EXPECT_EQ(nodes_bytes, coll_bytes);
  EXPECT_GT(gathers, 0);  // sequence parallelism's all-gathers over TP 2 (and the distributed optimizer's over DP)
  // 4 micro-batches: activations go forward and gradients come back, one transfer each way per micro-batch.
  EXPECT_EQ(sends, 4);
  EXPECT_EQ(recvs, 4);
}

// Sends and receives match pairwise: the k-th send from a to b has the tag of the k-th receive at b from a.
TEST(Chakra, SendAndReceiveTagsMatchBetweenStages) {
  const workload::Workload w = sim::timed_workload(stepsim::catalog::shipped(), test::job_from_yaml(kChakraJob));
  const std::string dir = test::temp_dir() + "chakra-tags";
  std::filesystem::remove_all(dir);
  chakra::export_chakra(w, {dir, "w"});
  std::multiset<std::tuple<int64_t, int64_t, int64_t, int64_t>> sent, received;  // src, dst, tag, bytes
  for (int r = 0; r < 8; ++r) {
    for (const auto& n : chakra::read_et_file(dir + "/w." + std::to_string(r) + ".et").nodes) {
      const auto key = std::make_tuple(int_attr(n, "comm_src"), int_attr(n, "comm_dst"), int_attr(n, "comm_tag"),
                                       int_attr(n, "comm_size"));
      if (n.type == static_cast<int>(chakra::NodeType::CommSend)) sent.insert(key);
      if (n.type == static_cast<int>(chakra::NodeType::CommRecv)) received.insert(key);
    }
  }
  EXPECT_EQ(sent.size(), 32u);  // 4 stage-0 ranks x 4 micro-batches forward, and as many backward
  EXPECT_EQ(sent, received);
}

// The must-show of issue 16: the GPT-3 175B demo job (examples/gpt3-175b-h800.yaml, 96 H800s, TP 8 x PP 12; here with
// 12 micro-batches instead of 128 to keep the test short) exported, imported back and replayed gives the step, its
// breakdown and its memory exactly.
TEST(Chakra, RoundTripOfTheGpt3DemoJobReproducesTheStep) {
#ifdef STEPSIM_SANITIZED
  GTEST_SKIP() << "64 s under ASan for 340,000 nodes: the release suite runs it; the sanitizers see the same code in "
                  "RoundTripKeepsRingStepsAndAllToAlls";
#endif
  const std::string job = test::source_dir() + "/examples/gpt3-175b-h800.yaml";
  // Host issue model off: an exported workload carries the GPU ops, not the host's issue times (docs/CHAKRA.md).
  const std::string set = " --set training.global_batch_size=12 --set simulation.host_time_scale=0";
  const std::string et = test::temp_dir() + "chakra-gpt3", back = test::temp_dir() + "chakra-gpt3-back";
  std::filesystem::remove_all(et);
  std::filesystem::remove_all(back);
  auto r = test::run_cli("trace export-chakra " + job + set + " --out " + et + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  r = test::run_cli("trace import " + et + "/workload.*.et --out " + back + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  // An imported workload keeps its kernels' times unless the job names an overlap model (a real trace's kernels ran
  // beside their communication); this one's were the model's isolated times, slowed as the export's job slowed them.
  const nlohmann::json a = summary_of(job, set),
                       b = summary_of(job, set + " --set simulation.overlap_model=sm_share --workload " + back);
  EXPECT_DOUBLE_EQ(a["step_time_s"].get<double>(), b["step_time_s"].get<double>());
  EXPECT_EQ(a["breakdown_s"], b["breakdown_s"]);
  // The peaks come back; a trace's static bytes do not say what they hold (the CUDA context and the allocator's
  // reserve among them), so the imported workload's allocated and reserved peaks are its whole peak.
  for (const char* key : {"peak_bytes_max", "oom", "capacity_bytes"}) EXPECT_EQ(a["memory"][key], b["memory"][key]);
  ASSERT_EQ(a["memory"]["per_stage"].size(), b["memory"]["per_stage"].size());
  for (size_t i = 0; i < a["memory"]["per_stage"].size(); ++i) {
    for (const char* key : {"peak_bytes", "static_bytes", "activation_bytes"}) {
      EXPECT_EQ(a["memory"]["per_stage"][i][key], b["memory"]["per_stage"][i][key]);
    }
    EXPECT_EQ(b["memory"]["per_stage"][i]["peak_reserved_bytes"], b["memory"]["per_stage"][i]["peak_bytes"]);
  }
  EXPECT_EQ(a["comm_message_bytes_per_rank"], b["comm_message_bytes_per_rank"]);
}

// Context parallelism's ring steps (written as a send and a receive) and expert parallelism's all-to-alls come back
// as the same collectives.
TEST(Chakra, RoundTripKeepsRingStepsAndAllToAlls) {
  const std::string job = test::write_temp(
      "chakra-moe.yaml",
      "model: {name: small-moe, num_layers: 2, hidden_size: 512, num_attention_heads: 8, ffn_hidden_size: 2048,"
      " vocab_size: 32000, seq_length: 4096, moe: {num_experts: 8, topk: 2, ffn_hidden_size: 1024}}\n"
      "parallelism: {tensor: 1, pipeline: 1, context: 2, data: 4, expert: 4}\n"
      "training: {micro_batch_size: 1, global_batch_size: 8}\n"
      "simulation: {host_time_scale: 0}\n"  // an exported workload carries no host issue times (docs/CHAKRA.md)
      "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\n");
  const std::string et = test::temp_dir() + "chakra-moe", back = test::temp_dir() + "chakra-moe-back";
  std::filesystem::remove_all(et);
  std::filesystem::remove_all(back);
  auto r = test::run_cli("trace export-chakra " + job + " --out " + et + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  r = test::run_cli("trace import " + et + "/workload.*.et --out " + back + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json a = summary_of(job, ""),
                       b = summary_of(job, "--set simulation.overlap_model=sm_share --workload " + back);
  EXPECT_GT(a["comm_message_bytes_per_rank"]["cp"].get<int64_t>(), 0);
  EXPECT_GT(a["comm_message_bytes_per_rank"]["ep"].get<int64_t>(), 0);
  EXPECT_EQ(a["comm_message_bytes_per_rank"], b["comm_message_bytes_per_rank"]);
  EXPECT_DOUBLE_EQ(a["step_time_s"].get<double>(), b["step_time_s"].get<double>());
}

// A real trace in Chakra's JSON form (../shared/data/real/chakra/chakra.0.json.gz). Counted independently from the
// file: GPU compute nodes (NodeType 4, is_cpu_op false) and their runtimes, GPU collective nodes, CPU nodes.
TEST(Chakra, ImportsARealChakraJsonTrace) {
  const std::string path = test::real("chakra/chakra.0.json.gz");
  gzFile f = gzopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buf[65536];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  const auto j = nlohmann::json::parse(text);
  int64_t gpu_compute = 0, gpu_coll = 0, cpu = 0, runtime_us = 0;
  for (const auto& n : j["workload_graph"]) {
    if (n["is_cpu_op"].get<bool>()) ++cpu;
    else if (n["NodeType"] == 4) ++gpu_compute, runtime_us += n.value("runtime", int64_t{0});  // 157 nodes have none
    else if (n["NodeType"] == 7) ++gpu_coll;
  }
  ASSERT_EQ(gpu_compute, 1209);  // what the file holds, as counted when this test was written
  const std::string back = test::temp_dir() + "chakra-real";
  std::filesystem::remove_all(back);
  const auto r = test::run_cli("trace import " + path + " --out " + back);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto prog = nlohmann::json::parse(test::read_file(back + "/rank0.json"));
  int64_t compute = 0, coll = 0, ns = 0;
  for (const auto& o : prog["ops"]) {
    if (o["kind"] == "compute") ++compute, ns += o["duration_ns"].get<int64_t>();
    if (o["kind"] == "collective") ++coll;
  }
  EXPECT_EQ(compute, gpu_compute);
  EXPECT_EQ(coll, gpu_coll);
  EXPECT_EQ(ns, runtime_us * 1000);
  EXPECT_EQ(prog["chakra"]["cpu_nodes_skipped"].get<int64_t>(), cpu);
  // Replayed on one A100: the collectives have no size in the file, so they replay their measured time; the step is
  // at least the compute.
  const std::string job = test::write_temp(
      "chakra-one.yaml",
      "model: {name: traced, num_layers: 2, hidden_size: 256, num_attention_heads: 4, ffn_hidden_size: 1024,"
      " vocab_size: 1000, seq_length: 128}\nparallelism: {tensor: 1, pipeline: 1, data: 1}\n"
      "training: {micro_batch_size: 1, global_batch_size: 1}\ncluster: {gpu: A100-80GB, num_gpus: 1, gpus_per_node: 8}\n");
  const nlohmann::json s = summary_of(job, "--workload " + back);
  EXPECT_GE(s["step_time_s"].get<double>(), runtime_us * 1e-6);
}

// small_chakra.0.json: the GPU broadcast's data_deps are CPU nodes whose own dependencies lead to no GPU node, so the
// imported collective waits for nothing; the file's ctrlDeps name node 3, which it does not hold, and are not read.
TEST(Chakra, DependenciesThroughCpuNodesResolveToGpuAncestors) {
  const std::string back = test::temp_dir() + "chakra-small";
  std::filesystem::remove_all(back);
  const auto r = test::run_cli("trace import " + test::real("chakra/small_chakra.0.json") + " --out " + back);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto prog = nlohmann::json::parse(test::read_file(back + "/rank0.json"));
  ASSERT_EQ(prog["ops"].size(), 2u);
  EXPECT_EQ(prog["ops"][0]["kind"], "compute");
  EXPECT_EQ(prog["ops"][0]["duration_ns"], 4000);
  EXPECT_EQ(prog["ops"][1]["coll"], "broadcast");
  EXPECT_EQ(prog["ops"][1]["duration_ns"], 28000);
  EXPECT_TRUE(prog["ops"][1]["after"].empty());
  EXPECT_EQ(prog["world_size"], 8);  // the file's ngpus
}

// A GPU node behind a CPU node keeps the dependency: b -> cpu -> a becomes b after a.
TEST(Chakra, GpuAncestorsThroughACpuChainAreKept) {
  chakra::EtGraph g;
  g.version = "0.0.4";
  auto node = [](uint64_t id, int type, bool cpu, std::vector<uint64_t> deps) {
    chakra::EtNode n;
    n.id = id;
    n.name = "n" + std::to_string(id);
    n.type = type;
    n.duration_micros = 10;
    n.data_deps = std::move(deps);
    n.attrs.push_back({"is_cpu_op", cpu});
    return n;
  };
  g.nodes = {node(5, 4, true, {7}), node(7, 4, false, {}), node(9, 4, true, {5}), node(11, 4, false, {9})};
  const auto r = chakra::import_graph(g, "mem.et", 0, nullptr);
  ASSERT_EQ(r.rank.ops.size(), 2u);
  EXPECT_EQ(r.rank.ops[1].name, "n11");
  EXPECT_EQ(r.rank.ops[1].after, std::vector<int>{0});
  EXPECT_EQ(r.cpu_nodes_skipped, 2);
  // A node listed before the node it depends on moves after it.
  g.nodes = {node(1, 4, false, {2}), node(2, 4, false, {})};
  const auto moved = chakra::import_graph(g, "mem.et", 0, nullptr);
  EXPECT_EQ(moved.rank.ops[0].name, "n2");
  EXPECT_EQ(moved.rank.ops[1].after, std::vector<int>{0});
  // A cycle is an error naming a node.
  g.nodes = {node(1, 4, false, {2}), node(2, 4, false, {1})};
  try {
    chakra::import_graph(g, "cyc.et", 0, nullptr);
    FAIL() << "a cycle was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cyc.et: node"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
  // So is a node that waits for itself (it was dropped silently, the node kept without the dependency).
  g.nodes = {node(1, 4, false, {}), node(2, 4, false, {2})};
  try {
    chakra::import_graph(g, "self.et", 0, nullptr);
    FAIL() << "a self-dependency was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("self.et: node"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("names the node itself"), std::string::npos) << e.what();
  }
}

TEST(Chakra, BadInputIsExitTwoNamingTheFileAndTheRule) {
  const std::string dir = test::temp_dir() + "chakra-bad";
  std::filesystem::remove_all(dir);
  ASSERT_EQ(test::run_cli("trace export-chakra " + test::write_temp("chakra.yaml", kChakraJob) + " --out " + dir).code, 0);
  // A truncated file.
  const std::string b = file_bytes(dir + "/workload.0.et");
  const std::string cut = test::write_temp("cut.0.et", b.substr(0, b.size() - 3));
  auto r = test::run_cli("trace import " + cut + " --out " + dir + "/x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("cut.0.et: node message"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("truncated"), std::string::npos) << r.output;
  // A group the group file does not hold.
  const std::string groups = test::write_temp("groups.json", "{\"1\": [0, 1]}");
  r = test::run_cli("trace import " + dir + "/workload.0.et --comm-groups " + groups + " --out " + dir + "/y");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("pg_name '2' is not a group of " + groups), std::string::npos) << r.output;
  // A dependency on a node the file does not hold.
  chakra::EtGraph g;
  chakra::EtNode n;
  n.id = 3;
  n.type = 4;
  n.data_deps = {99};
  g.nodes = {n};
  try {
    chakra::import_graph(g, "dangling.et", 0, nullptr);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("data_deps names node 99"), std::string::npos) << e.what();
  }
  // Not a trace at all.
  r = test::run_cli("trace import " + test::write_temp("junk.0.et", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff") +
                    " --out " + dir + "/z");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("junk.0.et"), std::string::npos) << r.output;
}

namespace stepsim {
namespace {

// Issue 47: an all-gather's comm_size is each rank's part (what ASTRA-sim reads and Chakra's PyTorch converter writes,
// the sum of the op's input tensors), not the gathered output: a Chakra trace from another tool gathers comm_size x the
// group's size; over the whole world the JSON's ngpus gives that size, and without it the trace is refused.
TEST(Chakra, AnAllGathersCommSizeIsEachRanksPart) {
  const int64_t ag = chakra::chakra_comm_type(workload::CollType::AllGather);
  auto import_bytes = [&](const std::string& name, const std::string& node, const std::string& top,
                          const std::string& groups) {
    const std::string path = test::write_temp(name + ".0.json", "{" + top + "\"workload_graph\": [" + node + "]}");
    std::string cmd = "trace import " + path + " --out " + test::temp_dir() + name;
    if (!groups.empty()) cmd += " --comm-groups " + test::write_temp(name + "-groups.json", groups);
    const auto r = test::run_cli(cmd);
    if (r.code != 0) return std::make_pair(int64_t{-1}, r.output);
    const auto prog = nlohmann::json::parse(test::read_file(test::temp_dir() + name + "/rank0.json"));
    return std::make_pair(prog["ops"][0]["bytes"].get<int64_t>(), r.output);
  };
  const std::string in_group = "{\"Id\": 1, \"Name\": \"ag\", \"NodeType\": 7, \"is_cpu_op\": false, \"comm_type\": " +
                               std::to_string(ag) + ", \"comm_size\": 1048576, \"pg_name\": \"1\"}";
  EXPECT_EQ(import_bytes("ag-group", in_group, "", "{\"1\": [0, 1, 2, 3]}").first, 4 * 1048576);
  const std::string world = "{\"Id\": 1, \"Name\": \"ag\", \"NodeType\": 7, \"is_cpu_op\": false, \"comm_type\": " +
                            std::to_string(ag) + ", \"comm_size\": 1000}";
  EXPECT_EQ(import_bytes("ag-world", world, "\"ngpus\": 8, ", "").first, 8000);
  const auto refused = import_bytes("ag-unknown", world, "", "");
  EXPECT_EQ(refused.first, -1);
  EXPECT_NE(refused.second.find("an all-gather over the whole world needs its size"), std::string::npos)
      << refused.second;
}

}  // namespace
}  // namespace stepsim
