// Constraints from the job file and for another framework (issue 46 item 2): the job's `plan:` section under the
// flags, --max-tp-per-nvlink-domain, and a Megatron-Core job re-planned for torchtitan.
#include <gtest/gtest.h>

#include <string>

#include "stepsim/api/plan.hpp"
#include "stepsim/api/simulate.hpp"
#include "stepsim/plan/plan_constraints.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace plan_section_test {

std::string llama_job(const std::string& training_extra, const std::string& plan_section) {
  return "model: {name: tiny-llama, num_layers: 8, hidden_size: 1024, num_attention_heads: 16, num_query_groups: 4,"
         " ffn_hidden_size: 2816, activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: 1024}\n"
         "parallelism: {data: 8}\n"
         "training: {micro_batch_size: 1, global_batch_size: 32, precision: bf16" + training_extra + "}\n"
         "simulation: {host_time_scale: 0}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\n" + plan_section;
}

api::PlanOutput plan_of(const std::string& yaml, const std::vector<std::string>& fix = {}, int max_tp = 0,
                        const std::string& framework = "") {
  api::PlanOptions o;
  o.job.job_text = yaml;
  o.top = 1000;
  o.simulate = 0;
  o.threads = 1;
  o.fix = fix;
  o.max_tp_per_nvlink_domain = max_tp;
  o.framework = framework;
  return api::plan(o);
}

TEST(PlanSection, TheJobFilesSectionConstrainsTheSearchAndAFlagWinsPerKey) {
  const std::string yaml = llama_job("", "plan: {fix: {pp: 1}, allow: {tp: [2, 4]}, exclude: [tp_comm_overlap]}\n");
  const api::PlanOutput out = plan_of(yaml);
  ASSERT_FALSE(out.result.plans.empty());
  for (const auto& p : out.result.plans) {
    EXPECT_EQ(p.plan.pipeline, 1);
    EXPECT_TRUE(p.plan.tensor == 2 || p.plan.tensor == 4) << plan::describe(p.plan);
    EXPECT_FALSE(p.plan.tp_comm_overlap);
  }
  EXPECT_EQ(out.json["constraints"], "tensor in {2,4}; pipeline=1; not tp_comm_overlap=true");
  // --fix tp=8 replaces the section's allow of TP; the section's other keys stay.
  const api::PlanOutput flag = plan_of(yaml, {"tp=8"});
  for (const auto& p : flag.result.plans) {
    EXPECT_EQ(p.plan.tensor, 8);
    EXPECT_EQ(p.plan.pipeline, 1);
  }
  // simulate reads the job and says the section is not its.
  api::SimulateOptions so;
  so.job.job_text = yaml;
  const auto sim = api::simulate(so);
  EXPECT_NE(sim.json["notes"].dump().find("read by stepsim plan only"), std::string::npos);
}

TEST(PlanSection, BadSectionsAreRefusedNamingTheKey) {
  EXPECT_NE(test::job_error(llama_job("", "plan: {fix: [tp]}\n")).find("key plan.fix: must be a mapping"),
            std::string::npos);
  EXPECT_NE(test::job_error(llama_job("", "plan: {framework: jax}\n")).find("key plan.framework: must be megatron"),
            std::string::npos);
  EXPECT_NE(test::job_error(llama_job("", "plan: {fixx: {tp: 2}}\n")).find("plan.fixx"), std::string::npos);
  const std::string err = test::error_of([] { plan_of(llama_job("", "plan: {fix: {tensr: 2}}\n")); });
  EXPECT_NE(err.find("key plan: --fix tensr=2: unknown key 'tensr'"), std::string::npos) << err;
}

TEST(PlanSection, MaxTpPerNvlinkDomainKeepsTheDomainsDivisorsUpToN) {
  plan::Constraints c;
  plan::cap_tensor_parallel(c, 4, 72);
  EXPECT_EQ(*c.allowed[static_cast<int>(plan::PlanKey::Tensor)], (std::vector<int>{1, 2, 3, 4}));
  plan::Constraints d;
  d.allowed[static_cast<int>(plan::PlanKey::Tensor)] = std::vector<int>{2, 8};
  plan::cap_tensor_parallel(d, 4, 8);
  EXPECT_EQ(*d.allowed[static_cast<int>(plan::PlanKey::Tensor)], (std::vector<int>{2}));
  const api::PlanOutput out = plan_of(llama_job("", ""), {}, 2);
  for (const auto& p : out.result.plans) EXPECT_LE(p.plan.tensor, 2);
  const std::string section = plan_of(llama_job("", "plan: {max_tp_per_nvlink_domain: 1}\n")).json.dump();
  EXPECT_EQ(section.find("\"tensor\":2"), std::string::npos);
  EXPECT_NE(test::error_of([] { plan_of(llama_job("", ""), {"tp=8"}, 2); })
                .find("--max-tp-per-nvlink-domain 2: leaves no tensor-parallel size"),
            std::string::npos);
}

TEST(PlanSection, AMegatronJobReplannedForTorchtitanDropsWhatTorchtitanLacks) {
  const std::string yaml = llama_job(", distributed_optimizer: true, overlap_grad_reduce: true, tp_comm_overlap: true,"
                                     " attention_backend: flash", "");
  const api::PlanOutput out = plan_of(yaml, {}, 0, "torchtitan");
  ASSERT_FALSE(out.result.plans.empty());
  EXPECT_NE(out.json["notes"].dump().find("--framework torchtitan: the job's training.overlap_grad_reduce, "
                                          "training.tp_comm_overlap, training.attention_backend dropped"),
            std::string::npos)
      << out.json["notes"].dump();
  EXPECT_EQ(out.json["framework"], "torchtitan");
  // A key the user sets on the command line is still refused.
  api::PlanOptions o;
  o.job.job_text = yaml;
  o.job.overrides = {"training.cuda_graphs=true"};
  o.framework = "torchtitan";
  o.simulate = 0;
  EXPECT_NE(test::error_of([&] { api::plan(o); }).find("training.cuda_graphs: is Megatron-Core's"), std::string::npos);
}

}  // namespace plan_section_test
}  // namespace stepsim
