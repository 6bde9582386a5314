// GPU names as users and tools write them (catalog/gpu_name.hpp) and the power model a power limit in them switches
// on (cost/compute/power_limit.hpp), with the numbers worked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/catalog/gpu_name.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/cost/compute/power_limit.hpp"
#include "stepsim/validate/published_run.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

const hw::GpuCatalog& gpus() { return catalog::shipped().gpus; }

// Every GPU name of the development files, as the sources wrote them, to what it says.
TEST(GpuName, TheDevelopmentFilesNamesResolveToWhatTheySay) {
  struct Case {
    const char* written;
    const char* gpu;
    double power_W;  // 0: none in the name
  };
  const Case cases[] = {
      {"H100-SXM 96GB HBM2e, 500W (Meta Grand Teton)", "H100-SXM-96GB", 500},
      {"A800-SXM4-80GB (DGX A800)", "A800", 0},
      {"A100-SXM4-80GB (MosaicML platform)", "A100-80GB", 0},
      {"A100-SXM4-40GB (MosaicML platform)", "A100-40GB", 0},
      {"H100-80GB (system not stated)", "H100-SXM", 0},
      {"H100-SXM-80GB", "H100-SXM", 0},
      {"H800-SXM5-80GB", "H800", 0},
      {"NVIDIA H100 80GB HBM3", "H100-SXM", 0},
      {"h100_sxm", "H100-SXM", 0},
      {"H100-SXM5-80GB (700W)", "H100-SXM", 700},
      {"B200-SXM 180GB (DGX-B200)", "B200", 0},
      {"GB200 NVL72 (DGX-GB200)", "GB200", 0},
      {"GB300 NVL72 (DGX-GB300)", "GB300", 0},
      {"B300-SXM 288GB (HGX B300)", "B300", 0},
      {"NVIDIA B300", "B300", 0},
      {"HGX B100", "B100", 0},
      {"B100 192GB, 700W", "B100", 700},
      {"NVIDIA H100 PCIe", "H100-PCIE", 0},
      {"H100 NVL 94GB", "H100-NVL", 0},
      {"GH200 96GB", "GH200", 0},
      {"NVIDIA H20", "H20", 0},
  };
  for (const Case& c : cases) {
    const hw::ResolvedGpu r = hw::resolve_gpu_name(gpus(), c.written);
    EXPECT_EQ(r.gpu->name, c.gpu) << c.written;
    EXPECT_EQ(r.power_limit_W.value_or(0), c.power_W) << c.written;
  }
  // And every row of both files: the memory a name states is the memory of the GPU it resolves to.
  const std::regex memory(R"((\d+)\s*GB)");
  std::set<std::string> seen;
  for (const char* file : {"published_runs.csv", "published_runs_2.csv"}) {  // Blackwell's: issue 44 (GB300)
    for (const auto& run : validate::read_published_runs(std::string(STEPSIM_SHARED_DIR) + "/data/published-runs/" + file)) {
      if (!seen.insert(run.gpu).second) continue;
      const hw::ResolvedGpu r = hw::resolve_gpu_name(gpus(), run.gpu);
      std::smatch m;
      const std::string outside = run.gpu.substr(0, run.gpu.find('('));
      if (std::regex_search(outside, m, memory)) {
        EXPECT_NEAR(static_cast<double>(r.gpu->memory_bytes) / 1073741824.0, std::stod(m[1].str()), 0.5) << run.gpu;
      }
    }
  }
  EXPECT_GE(seen.size(), 9u);
}

// What the catalog keeps of each entry's name and aliases, cut as a user's name is: H100-SXM's aliases (H100,
// H100-SXM5, H100-SXM5-80GB, H100-80GB-HBM3, "NVIDIA H100 80GB HBM3") all say model h100 and, where they say one, form
// factor sxm; H100-NVL's say nvl.
TEST(GpuName, TheCatalogKeepsEachEntrysModelsAndFormFactors) {
  const auto& all = gpus().gpus();
  auto keys_of = [&](const std::string& name) {
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].name == name) return gpus().name_keys(i);
    }
    ADD_FAILURE() << name << " not in the catalog";
    return hw::GpuNameKeys{};
  };
  const hw::GpuNameKeys sxm = keys_of("H100-SXM");
  EXPECT_EQ(sxm.models, (std::set<std::string>{"h100"}));
  EXPECT_EQ(sxm.forms, (std::set<std::string>{"sxm"}));
  EXPECT_EQ(keys_of("H100-NVL").forms, (std::set<std::string>{"nvl"}));
  for (size_t i = 0; i < all.size(); ++i) {
    const hw::GpuNameKeys fresh = hw::name_keys_of(all[i]);
    EXPECT_EQ(gpus().name_keys(i).models, fresh.models) << all[i].name;
    EXPECT_EQ(gpus().name_keys(i).forms, fresh.forms) << all[i].name;
  }
}

TEST(GpuName, WhatTheNameLeavesOpenIsSaid) {
  // The bare "A100" is the 80 GB card; the 40 GB one exists, so the reading is said.
  hw::ResolvedGpu r = hw::resolve_gpu_name(gpus(), "A100");
  EXPECT_EQ(r.gpu->name, "A100-80GB");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("memory and form factor not stated, read as A100-80GB (80 GiB, SXM)"), std::string::npos)
      << r.notes[0];
  EXPECT_NE(r.notes[0].find("A100-40GB (40 GiB, SXM)"), std::string::npos) << r.notes[0];
  // "H100-80GB" fits the SXM and the PCIe card: the bare "H100" decides, and says so.
  r = hw::resolve_gpu_name(gpus(), "H100-80GB");
  EXPECT_EQ(r.gpu->name, "H100-SXM");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("form factor not stated, read as H100-SXM (80 GiB, SXM); the name also fits H100-PCIE "
                            "(80 GiB, PCIe)"),
            std::string::npos)
      << r.notes[0];
  // The catalog's own name leaves nothing open.
  EXPECT_TRUE(hw::resolve_gpu_name(gpus(), "H100-SXM").notes.empty());
  EXPECT_TRUE(hw::resolve_gpu_name(gpus(), "A100-80GB").notes.empty());
  // A memory no catalog H100 has: refused, naming the H100s there are.
  std::string e = test::error_of([] { hw::resolve_gpu_name(gpus(), "H100 SXM 72GB"); });
  EXPECT_NE(e.find("key cluster.gpu: unknown GPU 'H100 SXM 72GB': no catalog GPU of model h100"), std::string::npos) << e;
  EXPECT_NE(e.find("H100-SXM (80 GiB, SXM)"), std::string::npos) << e;
  EXPECT_NE(e.find("H100-SXM-96GB (96 GiB, SXM)"), std::string::npos) << e;
  e = test::error_of([] { hw::resolve_gpu_name(gpus(), "X9000"); });
  EXPECT_EQ(e.rfind("key cluster.gpu: unknown GPU 'X9000'; known: A100-40GB", 0), 0u) << e;
}

// f(P) = ((P - s TDP) / ((1 - s) TDP))^(1/3): 500 W of an H100's 700 W with s = 0.2 leaves
// (500 - 140) / 560 = 0.642857, whose cube root is 0.86305 (0.86305^3 = 0.64286).
TEST(PowerLimit, TheClockFollowsTheCubeRootOfTheDynamicPower) {
  EXPECT_NEAR(cost::power_limited_clock(500, 700, 0.2), 0.86305, 1e-5);
  EXPECT_NEAR(cost::power_limited_clock(300, 400, 0.2), std::cbrt(220.0 / 320.0), 1e-12);  // A100 at 300 W
  EXPECT_EQ(cost::power_limited_clock(700, 700, 0.2), 1.0);
  EXPECT_EQ(cost::power_limited_clock(0, 700, 0.2), 1.0);   // no limit
  EXPECT_NEAR(cost::power_limited_clock(500, 700, 0.0), std::cbrt(5.0 / 7.0), 1e-15);
}

// A power limit slows what the tensor cores do by 1/f and leaves memory-bound kernels as they were.
TEST(PowerLimit, AGemmSlowsByTheClockAndAMemoryKernelDoesNot) {
  const std::string base = test::with_simulation(test::small_gpt_yaml(1, 1, 8, 8), "calibration_store: none");
  spec::JobSpec full = test::job_from_yaml(base);
  full.training.cuda_graphs = true;  // no eager launch gap in the durations compared
  spec::JobSpec capped = full;
  capped.cluster.power_limit_W = 500;
  sim::ComputeCalibration cal;
  const auto at_tdp = sim::make_compute_model(catalog::shipped(), full);
  const auto at_500 = sim::make_compute_model(catalog::shipped(), capped, &cal);
  EXPECT_NE(cal.source.find("500 W power limit (default 700 W): tensor-core clock x0.863"), std::string::npos)
      << cal.source;
  workload::Op gemm;
  gemm.category = workload::ComputeCategory::Gemm;
  gemm.gemm_m = gemm.gemm_n = gemm.gemm_k = 8192;
  gemm.flops = 2.0 * 8192 * 8192 * 8192;
  gemm.bytes = 2ull * 3 * 8192 * 8192;
  // 8192^3 in 128x256 tiles: 16 waves, each with its wave overhead, and one launch (test_roofline.cpp).
  const cost::EfficiencyTable t = test::shipped_efficiency("H100-SXM");
  const double overhead_ns = (16 * t.gemm_waves.wave_overhead_us + t.gemm_waves.launch_us) * 1e3;
  const double tiles_tdp = static_cast<double>(at_tdp->duration_ns(gemm)) - overhead_ns;
  const double tiles_500 = static_cast<double>(at_500->duration_ns(gemm)) - overhead_ns;
  EXPECT_NEAR(tiles_500 / tiles_tdp, 1 / cost::power_limited_clock(500, 700, 0.2), 2e-6);
  workload::Op copy;
  copy.category = workload::ComputeCategory::Elementwise;
  copy.bytes = uint64_t{1} << 30;
  EXPECT_EQ(at_500->duration_ns(copy), at_tdp->duration_ns(copy));
}

TEST(PowerLimit, TheJobSaysItOnceAndRefusesWhatCannotBe) {
  const std::string base = test::small_gpt_yaml(1, 1, 8, 8);
  // From the name, with the GPU it names.
  spec::JobSpec j = test::job_from_yaml(std::regex_replace(base, std::regex("gpu: H100-SXM"),
                                                           "gpu: \"H100-SXM 96GB HBM2e, 500W\""));
  EXPECT_EQ(j.cluster.gpu, "H100-SXM-96GB");
  EXPECT_EQ(j.cluster.power_limit_W, 500);
  ASSERT_EQ(j.cluster.gpu_notes.size(), 1u);
  EXPECT_NE(j.cluster.gpu_notes[0].find("500 W read as the GPU's power limit"), std::string::npos);
  // The key and the name disagree; a limit above the board's power; one below a quarter of it.
  auto error_with = [&](const std::string& gpu, const std::string& limit) {
    const std::string y =
        std::regex_replace(base, std::regex("gpu: H100-SXM"), "gpu: \"" + gpu + "\", power_limit_W: " + limit);
    return test::job_error(y);
  };
  EXPECT_NE(error_with("H100-SXM 500W", "600").find("is 600 W but cluster.gpu 'H100-SXM 500W' says 500 W"),
            std::string::npos);
  EXPECT_NE(error_with("H100-SXM", "800").find("800 W: must be between a quarter of H100-SXM's 700 W and 700 W"),
            std::string::npos);
  EXPECT_NE(error_with("H100-SXM", "150").find("150 W: must be between"), std::string::npos);
  // GH200's module power is shared with its CPU: no board power to limit from.
  EXPECT_NE(error_with("GH200", "500").find("GPU GH200 has no tdp_W in the GPU catalog"), std::string::npos);
  // At the board's own power there is nothing to model.
  EXPECT_EQ(test::job_from_yaml(std::regex_replace(base, std::regex("gpu: H100-SXM"), "gpu: H100-SXM, power_limit_W: 700"))
                .cluster.power_limit_W,
            0);
}

// A power limit the interval's runs did not run at widens it by the clocks at the power model's static share -/+ its
// spread (data/efficiency.yaml: 0.2 +- 0.1). By hand at 400 W on an H100: x0.774 at 0.2; x0.806 at 0.1 and x0.729 at
// 0.3 (cbrt(330/630), cbrt(190/490)); the dense band [-0.088, 0.093] becomes [(1 - 0.088) 0.729/0.774 - 1,
// (1 + 0.093) 0.806/0.774 - 1] = [-0.141, +0.138]; the band is first widened to new_source_interval, [-0.244, +0.077]
// (data/efficiency.yaml), so [-0.244, +0.093] becomes [(1 - 0.244) 0.729/0.774 - 1, ...] = [-0.288, +0.138]. The
// torchtitan band came from runs at 500 W: a 500 W torchtitan job's is not widened by the power model.
TEST(PowerLimit, AnIntervalWidensByThePowerModelsUncertainty) {
  const catalog::Catalog& cat = catalog::shipped();
  spec::JobSpec j = test::job_from_yaml(test::small_gpt_yaml(1, 1, 8, 8));
  sim::ComputeCalibration at_default, limited;
  sim::make_compute_model(cat, j, &at_default);
  j.cluster.power_limit_W = 400;
  sim::make_compute_model(cat, j, &limited);
  ASSERT_TRUE(at_default.interval && limited.interval);
  const double f = std::cbrt(260.0 / 560.0), fast = std::cbrt(330.0 / 630.0), slow = std::cbrt(190.0 / 490.0);
  EXPECT_NEAR((*limited.interval)[0], (1 + (*at_default.interval)[0]) * slow / f - 1, 1e-12);
  EXPECT_NEAR((*limited.interval)[1], (1 + (*at_default.interval)[1]) * fast / f - 1, 1e-12);
  EXPECT_NEAR((*at_default.interval)[0], -0.244, 1e-12);
  EXPECT_NEAR((*limited.interval)[0], -0.288, 0.002);
  EXPECT_NEAR((*limited.interval)[1], 0.138, 0.002);
  EXPECT_NE(limited.source.find("widened for the power model (static share 0.10-0.30: clock x0.806-x0.729)"),
            std::string::npos) << limited.source;
  j.training.framework = spec::Framework::Torchtitan;
  j.cluster.power_limit_W = 500;
  sim::ComputeCalibration titan;
  sim::make_compute_model(cat, j, &titan);
  ASSERT_TRUE(titan.interval);
  EXPECT_NEAR((*titan.interval)[0], -0.244, 1e-12);
  EXPECT_EQ(titan.source.find("widened"), std::string::npos) << titan.source;
}

// cluster.gpu as a mapping (issue 43 item 1): a catalog GPU with its figures replaced, applied wherever the job's GPU
// is looked up, and said in the summary's notes.
TEST(GpuOverride, AMappingChangesTheCatalogsFiguresAndSaysSo) {
  const std::string base = test::small_gpt_yaml(1, 1, 8, 8);
  auto with = [&](const std::string& gpu) {
    return std::regex_replace(base, std::regex("gpu: H100-SXM"), "gpu: " + gpu);
  };
  const spec::JobSpec j = test::job_from_yaml(
      with("{base: H100-SXM, memory_GiB: 96, memory_bandwidth_TBps: 2.0, sm_count: 114, nvlink_GBps: 200, "
           "power_limit_W: 500}"));
  EXPECT_EQ(j.cluster.gpu, "H100-SXM");
  EXPECT_EQ(j.cluster.power_limit_W, 500);
  // The job's own cluster.intra_node wins; without one the link is the GPU's, now 200 GB/s.
  EXPECT_DOUBLE_EQ(j.cluster.intra_node.bandwidth_GBps, 450);
  EXPECT_DOUBLE_EQ(test::job_from_yaml(std::regex_replace(with("{base: H100-SXM, nvlink_GBps: 200}"),
                                                          std::regex("intra_node: \\{[^}]*\\}, "), ""))
                       .cluster.intra_node.bandwidth_GBps,
                   200);
  ASSERT_FALSE(j.cluster.gpu_notes.empty());
  EXPECT_EQ(j.cluster.gpu_notes.back(),
            "cluster.gpu: H100-SXM with 96 GiB of memory, 2 TB/s of memory bandwidth, 114 SMs, 200 GB/s NVLink per "
            "direction (the catalog's figures otherwise)");
  const hw::GpuSpec& catalog_gpu = stepsim::catalog::shipped().gpus.find("H100-SXM");
  const hw::GpuSpec g = hw::effective_gpu(stepsim::catalog::shipped().gpus, j.cluster);
  EXPECT_EQ(g.memory_bytes, 96ull << 30);
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth_Bps, 2.0e12);
  EXPECT_EQ(g.sm_count, 114);
  // The per-SM rate is the die's: 114 of 132 SMs give 114/132 of every tensor-core rate.
  EXPECT_DOUBLE_EQ(g.bf16_flops, catalog_gpu.bf16_flops * 114 / 132);
  EXPECT_DOUBLE_EQ(g.fp8_flops, catalog_gpu.fp8_flops * 114 / 132);
  EXPECT_DOUBLE_EQ(g.intra_node_GBps, 200);
  // The simulation sees it: the summary's capacity is 96 GiB, and the step is slower than the catalog GPU's.
  const report::Summary over = report::summarize(sim::run_simulation(stepsim::catalog::shipped(), j, {0}), 0);
  const report::Summary plain =
      report::summarize(sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(base), {0}), 0);
  EXPECT_EQ(over.capacity_bytes, static_cast<int64_t>(96ull << 30));
  EXPECT_GT(over.step_time_s, plain.step_time_s);
  // What cannot be: no base, nothing changed, an unknown key, a power limit that disagrees.
  EXPECT_NE(test::job_error(with("{memory_GiB: 96}")).find("cluster.gpu.base"), std::string::npos);
  EXPECT_NE(test::job_error(with("{base: H100-SXM}")).find("changes at least one of"), std::string::npos);
  EXPECT_NE(test::job_error(with("{base: H100-SXM, clock_MHz: 1500}")).find("clock_MHz"), std::string::npos);
  EXPECT_NE(test::job_error(with("{base: H100-SXM, power_limit_W: 500}, power_limit_W: 600"))
                .find("is 600 W but cluster.gpu's power_limit_W says 500 W"),
            std::string::npos);
  EXPECT_NE(test::job_error(with("{base: H100-SXM, sm_count: 0}")).find("sm_count"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
