// stepsim compare on hand-made traces: a simulated step (stepsim's trace format) against a measured one (Kineto),
// with per-type totals worked out by hand below, the side-by-side trace, sim-vs-sim, and bad inputs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.hpp"

using nlohmann::json;
namespace test = stepsim::test;

namespace {

// Rank 0 (us): gemm [0,100], elementwise [100,150], all_reduce posted at 150 and run [170,370] (20 us sync wait,
// drawn as its own "wait:" slice), host gap [370,400], gemm [400,500]. Step: 0 to the last event of any rank = 500 us.
// Rank 1 has one op [0,450] the comparison of rank 0 must not count.
std::string simulated_trace() {
  return R"J({"displayTimeUnit":"ns","otherData":{"generator":"stepsim","model":"hand","gpus":2},"traceEvents":[
{"ph":"M","name":"process_name","pid":0,"args":{"name":"rank 0 (stage 0, tp 0, cp 0, dp 0)"}},
{"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"compute"}},
{"ph":"M","name":"thread_name","pid":0,"tid":5,"args":{"name":"dp"}},
{"ph":"X","name":"k_gemm","cat":"forward","pid":0,"tid":0,"ts":0.000,"dur":100.000,"args":{"phase":"forward","kernel":"gemm","flops":1e9}},
{"ph":"X","name":"k_add","cat":"forward","pid":0,"tid":0,"ts":100.000,"dur":50.000,"args":{"kernel":"elementwise"}},
{"ph":"X","name":"wait: ncclKernel_AllReduce_RING_LL_Sum_float","cat":"sync","pid":0,"tid":5,"ts":150.000,"dur":20.000,"args":{}},
{"ph":"X","name":"ncclKernel_AllReduce_RING_LL_Sum_float","cat":"dp","pid":0,"tid":5,"ts":170.000,"dur":200.000,"args":{"bytes":4096,"group":"dp","group_size":2,"sync_wait_us":20.000,"collective":"all_reduce"}},
{"ph":"X","name":"host gap","cat":"forward","pid":0,"tid":0,"ts":370.000,"dur":30.000,"args":{"kernel":"host"}},
{"ph":"X","name":"k_gemm","cat":"backward","pid":0,"tid":0,"ts":400.000,"dur":100.000,"args":{"kernel":"gemm"}},
{"ph":"C","name":"memory_GiB","pid":0,"ts":0.000,"args":{"allocated":1.5}},
{"ph":"M","name":"process_name","pid":1,"args":{"name":"rank 1 (stage 0, tp 0, cp 0, dp 1)"}},
{"ph":"X","name":"k_gemm","cat":"forward","pid":1,"tid":0,"ts":0.000,"dur":450.000,"args":{"kernel":"gemm"}}
]}
)J";
}

std::string launch(int corr, int ts) {
  return R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":10,"ts":)" + std::to_string(ts) +
         R"(,"dur":1,"args":{"correlation":)" + std::to_string(corr) + "}},\n";
}
std::string kernel(const std::string& name, int stream, int corr, int ts, int dur) {
  return R"({"ph":"X","cat":"kernel","name":")" + name + R"(","pid":0,"tid":)" + std::to_string(stream) +
         ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) + R"(,"args":{"device":0,"stream":)" +
         std::to_string(stream) + ",\"correlation\":" + std::to_string(corr) + "}},\n";
}

// ProfilerStep#4 [0,900] launches one long gemm; ProfilerStep#5 [1000,1700] (us) launches gemm [1100,1220],
// elementwise [1220,1260], all-reduce [1260,1460] on stream 20 and gemm [1400,1530], which overlaps the
// all-reduce for 60 us. Busy union 430 us, idle 270 us.
std::string measured_trace() {
  std::string t = R"({"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":2},"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"ProfilerStep#4","pid":10,"tid":10,"ts":0,"dur":900},
{"ph":"X","cat":"cpu_op","name":"ProfilerStep#5","pid":10,"tid":10,"ts":1000,"dur":700},
)";
  t += launch(1, 10) + kernel("k_gemm", 7, 1, 50, 500);
  t += launch(2, 1010) + kernel("k_gemm", 7, 2, 1100, 120);
  t += launch(3, 1020) + kernel("k_add", 7, 3, 1220, 40);
  t += launch(4, 1030) +
       kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 20, 4, 1260, 200);
  t += launch(5, 1040) + kernel("k_gemm", 7, 5, 1400, 130);
  t += R"({"ph":"i","name":"marker","pid":10,"tid":10,"ts":5}]})";
  return t;
}

const json& type_row(const json& report, const std::string& type) {
  for (const json& r : report["types"])
    if (r["type"] == type) return r;
  static const json none;
  ADD_FAILURE() << "no type " << type << " in " << report.dump();
  return none;
}

}  // namespace

TEST(Compare, HandMadeStepAndTypeErrors) {
  const std::string sim = test::write_temp("cmp-sim.trace.json", simulated_trace());
  const std::string meas = test::write_temp("cmp-meas.json", measured_trace());
  const std::string out = test::temp_dir() + "cmp.json";
  const auto r = test::run_cli("compare " + sim + " " + meas + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(test::read_file(out));
  EXPECT_EQ(j["rank"], 0);
  EXPECT_EQ(j["measured"]["step"], "ProfilerStep#5");
  EXPECT_EQ(j["measured"]["ops"], 4);  // ProfilerStep#4's gemm is not in the step
  EXPECT_EQ(j["simulated"]["ops"], 4);  // sync slices and host gaps are not ops
  EXPECT_DOUBLE_EQ(j["step"]["simulated_s"].get<double>(), 500e-6);
  EXPECT_DOUBLE_EQ(j["step"]["measured_s"].get<double>(), 700e-6);
  EXPECT_DOUBLE_EQ(j["step"]["error_s"].get<double>(), -200e-6);
  EXPECT_DOUBLE_EQ(j["step"]["relative_error"].get<double>(), -2.0 / 7.0);

  ASSERT_EQ(j["types"].size(), 4u);  // report order: compute categories, collectives, idle
  EXPECT_EQ(j["types"][0]["type"], "gemm");
  EXPECT_EQ(j["types"][1]["type"], "elementwise");
  EXPECT_EQ(j["types"][2]["type"], "all_reduce");
  EXPECT_EQ(j["types"][3]["type"], "idle");

  const json& gemm = type_row(j, "gemm");
  EXPECT_EQ(gemm["simulated"]["count"], 2);
  EXPECT_EQ(gemm["measured"]["count"], 2);
  EXPECT_DOUBLE_EQ(gemm["simulated"]["total_s"].get<double>(), 200e-6);
  EXPECT_DOUBLE_EQ(gemm["measured"]["total_s"].get<double>(), 250e-6);
  EXPECT_DOUBLE_EQ(gemm["measured"]["mean_s"].get<double>(), 125e-6);
  EXPECT_DOUBLE_EQ(gemm["error_s"].get<double>(), -50e-6);
  EXPECT_DOUBLE_EQ(gemm["relative_error"].get<double>(), -0.2);
  // Measured exposed: 120 alone + 30 of the 60 us shared with the all-reduce + 70 alone = 220 us.
  EXPECT_DOUBLE_EQ(gemm["measured"]["exposed_s"].get<double>(), 220e-6);
  EXPECT_DOUBLE_EQ(gemm["exposed_error_s"].get<double>(), -20e-6);
  EXPECT_DOUBLE_EQ(gemm["share_of_step_error"].get<double>(), 0.1);

  const json& add = type_row(j, "elementwise");
  EXPECT_DOUBLE_EQ(add["error_s"].get<double>(), 10e-6);
  EXPECT_DOUBLE_EQ(add["relative_error"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(add["share_of_step_error"].get<double>(), -0.05);

  // The simulated all-reduce counts its 20 us sync wait, as the measured NCCL kernel spins until its peers come.
  const json& ar = type_row(j, "all_reduce");
  EXPECT_EQ(ar["measured"]["count"], 1);
  EXPECT_DOUBLE_EQ(ar["simulated"]["total_s"].get<double>(), 220e-6);
  EXPECT_DOUBLE_EQ(ar["measured"]["total_s"].get<double>(), 200e-6);
  EXPECT_DOUBLE_EQ(ar["measured"]["exposed_s"].get<double>(), 170e-6);
  EXPECT_DOUBLE_EQ(ar["exposed_error_s"].get<double>(), 50e-6);
  EXPECT_DOUBLE_EQ(ar["share_of_step_error"].get<double>(), -0.25);

  // Idle: the host gap is idle time on the simulated side.
  const json& idle = type_row(j, "idle");
  EXPECT_DOUBLE_EQ(idle["simulated"]["total_s"].get<double>(), 30e-6);
  EXPECT_DOUBLE_EQ(idle["measured"]["total_s"].get<double>(), 270e-6);
  EXPECT_TRUE(idle["simulated"]["mean_s"].is_null());
  EXPECT_DOUBLE_EQ(idle["share_of_step_error"].get<double>(), 1.2);
  double shares = 0, exposed_sim = 0, exposed_meas = 0;
  for (const json& t : j["types"]) {
    shares += t["share_of_step_error"].get<double>();
    exposed_sim += t["simulated"]["exposed_s"].get<double>();
    exposed_meas += t["measured"]["exposed_s"].get<double>();
  }
  EXPECT_NEAR(shares, 1.0, 1e-12);
  EXPECT_NEAR(exposed_sim, 500e-6, 1e-15);
  EXPECT_NEAR(exposed_meas, 700e-6, 1e-15);

  // Kernel names match once "(args)" is cut: largest |error| first.
  EXPECT_EQ(j["kernels"]["matched_ops"], 4);
  ASSERT_EQ(j["kernels"]["top"].size(), 3u);
  EXPECT_EQ(j["kernels"]["top"][0]["name"], "k_gemm");
  EXPECT_DOUBLE_EQ(j["kernels"]["top"][0]["error_s"].get<double>(), -50e-6);
  EXPECT_EQ(j["kernels"]["top"][1]["name"], "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(j["kernels"]["top"][2]["name"], "k_add");

  // The readable report says the same with units.
  EXPECT_NE(r.output.find("step time: simulated 0.500 ms, measured 0.700 ms, error -0.200 ms (-28.6 %)"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("-0.240"), std::string::npos) << r.output;  // idle's error
  EXPECT_NE(r.output.find("+120.0 %"), std::string::npos) << r.output;  // idle's share of the step error
}

TEST(Compare, ChoosesStepAndRank) {
  const std::string sim = test::write_temp("cmp-sim2.trace.json", simulated_trace());
  const std::string meas = test::write_temp("cmp-meas2.json", measured_trace());
  const std::string out = test::temp_dir() + "cmp2.json";
  auto r = test::run_cli("compare " + sim + " " + meas + " --step 4 --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  json j = json::parse(test::read_file(out));
  EXPECT_EQ(j["measured"]["step"], "ProfilerStep#4");
  EXPECT_EQ(j["measured"]["ops"], 1);
  EXPECT_DOUBLE_EQ(j["step"]["measured_s"].get<double>(), 900e-6);
  EXPECT_DOUBLE_EQ(type_row(j, "gemm")["measured"]["total_s"].get<double>(), 500e-6);

  // Rank 1's step is the job's (it ends with rank 0's last op): its 450 us gemm and 50 us idle.
  r = test::run_cli("compare " + sim + " " + meas + " --rank 1 --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  j = json::parse(test::read_file(out));
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["simulated"]["ops"], 1);
  EXPECT_DOUBLE_EQ(j["step"]["simulated_s"].get<double>(), 500e-6);
  EXPECT_DOUBLE_EQ(type_row(j, "idle")["simulated"]["total_s"].get<double>(), 50e-6);

  // A trace that states the step time (otherData.step_time_s) is taken at its word.
  std::string stated = simulated_trace();
  stated.replace(stated.find("\"gpus\":2"), 8, "\"gpus\":2,\"step_time_s\":0.0006");
  const std::string sim6 = test::write_temp("cmp-sim6.trace.json", stated);
  r = test::run_cli("compare " + sim6 + " " + meas + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  j = json::parse(test::read_file(out));
  EXPECT_DOUBLE_EQ(j["step"]["simulated_s"].get<double>(), 600e-6);
  EXPECT_DOUBLE_EQ(type_row(j, "idle")["simulated"]["total_s"].get<double>(), 130e-6);
}

TEST(Compare, TwoSimulationsAgreeWithThemselves) {
  const std::string sim = test::write_temp("cmp-sim3.trace.json", simulated_trace());
  const std::string out = test::temp_dir() + "cmp3.json";
  const auto r = test::run_cli("compare " + sim + " " + sim + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(test::read_file(out));
  EXPECT_EQ(j["measured"]["format"], "stepsim");
  EXPECT_EQ(j["step"]["error_s"], 0.0);
  for (const json& t : j["types"]) {
    EXPECT_EQ(t["error_s"], 0.0) << t.dump();
    EXPECT_EQ(t["simulated"]["count"], t["measured"]["count"]);
  }
  EXPECT_EQ(j["kernels"]["matched_ops"], 4);
}

TEST(Compare, SideBySideTrace) {
  const std::string sim = test::write_temp("cmp-sim4.trace.json", simulated_trace());
  const std::string meas = test::write_temp("cmp-meas4.json", measured_trace());
  const std::string out = test::temp_dir() + "side.trace.json";
  const auto r = test::run_cli("compare " + sim + " " + meas + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const json t = json::parse(test::read_file(out));
  EXPECT_EQ(t["otherData"]["generator"], "stepsim compare");
  std::map<int, std::string> process;
  std::map<int, int> complete;
  std::map<int, double> first, step_dur;
  std::map<std::pair<int, std::string>, int> by_cat;
  for (const json& e : t["traceEvents"]) {
    const int pid = e["pid"];
    if (e["ph"] == "M" && e["name"] == "process_name") process[pid] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    ++complete[pid];
    ++by_cat[{pid, e["cat"].get<std::string>()}];
    const double ts = e["ts"];
    first[pid] = first.count(pid) ? std::min(first[pid], ts) : ts;
    if (e["cat"] == "step") step_dur[pid] = e["dur"];
    EXPECT_EQ(e["args"]["type"], e["cat"]);
  }
  ASSERT_EQ(process.size(), 2u);
  EXPECT_EQ(process[0], "simulated rank 0");
  EXPECT_EQ(process[1], "measured rank 0");
  // Every complete event of the inputs' steps, plus one step slice each: simulated rank 0 has 6 (its sync slice and
  // host gap included), the measured ProfilerStep#5 launched 4 kernels.
  EXPECT_EQ(complete[0], 6 + 1);
  EXPECT_EQ(complete[1], 4 + 1);
  EXPECT_EQ((by_cat[{0, "sync"}]), 1);
  EXPECT_EQ((by_cat[{0, "host gap"}]), 1);
  EXPECT_EQ((by_cat[{1, "gemm"}]), 2);
  EXPECT_EQ((by_cat[{1, "all_reduce"}]), 1);
  EXPECT_EQ(first[0], 0.0);
  EXPECT_EQ(first[1], 0.0);
  EXPECT_EQ(step_dur[0], 500.0);
  EXPECT_EQ(step_dur[1], 700.0);
  // The measured kernels keep their place in the step: the first one ran 100 us after ProfilerStep#5 began.
  bool found = false;
  for (const json& e : t["traceEvents"])
    if (e["pid"] == 1 && e["ph"] == "X" && e["cat"] == "gemm" && e["ts"] == 100.0) found = true;
  EXPECT_TRUE(found);
}

TEST(Compare, BadInputsExitTwoWithOneLine) {
  const std::string sim = test::write_temp("cmp-sim5.trace.json", simulated_trace());
  const std::string meas = test::write_temp("cmp-meas5.json", measured_trace());
  const std::string notjson = test::write_temp("cmp-bad.json", "{\"traceEvents\": [");
  const std::string other = test::write_temp("cmp-other.json", "{\"nodes\": []}");
  const std::string nokernels = test::write_temp(
      "cmp-nok.json", R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"x","pid":1,"tid":1,"ts":0,"dur":5}]})");
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases{
      {sim + " " + notjson, notjson + ": not valid JSON"},
      {sim + " " + other, other + ": not a Chrome trace (no root key traceEvents)"},
      {meas + " " + meas, meas + ": the first trace must be stepsim's"},
      {sim + " " + meas + " --rank 3", sim + ": rank 3 is not in this trace (recorded ranks: 0, 1)"},
      {sim + " " + meas + " --step 9", meas + ": --step 9: no ProfilerStep#9 with kernels (ProfilerSteps: 4, 5)"},
      {sim + " " + nokernels, nokernels + ": no GPU kernels"},
      {sim + " " + sim + " --step 4", sim + ": --step picks a ProfilerStep of a Kineto trace"},
      {sim + " " + test::temp_dir() + "missing.json", "missing.json"},
  };
  for (const Case& c : cases) {
    const auto r = test::run_cli("compare " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;  // one line
  }
}
