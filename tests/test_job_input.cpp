// Job inputs: the job file schema, --set overrides, includes relative to the job file, and every
// bad-input rule of issue 2 item 2 — through the library (message names key and rule) and through the
// CLI (exit code 2, one line).
#include <gtest/gtest.h>

#include <chrono>

#include <filesystem>
#include <fstream>

#include <yaml-cpp/yaml.h>

#include "stepsim/input/job_loader.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using test::job_from_yaml;
using test::run_cli;
using test::small_gpt_yaml;

// Replaces the first occurrence of `from` in `s`.
std::string edit(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

std::string error_of(const std::string& yaml) {
  try {
    job_from_yaml(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(JobInput, ValidJobHasDefaultsAndDerivedFields) {
  spec::JobSpec j = job_from_yaml(edit(small_gpt_yaml(2, 2, 4, 16), ", data: 4", ""));
  EXPECT_EQ(j.parallelism.data, 4);  // derived: 16 GPUs / (2 x 2)
  EXPECT_EQ(j.cluster.num_gpus, 16);
  EXPECT_EQ(j.model.num_query_groups, 16);
  EXPECT_EQ(j.model.kv_channels, 64);
  EXPECT_DOUBLE_EQ(j.cluster.inter_node.bandwidth_GBps, 50.0);  // 400 Gb/s
  EXPECT_EQ(j.num_microbatches(), 4);
}

struct BadCase {
  const char* name;
  std::string yaml;
  std::vector<std::string> must_contain;
};

std::vector<BadCase> bad_cases() {
  const std::string ok = small_gpt_yaml(2, 2, 2, 16);
  const std::string moe = edit(ok, "seq_length: 1024}", "seq_length: 1024, moe: {num_experts: 6, topk: 2, ffn_hidden_size: 1024}}");
  return {
      {"malformed_yaml", "model: {name: [unclosed\n", {"test.yaml:", "malformed YAML"}},
      {"unknown_key", edit(ok, "name: tiny,", "name: tiny, num_layer: 3,"), {"unknown key model.num_layer"}},
      // Issue 16 item 5: a misspelt required key is reported as the unknown key it is, with the key it resembles,
      // not as the required key that is missing; a key resembling nothing gets no suggestion.
      {"misspelt_required_key", edit(ok, "hidden_size: 1024", "hidden_sizee: 1024"),
       {"unknown key model.hidden_sizee (did you mean model.hidden_size?)"}},
      {"misspelt_optional_key", edit(ok, "global_batch_size: 16", "global_batch_size: 16, recompte: full"),
       {"unknown key training.recompte (did you mean training.recompute?)"}},
      {"missing_required_key", edit(ok, "hidden_size: 1024, ", ""), {"key model.hidden_size: is required"}},
      // A rule that would fail on the stand-in of an absent required key reports the absent key (topk 2 > the
      // stand-in num_experts 1), and a misspelt spelling of it as unknown.
      {"rule_on_missing_key", edit(ok, "seq_length: 1024}", "seq_length: 1024, moe: {topk: 2, ffn_hidden_size: 1024}}"),
       {"key model.moe.num_experts: is required"}},
      {"rule_on_misspelt_key", edit(ok, "seq_length: 1024}", "seq_length: 1024, moe: {num_expert: 8, topk: 2}}"),
       {"unknown key model.moe.num_expert (did you mean model.moe.num_experts?)"}},
      {"unknown_unlike_anything", ok + "zzzzzzzz: 1\n", {"unknown key zzzzzzzz"}},
      {"unknown_top_key", ok + "optimiser: adam\n", {"unknown key optimiser"}},
      {"unknown_gpu", edit(ok, "gpu: H100-SXM", "gpu: H1000"), {"unknown GPU", "H1000", "cluster.gpu"}},
      {"negative_layers", edit(ok, "num_layers: 8", "num_layers: -8"), {"model.num_layers", "[1,"}},
      {"zero_hidden", edit(ok, "hidden_size: 1024", "hidden_size: 0"), {"model.hidden_size"}},
      {"non_integer", edit(ok, "num_layers: 8", "num_layers: eight"), {"model.num_layers", "integer"}},
      {"zero_micro_batch", edit(ok, "micro_batch_size: 1", "micro_batch_size: 0"), {"training.micro_batch_size"}},
      {"tp_not_dividing_heads", edit(ok, "num_attention_heads: 16", "num_attention_heads: 5, kv_channels: 64"),
       {"parallelism.tensor", "does not divide model.num_attention_heads 5"}},
      {"tp_not_dividing_groups", edit(edit(ok, "num_attention_heads: 16,", "num_attention_heads: 16, num_query_groups: 1,"), "tensor: 2", "tensor: 2"),
       {"parallelism.tensor", "num_query_groups"}},
      {"product_not_gpus", edit(ok, "num_gpus: 8", "num_gpus: 16"), {"parallelism", "does not equal cluster.num_gpus 16"}},
      {"batch_not_divisible", edit(ok, "global_batch_size: 16", "global_batch_size: 15"),
       {"training.global_batch_size", "micro_batch_size x data"}},
      {"ep_not_dividing_experts", edit(moe, "data: 2}", "data: 2, expert: 4}"), {"parallelism.expert", "num_experts 6"}},
      {"account_for_embedding_not_dividing", edit(ok, "data: 2}", "data: 2, account_for_embedding_in_pipeline_split: true}"),
       {"parallelism.account_for_embedding_in_pipeline_split", "model.num_layers 8 + 1", "not divisible"}},
      {"first_stage_layers_leave_uneven_rest", edit(ok, "data: 2}", "data: 2, first_stage_layers: 4, last_stage_layers: 3}"),
       {"parallelism.first_stage_layers", "remaining layers"}},
      {"uneven_stages_wrong_sum", edit(ok, "data: 2}", "data: 2, pipeline_layers: [3, 4]}"), {"parallelism.pipeline_layers", "sums to 7"}},
      {"bad_enum", edit(ok, "global_batch_size: 16", "global_batch_size: 16, precision: fp12"), {"training.precision", "fp32 | fp16 | bf16 | fp8"}},
      {"bad_bool", edit(ok, "data: 2}", "data: 2, sequence_parallel: maybe}"), {"parallelism.sequence_parallel", "true or false"}},
      {"missing_cluster", ok.substr(0, ok.find("cluster:")), {"key cluster", "required"}},
      {"slow_rank_outside", edit(ok, "gpus_per_node: 8", "gpus_per_node: 8, slow_ranks: {99: 1.5}"), {"cluster.slow_ranks.99"}},
      {"p2p_overlap_without_interleaving", edit(ok, "data: 2}", "data: 2, overlap_p2p_comm: true}"),
       {"parallelism.overlap_p2p_comm", "interleaved-1f1b"}},
      {"interleaved_without_stages", edit(ok, "data: 2}", "data: 2, schedule: interleaved-1f1b}"), {"parallelism.virtual_stages"}},
  };
}

TEST(JobInput, EveryBadInputNamesKeyAndRule) {
  for (const BadCase& c : bad_cases()) {
    const std::string msg = error_of(c.yaml);
    for (const std::string& part : c.must_contain) {
      EXPECT_NE(msg.find(part), std::string::npos) << c.name << ": message '" << msg << "' lacks '" << part << "'";
    }
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c.name << ": message must be one line";
  }
}

TEST(JobInput, EveryBadInputExitsTwoFromTheCli) {
  for (const BadCase& c : bad_cases()) {
    const std::string path = test::write_temp(std::string("bad_") + c.name + ".yaml", c.yaml);
    const auto r = run_cli("simulate " + path);
    EXPECT_EQ(r.code, 2) << c.name << ": " << r.output;
    EXPECT_EQ(r.output.rfind("stepsim: error: ", 0), 0u) << c.name << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << c.name << ": " << r.output;
    EXPECT_NE(r.output.find(path), std::string::npos) << c.name << ": message must name the file: " << r.output;
  }
}

TEST(JobInput, UnevenStagesAreAccepted) {
  spec::JobSpec j = job_from_yaml(edit(edit(small_gpt_yaml(2, 2, 2, 16), "num_layers: 8", "num_layers: 9"), "data: 2}",
                                       "data: 2, pipeline_layers: [4, 5]}"));
  EXPECT_EQ(j.parallelism.pipeline_layers, (std::vector<int>{4, 5}));
}

TEST(JobInput, SetOverridesAnyKey) {
  const std::string path = test::write_temp("set_job.yaml", small_gpt_yaml(2, 2, 2, 16));
  spec::JobSpec j = spec::load_job_file(stepsim::catalog::shipped().gpus, path, {"model.num_layers=16", "cluster.inter_node.bandwidth_Gbps=800",
                                               "training.recompute=full", "cluster.slow_ranks.3=1.5"});
  EXPECT_EQ(j.model.num_layers, 16);
  EXPECT_DOUBLE_EQ(j.cluster.inter_node.bandwidth_GBps, 100.0);
  EXPECT_EQ(j.training.recompute, spec::Recompute::Full);
  EXPECT_DOUBLE_EQ(j.cluster.slow_ranks.at(3), 1.5);
  EXPECT_THROW(spec::load_job_file(stepsim::catalog::shipped().gpus, path, {"model.num_layer=16"}), InputError);  // unknown key stays an error
  EXPECT_THROW(spec::load_job_file(stepsim::catalog::shipped().gpus, path, {"model.num_layers"}), InputError);    // no '='
  const auto r = run_cli("simulate " + path + " --set model.num_layers=abc");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("model.num_layers"), std::string::npos) << r.output;
}

// apply_overrides builds the node of a plain value (a number, name or path) itself instead of running YAML's parser:
// every value, over an alphabet of YAML's indicators and the letters of its null and document-end spellings, must give
// the node YAML::Load gives (text YAML refuses stays the string it is).
TEST(JobInput, SetValuesAreReadAsYamlReadsThem) {
  const std::string alphabet = "a1.-_/+nulNL~: #[,!&*?'";
  std::vector<std::string> values = {"null", "Null", "NULL", "...", "....", "---", "1e9", "0x10", "+3", ".5", "-5",
                                     "H100-SXM", "a/b/c.yaml", "true", "x-y", "1.5e-3", "nan", ".inf", "-.inf"};
  for (const char a : alphabet) {
    values.emplace_back(1, a);
    for (const char b : alphabet) {
      values.push_back(std::string{a, b});
      for (const char c : alphabet) values.push_back(std::string{a, b, c});
    }
  }
  for (const std::string& value : values) {
    YAML::Node root;
    spec::apply_overrides(root, {"k=" + value});
    YAML::Node expected;
    try {
      expected = YAML::Load(value);
    } catch (const YAML::Exception&) {
      expected = YAML::Node(value);
    }
    const YAML::Node got = root["k"];
    ASSERT_EQ(got.Type(), expected.Type()) << "'" << value << "'";
    if (expected.IsScalar()) {
      ASSERT_EQ(got.Scalar(), expected.Scalar()) << "'" << value << "'";
    } else if (expected.IsSequence() || expected.IsMap()) {
      ASSERT_EQ(got.size(), expected.size()) << "'" << value << "'";
    }
  }
}

TEST(JobInput, PathsInsideAJobAreRelativeToIt) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(stepsim::test::temp_dir()) / "rel_job" / "sub";
  fs::create_directories(dir / "clusters");
  fs::copy_file(test::source_dir() + "/tests/data/hf/llama-2-7b-hf.json", dir / "config.json",
                fs::copy_options::overwrite_existing);
  std::ofstream(dir / "clusters" / "c.yaml") << "gpu: A100-80GB\nnum_gpus: 8\ngpus_per_node: 8\n"
                                                "intra_node: {bandwidth_GBps: 300}\ninter_node: {bandwidth_Gbps: 200}\n";
  std::ofstream(dir / "job.yaml") << "model: {hf_config: config.json, seq_length: 2048}\n"
                                     "parallelism: {tensor: 8}\ntraining: {global_batch_size: 8}\ncluster: clusters/c.yaml\n";
  // Loaded from another working directory: includes resolve against the job file's folder.
  spec::JobSpec j = spec::load_job_file(stepsim::catalog::shipped().gpus, (dir / "job.yaml").string());
  EXPECT_EQ(j.model.num_layers, 32);
  EXPECT_EQ(j.model.hidden_size, 4096);
  EXPECT_EQ(j.model.seq_length, 2048);  // the job's key overrides the config
  EXPECT_EQ(j.cluster.gpu, "A100-80GB");
  EXPECT_EQ(j.parallelism.data, 1);
}

TEST(JobInput, PathsOnTheCommandLineAreRelativeToTheWorkingDirectory) {
  // Issue 15 item 7: one rule, a path is relative to where it is written. In the job file: its folder (above). In
  // --set: the working directory, for the overlap file, a cluster file and an HF config alike (a cluster or config
  // given by --set is read as if written in the job, not left as an unread string).
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(stepsim::test::temp_dir()) / "cli_paths" / "sub";
  fs::create_directories(dir);
  fs::copy_file(test::source_dir() + "/data/overlap.yaml", dir / "ov.yaml", fs::copy_options::overwrite_existing);
  std::ofstream(dir / "c.yaml") << "gpu: A100-80GB\nnum_gpus: 8\ngpus_per_node: 8\n"
                                   "intra_node: {bandwidth_GBps: 300}\ninter_node: {bandwidth_Gbps: 200}\n";
  const fs::path job = dir / "job.yaml";
  std::ofstream(job) << small_gpt_yaml(2, 2, 2, 16);
  // The test runs in some working directory (the build folder); the same files named relative to it.
  const std::string rel_dir = fs::relative(dir, fs::current_path()).string();
  ASSERT_TRUE(fs::path(rel_dir).is_relative());
  spec::JobSpec j = spec::load_job_file(stepsim::catalog::shipped().gpus, job.string(), {"simulation.overlap_model=coefficients",
                                                       "simulation.overlap_file=" + rel_dir + "/ov.yaml",
                                                       "cluster=" + rel_dir + "/c.yaml"});
  EXPECT_EQ(j.simulation.overlap_file, (fs::path(rel_dir) / "ov.yaml").lexically_normal().string());
  EXPECT_EQ(j.cluster.gpu, "A100-80GB");
  const auto ok = run_cli("simulate " + job.string() + " --quiet --set simulation.overlap_model=coefficients --set "
                          "simulation.overlap_file=" + rel_dir + "/ov.yaml");
  EXPECT_EQ(ok.code, 0) << ok.output;
  // Named relative to the job's folder instead, it is not found, and the message says which path was tried.
  const auto wrong = run_cli("simulate " + job.string() + " --quiet --set simulation.overlap_model=coefficients --set "
                             "simulation.overlap_file=ov.yaml");
  EXPECT_EQ(wrong.code, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("ov.yaml"), std::string::npos) << wrong.output;
  // An HF config given by --set is read (a file that is not JSON is an error naming it), not silently ignored.
  const auto hf = run_cli("simulate " + job.string() + " --quiet --set model.hf_config=" + rel_dir + "/c.yaml");
  EXPECT_EQ(hf.code, 2) << hf.output;
  EXPECT_NE(hf.output.find("c.yaml"), std::string::npos) << hf.output;
}

TEST(JobInput, ABadKeyInAnIncludedClusterFileNamesThatFile) {
  // Issue 15 item 12: the typo is in clusters/typo-c2.yaml, not in the job that includes it.
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(stepsim::test::temp_dir()) / "typo12";
  fs::create_directories(dir / "clusters");
  std::ofstream(dir / "clusters" / "typo-c2.yaml") << "gpu: H100-SXM\nnum_gpus: 8\ngpu_per_node: 8\n";
  std::ofstream(dir / "typo9.yaml") << small_gpt_yaml(2, 2, 2, 16).substr(0, small_gpt_yaml(2, 2, 2, 16).find("cluster:"))
                                    << "cluster: clusters/typo-c2.yaml\n";
  const std::string cluster = (dir / "clusters" / "typo-c2.yaml").lexically_normal().string();
  const auto r = run_cli("simulate " + (dir / "typo9.yaml").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(cluster + ": unknown key cluster.gpu_per_node"), std::string::npos) << r.output;
  // The same file given with --cluster to `comm`, and a typo written in the job itself, keep naming their file.
  const auto c = run_cli("comm --collective all_reduce --sizes 1M --cluster " + cluster);
  EXPECT_EQ(c.code, 2) << c.output;
  EXPECT_NE(c.output.find(cluster + ": unknown key cluster.gpu_per_node"), std::string::npos) << c.output;
  // A typo given with --set is the command line's, not the job file's or its cluster file's: it is named as given.
  const std::string clean = test::write_temp("typo_clean.yaml", small_gpt_yaml(2, 2, 2, 16));
  const auto j = run_cli("simulate " + clean + " --set cluster.gpu_per_node=8");
  EXPECT_EQ(j.code, 2) << j.output;
  EXPECT_NE(j.output.find("--set cluster.gpu_per_node=8: unknown key cluster.gpu_per_node"), std::string::npos) << j.output;
  std::ofstream(dir / "clusters" / "ok.yaml") << "gpu: H100-SXM\nnum_gpus: 8\ngpus_per_node: 8\n";
  std::ofstream(dir / "ok9.yaml") << small_gpt_yaml(2, 2, 2, 16).substr(0, small_gpt_yaml(2, 2, 2, 16).find("cluster:"))
                                  << "cluster: clusters/ok.yaml\n";
  const auto k = run_cli("simulate " + (dir / "ok9.yaml").string() + " --set cluster.gpu_per_node=8 --set model.num_layer=4");
  EXPECT_EQ(k.code, 2) << k.output;
  EXPECT_NE(k.output.find("--set "), std::string::npos) << k.output;
  EXPECT_EQ(k.output.find("ok.yaml: unknown key"), std::string::npos) << k.output;
  const auto m = run_cli("simulate " + (dir / "ok9.yaml").string() + " --set model.num_layer=4");
  EXPECT_NE(m.output.find("--set model.num_layer=4: unknown key model.num_layer (did you mean model.num_layers?)"),
            std::string::npos) << m.output;
}

// Issue 48 item 1: nine levels of nine aliases each (9^9 = 387 million nodes once expanded, from 370 bytes) took
// minutes in the duplicate-key walk; refused at once, naming the file, for a job file and a cluster file alike. An
// alias used a few times in a real job is read as before.
TEST(JobInput, AnAliasBombIsRefusedAtOnce) {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string p = "*a" + std::to_string(i - 1);
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p;
    for (int k = 1; k < 9; ++k) bomb += ", " + p;
    bomb += "]\n";
  }
  const std::string path = test::write_temp("alias_bomb.yaml", bomb);
  const auto start = std::chrono::steady_clock::now();
  auto r = run_cli("simulate " + path);
  EXPECT_LT(std::chrono::steady_clock::now() - start, test::kRefusalTime);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ": malformed YAML: its aliases expand it past two nodes per byte of its text"),
            std::string::npos) << r.output;
  // The same bomb as a cluster file (`comm --cluster`, a job's `cluster: FILE`): one YAML reader for every file.
  const auto cluster_start = std::chrono::steady_clock::now();
  r = run_cli("comm --collective all_reduce --gpus 8 --sizes 1M --cluster " + path);
  EXPECT_LT(std::chrono::steady_clock::now() - cluster_start, test::kRefusalTime);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ": malformed YAML: its aliases expand it past two nodes per byte of its text"),
            std::string::npos) << r.output;
  // The same bomb as one --set value (a flow sequence of the nine anchored lists).
  std::string flow = "[&a0 [x, x, x, x, x, x, x, x, x]";
  for (int i = 1; i <= 9; ++i) {
    flow += ", &a" + std::to_string(i) + " [*a" + std::to_string(i - 1);
    for (int k = 1; k < 9; ++k) flow += ", *a" + std::to_string(i - 1);
    flow += "]";
  }
  flow += "]";
  const std::string ok_job = test::write_temp("alias_ok.yaml", small_gpt_yaml(1, 1, 8, 8));
  r = run_cli("simulate " + ok_job + " --set 'model.name=" + flow + "'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--set model.name: malformed YAML: its aliases expand it past two nodes per byte"),
            std::string::npos) << r.output;
  const std::string job = small_gpt_yaml(1, 1, 8, 8, "", "", ", sustained_clock: &c 0.8, attention_scale: *c");
  EXPECT_EQ(test::job_error(job), "");
  EXPECT_DOUBLE_EQ(test::job_from_yaml(job).simulation.attention_scale, 0.8);
}

// Issue 48 item 4: a 16 MiB job or cluster file of one long list ("[1,1,...]": 8 M nodes) took 3.7 GiB and minutes to
// load into yaml-cpp's tree; the nodes are counted first, without building them, and refused above 2^18. The peak
// memory is checked by bench-style runs (docs/RELIABILITY.md); here the time and the message.
TEST(JobInput, AYamlFileOfMillionsOfNodesIsRefusedBeforeItIsBuilt) {
  std::string big = "model: [";
  big.reserve(16u << 20);
  while (big.size() < (16u << 20) - 16) big += "1,";
  big += "1]\n";
  const std::string path = test::write_temp("big_list.yaml", big);
  for (const std::string& cmd : {"simulate " + path, "comm --cluster " + path}) {
    const auto start = std::chrono::steady_clock::now();
    auto r = run_cli(cmd);
    EXPECT_LT(std::chrono::steady_clock::now() - start, test::kRefusalTime) << cmd;
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(path + ": YAML of more than 262144 nodes"), std::string::npos) << r.output;
  }
}

TEST(JobInput, DuplicateKeysSecondDocumentsAndNonFilesAreErrors) {
  // Issue 15 items 14 and 18: accepted with exit 0 before (the first value kept, the second document ignored), or
  // reported as "no such file".
  const std::string job = small_gpt_yaml(2, 2, 2, 16);
  const std::string dup = test::write_temp("dup_key.yaml", job + "training: {global_batch_size: 32}\n");
  auto r = run_cli("simulate " + dup);
  EXPECT_EQ(r.code, 2) << r.output;
  // small_gpt_yaml has 5 lines: the duplicate is line 6.
  EXPECT_NE(r.output.find(dup + ":6: key 'training' appears twice in one mapping"), std::string::npos) << r.output;
  const std::string nested = test::write_temp("dup_nested.yaml", "model: {name: a, name: b}\n");
  r = run_cli("simulate " + nested);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(nested + ":1: key 'name' appears twice"), std::string::npos) << r.output;
  const std::string two = test::write_temp("two_docs.yaml", job + "---\nmodel: {num_layers: 2}\n");
  r = run_cli("simulate " + two);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(two + ":6: a second YAML document"), std::string::npos) << r.output;  // the `---` line
  // fuzz_job_yaml's input that made YAML::LoadAll loop forever: an error at once.
  const std::string looped = test::write_temp("fuzz_loop.yaml", ",modectivation_[1, 2\n");
  r = run_cli("simulate " + looped);
  EXPECT_EQ(r.code, 2) << r.output;
  r = run_cli("simulate " + test::temp_dir());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("it is a directory, not a file"), std::string::npos) << r.output;
  r = run_cli("simulate /dev/null");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("/dev/null: cannot read job file: not a regular file"), std::string::npos) << r.output;
  // A document marker before the only document is fine.
  EXPECT_EQ(run_cli("simulate --quiet " + test::write_temp("one_doc.yaml", "---\n" + job)).code, 0);
}

TEST(JobInput, MissingAndMalformedIncludes) {
  const std::string job = "model: {hf_config: nowhere.json}\ntraining: {global_batch_size: 8}\ncluster: {num_gpus: 1}\n";
  const auto r = run_cli("simulate " + test::write_temp("missing_include.yaml", job));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("nowhere.json"), std::string::npos) << r.output;
  test::write_temp("broken.json", "{\"model_type\": \"llama\", ");
  const auto r2 = run_cli("simulate " + test::write_temp("broken_include.yaml", "model: {hf_config: broken.json}\n"
                                                                                  "training: {global_batch_size: 8}\ncluster: {num_gpus: 1}\n"));
  EXPECT_EQ(r2.code, 2);
  EXPECT_NE(r2.output.find("broken.json"), std::string::npos) << r2.output;
  const auto r3 = run_cli("simulate /nonexistent/job.yaml");
  EXPECT_EQ(r3.code, 2);
  EXPECT_NE(r3.output.find("/nonexistent/job.yaml"), std::string::npos) << r3.output;
}

TEST(JobInput, MegatronArgsJobRunsWithAClusterFile) {
  const std::string cluster = test::source_dir() + "/examples/clusters/h800-96.yaml";
  const std::string args =
      "--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --max-position-embeddings 2048 "
      "--micro-batch-size 1 --global-batch-size 96 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 12 "
      "--sequence-parallel --bf16 --use-distributed-optimizer --recompute-granularity selective";
  spec::JobSpec j = spec::load_megatron_job(stepsim::catalog::shipped().gpus, args, cluster);
  EXPECT_EQ(j.parallelism.tensor, 8);
  EXPECT_EQ(j.parallelism.pipeline, 12);
  EXPECT_EQ(j.parallelism.data, 1);
  EXPECT_EQ(j.training.recompute, spec::Recompute::Selective);
  EXPECT_TRUE(j.training.distributed_optimizer);
  const auto r = run_cli("simulate --megatron-args \"" + args + "\" --cluster " + cluster + " --quiet");
  EXPECT_EQ(r.code, 0) << r.output;
  const auto bad = run_cli("simulate --megatron-args \"--num-layers 96 --hidden-size x\" --cluster " + cluster);
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--hidden-size"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace stepsim
