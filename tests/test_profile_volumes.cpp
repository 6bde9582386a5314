// The §2.4 volume models next to measured per-rank volumes (thesis Table 5.1), and communicator inference when
// two parallel dimensions have the same size. Every expected number is computed by hand in the comment above it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <sstream>

#include "stepsim/ingest/profile/profile.hpp"
#include "stepsim/ingest/profile/profile_outputs.hpp"
#include "stepsim/ingest/profile/volume_model.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"

namespace stepsim::profile {
namespace {

// Thesis §5.3.5: l = 16, h = 512, s = 1024, V = 50257, b = 4, β = 2, 10 iterations.
ModelShape thesis_model() {
  return parse_model_options("layers=16,hidden=512,seq=1024,vocab=50257,mbs=4,bytes=2,iterations=10");
}

// eq. 2.4 as printed: 12·16·512² = 50331648, + l·h = 8192, + V + s = 51281 → 50391121 (the thesis' "50.4 M").
TEST(ProfileVolumeModel, ParamsEq24) {
  EXPECT_DOUBLE_EQ(model_params(thesis_model()), 50391121.0);
  EXPECT_DOUBLE_EQ(model_params(parse_model_options("params=7000000000", thesis_model())), 7e9);
}

// Table 5.1, DP = 4: 2 · 3/4 · 50391121 · 2 B = 151173363 B per step (thesis 151.2 MB), × 10 = 1511733630 B (1.51 GB).
TEST(ProfileVolumeModel, Table51Dp) {
  const auto v = model_volumes(thesis_model(), parse_parallelism("dp=4"), 0);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_DOUBLE_EQ(v.at("DP"), 1511733630.0);
}

// Table 5.1, TP = 4 (8 layers, m = 4): 8 · 8·4·1024·512 · 3/4 · 2 B = 201326592 B per micro-batch (201.3 MB),
// × 4 × 10 = 8053063680 B (8.05 GB).
TEST(ProfileVolumeModel, Table51Tp) {
  const auto m = parse_model_options("layers=8,microbatches=4", thesis_model());
  EXPECT_DOUBLE_EQ(model_volumes(m, parse_parallelism("tp=4"), 2).at("TP"), 8053063680.0);
}

// Table 5.1, PP = 4 (m = 16): 4·1024·512·2 B = 4194304 B per transfer, × 2 directions × 16 = 134217728 B per
// boundary and step; edge ranks (0, 3) one boundary → 1342177280 B (1.34 GB), middle ranks two → 2684354560 B.
TEST(ProfileVolumeModel, Table51PpEdgeAndMiddle) {
  const auto m = parse_model_options("microbatches=16", thesis_model());
  const auto p = parse_parallelism("pp=4");
  const double expect[4] = {1342177280.0, 2684354560.0, 2684354560.0, 1342177280.0};
  for (int r = 0; r < 4; ++r) EXPECT_DOUBLE_EQ(model_volumes(m, p, r).at("PP"), expect[r]) << r;
  // With tp = 2 the stage of a rank is rank / 2 and each rank sends its h/2 shard (eq. 2.9): rank 2 is stage 1.
  const auto v = model_volumes(m, parse_parallelism("tp=2,pp=2"), 2);
  EXPECT_DOUBLE_EQ(v.at("PP"), 1342177280.0 / 2);
}

// Table 5.1, EP = 4 (dp = 4, 4 MoE layers, top-1, b·m = 16): 4·16·1024·1·512·3/4·2 B · 4 layers = 201326592 B per
// step, × 10 = 2013265920 B; the DP part counts the 12 dense layers' share: 1511733630 · 12/16 = 1133800222.5 B;
// together 3147066142.5 B (the thesis' 3.15 GB).
TEST(ProfileVolumeModel, Table51Ep) {
  const auto m = parse_model_options("microbatches=4,moe_layers=4,topk=1", thesis_model());
  const auto v = model_volumes(m, parse_parallelism("ep=4,dp=4"), 1);
  EXPECT_DOUBLE_EQ(v.at("EP"), 2013265920.0);
  EXPECT_DOUBLE_EQ(v.at("DP"), 1133800222.5);
  EXPECT_NEAR(v.at("EP") + v.at("DP"), 3.15e9, 0.005e9);
}

// CP (derived from §2.4.4): l = 2, h = 8, s = 16, b = m = 1, β = 2, cp = 2: 2 layers · 4 · 16·8 · 1/2 · 2 B = 1024 B.
// TP = 2 next to it sees s/cp = 8 tokens: 2 · 8·8·8 · 1/2 · 2 B = 1024 B; with tp = 2 the CP part halves to 512 B.
TEST(ProfileVolumeModel, CpAndTpWithCp) {
  const auto m = parse_model_options("layers=2,hidden=8,seq=16,vocab=1");
  EXPECT_DOUBLE_EQ(model_volumes(m, parse_parallelism("cp=2"), 0).at("CP"), 1024.0);
  const auto v = model_volumes(m, parse_parallelism("tp=2,cp=2"), 0);
  EXPECT_DOUBLE_EQ(v.at("TP"), 1024.0);
  EXPECT_DOUBLE_EQ(v.at("CP"), 512.0);
}

TEST(ProfileVolumeModel, BadOptionsNameTheKeyAndRule) {
  for (const char* bad_c : {"hidden=0", "layers=-3", "seq=x", "mbs=", "bytes=1.5", "foo=1"}) {
    const std::string bad = bad_c;
    try {
      parse_model_options(bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      const std::string key = bad.substr(0, bad.find('='));
      EXPECT_NE(std::string(e.what()).find("--model"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(parse_model_options("moe_layers=0"));
  EXPECT_THROW(check_model(parse_model_options("layers=2,hidden=8,seq=16")), InputError);  // no vocab, no params
  EXPECT_NO_THROW(check_model(parse_model_options("layers=2,hidden=8,seq=16,params=100")));
  EXPECT_THROW(check_model(parse_model_options("layers=2,hidden=8,seq=16,vocab=1,moe_layers=3")), InputError);
}

// Mixtral 8x7B's config.json: 32 layers, hidden 4096, vocab 32000, 32768 positions, every layer MoE, top-2.
TEST(ProfileVolumeModel, HfConfig) {
  const ModelShape m = model_from_hf_config(test::source_dir() + "/tests/data/hf/mixtral-8x7b-v0.1.json");
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.vocab, 32000);
  EXPECT_EQ(m.moe_layers, 32);
  EXPECT_EQ(m.topk, 2);
  EXPECT_THROW(model_from_hf_config("/nonexistent/config.json"), InputError);
}

std::string call_line(int rank, const std::string& op, int opc, int64_t count, int dt, const std::string& comm,
                      int nranks, int peer = 0) {
  std::ostringstream o;
  o << "node0:" << 100 + rank << ":" << 100 + rank << " [" << rank << "] NCCL INFO " << op << ": opCount " << std::hex
    << opc << std::dec << " sendbuff 0x7f0000001000 recvbuff 0x7f0000002000 count " << count << " datatype " << dt
    << " op 0 root " << peer << " comm " << comm << " [nranks=" << nranks << "] stream 0x5500\n";
  return o.str();
}

std::string init_line(int rank, const std::string& comm, int local, int nranks, const std::string& comm_id) {
  std::ostringstream o;
  o << "node0:" << 100 + rank << ":" << 100 + rank << " [" << rank << "] NCCL INFO comm " << comm << " rank " << local
    << " nranks " << nranks << " cudaDev " << rank << " busId " << rank + 1 << "000"
    << (comm_id.empty() ? "" : " commId " + comm_id) << " - Init COMPLETE\n";
  return o.str();
}

ProfileResult profile_text(const std::string& text, const std::string& par) {
  NcclLog log;
  parse_nccl_log_text(text, "synthetic.log", log);
  ProfileOptions opt;
  if (!par.empty()) opt.parallelism = parse_parallelism(par);
  return run_profile(log, {}, opt);
}

// (parallelism, ranks) of every inferred communicator, sorted.
std::vector<std::pair<std::string, std::vector<int>>> groups(const ProfileResult& r) {
  std::vector<std::pair<std::string, std::vector<int>>> g;
  for (const auto& c : r.comms) g.emplace_back(c.parallelism, c.ranks);
  std::sort(g.begin(), g.end());
  return g;
}

const std::vector<std::pair<std::string, std::vector<int>>> kTp2Dp2 = {
    {"DP", {0, 2}}, {"DP", {1, 3}}, {"TP", {0, 1}}, {"TP", {2, 3}}};

// tp = 2, dp = 2, no init lines: both communicators have 2 ranks and each spans all 4 ranks as a set, so neither
// size nor stride tells them apart. The TP one carries 8 calls per step, the DP one 1: the busier is TP.
TEST(ProfileCommInfer, EqualSizesByCallFrequency) {
  std::string text;
  for (int r = 0; r < 4; ++r) {
    for (int k = 0; k < 8; ++k) text += call_line(r, "AllReduce", k, 8192, 6, "0xa" + std::to_string(r), 2);
    text += call_line(r, "AllReduce", 0, 49780, 6, "0xd" + std::to_string(r), 2);
  }
  EXPECT_EQ(groups(profile_text(text, "tp=2,dp=2")), kTp2Dp2);
}

// The same op sequence on both communicators, but init lines with commIds: membership is exact, and the members'
// stride (1 for TP, tp = 2 for DP) names the dimension.
TEST(ProfileCommInfer, EqualSizesAndSequencesByCommId) {
  std::string text;
  for (int r = 0; r < 4; ++r) {
    text += init_line(r, "0xa" + std::to_string(r), r % 2, 2, "0x10" + std::to_string(r / 2));
    text += init_line(r, "0xd" + std::to_string(r), r / 2, 2, "0x20" + std::to_string(r % 2));
    for (int k = 0; k < 3; ++k) {
      text += call_line(r, "AllReduce", k, 1024, 7, "0xa" + std::to_string(r), 2);
      text += call_line(r, "AllReduce", k, 1024, 7, "0xd" + std::to_string(r), 2);
    }
  }
  EXPECT_EQ(groups(profile_text(text, "tp=2,dp=2")), kTp2Dp2);
}

// Init lines without commId (older NCCL) and a DP communicator busier than the TP one, so call frequency alone
// would swap them: the rank inside each communicator decides (TP: rank mod 2, DP: rank / 2 mod 2).
TEST(ProfileCommInfer, EqualSizesByLocalRank) {
  std::string text;
  for (int r = 0; r < 4; ++r) {
    text += init_line(r, "0xa" + std::to_string(r), r % 2, 2, "");
    text += init_line(r, "0xd" + std::to_string(r), r / 2, 2, "");
    text += call_line(r, "AllReduce", 0, 8192, 6, "0xa" + std::to_string(r), 2);
    for (int k = 0; k < 6; ++k) text += call_line(r, "AllReduce", k, 4096, 6, "0xd" + std::to_string(r), 2);
  }
  EXPECT_EQ(groups(profile_text(text, "tp=2,dp=2")), kTp2Dp2);
}

// ep = dp = 4 (tp = 1): the same size and the same stride. The expert communicator's Send/Recv go to all 3 peers
// (all-to-all) → EP; the all-reduce communicator → DP. The p2p bytes count as EP volume, not PP.
TEST(ProfileCommInfer, AllToAllIsExpertParallel) {
  std::string text;
  for (int r = 0; r < 4; ++r) {
    int opc = 0;
    for (int peer = 0; peer < 4; ++peer) {
      if (peer == r) continue;
      text += call_line(r, "Send", opc, 1000, 7, "0xe" + std::to_string(r), 4, peer);
      text += call_line(r, "Recv", opc++, 1000, 7, "0xe" + std::to_string(r), 4, peer);
    }
    text += call_line(r, "AllReduce", 0, 5000, 7, "0xd" + std::to_string(r), 4);
  }
  const ProfileResult r = profile_text(text, "ep=4,dp=4");
  EXPECT_EQ(groups(r), (std::vector<std::pair<std::string, std::vector<int>>>{{"DP", {0, 1, 2, 3}}, {"EP", {0, 1, 2, 3}}}));
  const auto s = summary_json(r);
  // 3 sends + 3 receives of 1000 floats = 24000 B of EP per rank; one all-reduce of 5000 floats = 20000 B of DP.
  for (const auto& jr : s["ranks"]) {
    EXPECT_EQ(jr["volume_by_parallelism"]["EP"], 24000);
    EXPECT_EQ(jr["volume_by_parallelism"]["DP"], 20000);
    EXPECT_FALSE(jr["volume_by_parallelism"].contains("PP"));
  }
}

// pp = 2 with tp = 2: the pipeline's Send/Recv communicator has 2 ranks like TP's; p2p → PP, and its groups
// follow the PP stride tp = 2: {0, 2} and {1, 3}.
TEST(ProfileCommInfer, PipelineNextToTensorOfSameSize) {
  std::string text;
  for (int r = 0; r < 4; ++r) {
    text += call_line(r, "AllReduce", 0, 8192, 6, "0xa" + std::to_string(r), 2);
    text += call_line(r, r < 2 ? "Send" : "Recv", 0, 4096, 6, "0xb" + std::to_string(r), 2, r < 2 ? 1 : 0);
  }
  EXPECT_EQ(groups(profile_text(text, "tp=2,pp=2")),
            (std::vector<std::pair<std::string, std::vector<int>>>{{"PP", {0, 2}}, {"PP", {1, 3}}, {"TP", {0, 1}}, {"TP", {2, 3}}}));
}

// End to end: tp = 2, pp = 2, dp = 2 on 8 ranks of one host, l = 2, h = 64, s = 128, V = 1000, b = 1, m = 2, fp16.
// Per rank and step the log holds what the §2.4 formulas count, so every ratio is 1:
//  TP: 4 all-reduces per layer and micro-batch of b·s·h = 8192 elements: (2/2 stage layers = 1) · 4 · 2 micro-batches
//      = 8 calls · 16384 B = 131072 B; eq. 2.7: 1 · 8·1·128·64 · 1/2 · 2 B · 2 = 131072 B.
//  PP: per micro-batch one Send and one Recv of b·s·h/tp = 4096 elements: 2 · 2 · 8192 B = 32768 B; eq. 2.9 for an
//      edge stage (pp = 2: both are): 1 boundary · 2 · 2 · 1·128·64/2 · 2 B = 32768 B.
//  DP: P = 12·2·64² + 2·64 + 1000 + 128 = 99560 (eq. 2.4); one all-reduce of P/(tp·pp) = 24890 elements = 49780 B;
//      eq. 2.6: 2 · 1/2 · 24890 · 2 B = 49780 B.
std::string tp2pp2dp2_log() {
  std::string text;
  for (int r = 0; r < 8; ++r) {
    const int stage = r / 4;
    for (int k = 0; k < 8; ++k) text += call_line(r, "AllReduce", k, 8192, 6, "0xa" + std::to_string(r), 2);
    for (int mb = 0; mb < 2; ++mb) {
      text += call_line(r, "Send", 2 * mb, 4096, 6, "0xb" + std::to_string(r), 2, 1 - stage);
      text += call_line(r, "Recv", 2 * mb + 1, 4096, 6, "0xb" + std::to_string(r), 2, 1 - stage);
    }
    text += call_line(r, "AllReduce", 0, 24890, 6, "0xd" + std::to_string(r), 2);
  }
  return text;
}

TEST(ProfileVolumeTable, EndToEndRatiosOne) {
  const std::string text = tp2pp2dp2_log();
  const std::string log = test::write_temp("tp2pp2dp2.log", text);
  const std::string dir = test::temp_dir();
  const auto res = test::run_cli("profile nccl --log " + log + " --parallelism tp=2,pp=2,dp=2 --model layers=2,hidden=64,"
                                 "seq=128,vocab=1000,mbs=1,microbatches=2 --summary " + dir + "vol.json");
  ASSERT_EQ(res.code, 0) << res.output;
  EXPECT_NE(res.output.find("Table 5.1"), std::string::npos) << res.output;
  const auto s = nlohmann::json::parse(test::read_file(dir + "vol.json"));
  const auto& v = s["volume_vs_model"];
  EXPECT_EQ(v["model"]["params"], 99560);
  EXPECT_EQ(v["rows"].size(), 24u);  // 8 ranks × DP, PP, TP
  for (const auto& row : v["rows"]) {
    const std::string t = row["parallelism"];
    const int64_t expect = t == "TP" ? 131072 : t == "PP" ? 32768 : 49780;
    EXPECT_EQ(row["measured_bytes"], expect) << row.dump();
    EXPECT_EQ(row["model_bytes"], expect) << row.dump();
    EXPECT_DOUBLE_EQ(row["ratio"].get<double>(), 1.0) << row.dump();
  }
  for (const auto& t : v["by_type"]) EXPECT_EQ(t["ranks"], 8) << t.dump();
}

// Megatron's TP all-reduces at TP 4 and 8 (issue 15 item 3): 2 layers x 2 micro-batches x 4 all-reduces (2 forward,
// 2 backward) of b s h = 8192 fp16 elements (16384 B) per rank. Eq. 2.7 x m counts bus volume, 2 x 8 b s h (t-1)/t
// beta x 2 = 524288 (t-1)/t B; the log's messages are 16 x 16384 = 262144 B, which the table used to compare with
// it (0.67x at TP 4). Measured is now the bus volume too: 16 x 2 (t-1)/t x 16384 B, ratio 1 for every t.
TEST(ProfileVolumeTable, TensorParallelComparesBusVolumeWithBusVolume) {
  for (const int t : {4, 8}) {
    std::string text;
    for (int r = 0; r < t; ++r)
      for (int k = 0; k < 16; ++k) text += call_line(r, "AllReduce", k, 8192, 6, "0xa" + std::to_string(r), t);
    const std::string log = test::write_temp("tp" + std::to_string(t) + ".log", text);
    const std::string out = test::temp_dir() + "tp" + std::to_string(t) + ".json";
    const auto res = test::run_cli("profile nccl --log " + log + " --parallelism tp=" + std::to_string(t) +
                                   " --model layers=2,hidden=64,seq=128,vocab=1000,mbs=1,microbatches=2 --summary " + out);
    ASSERT_EQ(res.code, 0) << res.output;
    EXPECT_NE(res.output.find("bus volume"), std::string::npos) << res.output;
    const auto v = nlohmann::json::parse(test::read_file(out))["volume_vs_model"];
    ASSERT_EQ(v["rows"].size(), size_t(t));
    const int64_t bus = 524288 * (t - 1) / t;
    for (const auto& row : v["rows"]) {
      EXPECT_EQ(row["parallelism"], "TP");
      EXPECT_EQ(row["model_bytes"], bus) << row.dump();
      EXPECT_EQ(row["measured_bytes"], bus) << row.dump();
      EXPECT_EQ(row["message_bytes"], 262144) << row.dump();
      EXPECT_DOUBLE_EQ(row["ratio"].get<double>(), 1.0) << row.dump();
    }
  }
}

// No --parallelism: the sizes come from the communicators (comm_infer.cpp infer_sizes). The log above has
// point-to-point communicators of 2 ranks with one peer each → pp = 2; two collective communicators of 2 ranks
// whose members, cut in rank order, are consecutive pairs → tp = 2 (the smallest); dp = 8 / (2 · 2) = 2. With these
// the groups are those of the given case: TP pairs (r, r+1), DP (r, r+2) — the busier communicator (8 calls per
// step against 1) is TP — and PP (r, r+4).
TEST(ProfileCommInfer, SizesInferredWithoutParallelism) {
  const ProfileResult r = profile_text(tp2pp2dp2_log(), "");
  EXPECT_TRUE(r.parallelism_inferred);
  EXPECT_EQ((std::vector<int>{r.parallelism.tp, r.parallelism.pp, r.parallelism.dp}), (std::vector<int>{2, 2, 2}));
  std::vector<std::pair<std::string, std::vector<int>>> expect;
  for (int g : {0, 1, 4, 5}) expect.push_back({"DP", {g, g + 2}});
  for (int g : {0, 1, 2, 3}) expect.push_back({"PP", {g, g + 4}});
  for (int g : {0, 2, 4, 6}) expect.push_back({"TP", {g, g + 1}});
  std::sort(expect.begin(), expect.end());
  EXPECT_EQ(groups(r), expect);
  const auto s = summary_json(r);
  EXPECT_EQ(s["parallelism_sizes"]["source"], "inferred");
  EXPECT_EQ(s["parallelism_sizes"]["tp"], 2);
  // Only world-sized all-reduces: §4.2.3's rule, the largest communicator is DP (dp = 4, nothing else).
  std::string dp_only;
  for (int k = 0; k < 3; ++k)
    for (int rank = 0; rank < 4; ++rank) dp_only += call_line(rank, "AllReduce", k, 1000, 7, "0xd" + std::to_string(rank), 4);
  const ProfileResult d = profile_text(dp_only, "");
  EXPECT_EQ((std::vector<int>{d.parallelism.tp, d.parallelism.pp, d.parallelism.dp}), (std::vector<int>{0, 0, 4}));
  EXPECT_EQ(groups(d), (std::vector<std::pair<std::string, std::vector<int>>>{{"DP", {0, 1, 2, 3}}}));
  // An excerpt: 2 ranks of a job whose communicator has 16 ([nranks=16]): the job's size is the communicator's.
  std::string excerpt;
  for (int rank = 0; rank < 2; ++rank) excerpt += call_line(rank, "AllReduce", 0, 1000, 7, "0xd" + std::to_string(rank), 16);
  const ProfileResult x = profile_text(excerpt, "");
  EXPECT_EQ(x.parallelism.dp, 16);
  EXPECT_EQ(groups(x), (std::vector<std::pair<std::string, std::vector<int>>>{{"DP", {0, 1}}}));
}

// The real torchtitan log (2 ranks on one host, TP): measured TP bytes as grep gives them (rank 0: 2 × 8388608 +
// 2 × 4 = 16777224 B; rank 1: 3 × 8388608 = 25165824 B) next to eq. 2.7 for the thesis' model with tp = 2, m = 4:
// 16 · 8·4·1024·512 · 1/2 · 2 B · 4 = 1073741824 B → ratios 0.015625 and 0.0234375.
TEST(ProfileVolumeTable, RealTorchtitanLog) {
  const std::string dir = test::temp_dir();
  const auto res = test::run_cli("profile nccl --log " + std::string(STEPSIM_SHARED_DIR) +
                                 "/data/real/nccl-logs/pytorch-torchtitan-issue-1369.log --parallelism tp=2 --model "
                                 "layers=16,hidden=512,seq=1024,vocab=50257,mbs=4,microbatches=4 --quiet --summary " +
                                 dir + "tt.json");
  ASSERT_EQ(res.code, 0) << res.output;
  const auto rows = nlohmann::json::parse(test::read_file(dir + "tt.json"))["volume_vs_model"]["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["rank"], 0);
  EXPECT_EQ(rows[0]["parallelism"], "TP");
  EXPECT_EQ(rows[0]["measured_bytes"], 16777224);
  EXPECT_EQ(rows[1]["measured_bytes"], 25165824);
  for (const auto& row : rows) EXPECT_EQ(row["model_bytes"], 1073741824);
  EXPECT_DOUBLE_EQ(rows[0]["ratio"].get<double>(), 16777224.0 / 1073741824.0);
  EXPECT_DOUBLE_EQ(rows[1]["ratio"].get<double>(), 0.0234375);
}

TEST(ProfileVolumeTable, BadModelExitsTwoWithOneLine) {
  const std::string log = std::string(STEPSIM_SHARED_DIR) + "/data/real/nccl-logs/nvidia-nccl-issue-203.log";
  for (const char* model : {"--model hidden=0", "--model layers=-1", "--model layers=2,hidden=8,seq=16",
                                   "--model-config /nonexistent.json"}) {
    const auto r = test::run_cli("profile nccl --log " + log + " " + model);
    EXPECT_EQ(r.code, 2) << model << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_NE(r.output.find("model"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace stepsim::profile
