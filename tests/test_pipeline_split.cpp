// Uneven pipeline splits (issue 13 item 1b): the automatic rule on the issue's own examples, Megatron's
// account-for-embedding/loss and first/last-stage keys, and the errors that name the key.
#include <gtest/gtest.h>

#include "stepsim/io/input_error.hpp"
#include "stepsim/job/pipeline_split.hpp"
#include "test_util.hpp"

namespace stepsim::spec {
namespace {

PipelineSplit split(int layers, int p, int v) {
  PipelineSplitRequest r;
  r.num_layers = layers;
  r.pipeline = p;
  r.virtual_stages = v;
  return make_pipeline_split(r, "job.yaml");
}

std::vector<int> repeat(std::initializer_list<std::pair<int, int>> runs) {
  std::vector<int> out;
  for (auto [value, count] : runs) out.insert(out.end(), static_cast<size_t>(count), value);
  return out;
}

TEST(PipelineSplit, EvenLayersStayEven) {
  const PipelineSplit s = split(96, 16, 1);
  EXPECT_TRUE(s.layers.empty());
  EXPECT_EQ(s.rule, "even");
}

TEST(PipelineSplit, Llama405BOnEightByEightChunks) {
  // 126 + embedding + loss = 128 = 64 x 2: one layer on the first and last chunk, two elsewhere.
  const PipelineSplit s = split(126, 8, 8);
  EXPECT_EQ(s.layers, repeat({{1, 1}, {2, 62}, {1, 1}}));
  EXPECT_NE(s.rule.find("embedding and loss"), std::string::npos);
}

TEST(PipelineSplit, BloomSeventyLayersOnTwelveStages) {
  EXPECT_EQ(split(70, 12, 1).layers, repeat({{5, 1}, {6, 10}, {5, 1}}));
}

TEST(PipelineSplit, OtherwiseAsEvenAsPossibleLighterAtTheEnds) {
  // 61 on 16: 61 + 2 = 63 does not divide; 13 chunks of 4 and 3 of 3, the 3s at chunk 0, 15 and 1.
  const PipelineSplit s = split(61, 16, 1);
  EXPECT_EQ(s.layers, repeat({{3, 2}, {4, 13}, {3, 1}}));
  int sum = 0;
  for (int x : s.layers) sum += x;
  EXPECT_EQ(sum, 61);
  EXPECT_NE(s.rule.find("as even as possible"), std::string::npos);
  EXPECT_EQ(describe_layers(s.layers), "3 x 2, 4 x 13, 3");
}

// DeepSeek-V3: 61 layers and one multi-token prediction depth on the last chunk. Counting the embedding, the loss and
// the MTP depth as a layer each: 64 = 32 x 2 on 8 x 4 chunks -> 1, 2 x 30, 0 (Megatron-Bridge's H100 layout
// "Et|(tt|)*30mL"); 64 = 16 x 4 on PP 16 -> 3, 4 x 14, 2. Where that does not divide, the rules without MTP apply.
TEST(PipelineSplit, MultiTokenPredictionCountsOnTheLastChunk) {
  PipelineSplitRequest r;
  r.num_layers = 61;
  r.pipeline = 8;
  r.virtual_stages = 4;
  r.mtp_layers = 1;
  PipelineSplit s = make_pipeline_split(r, "j");
  EXPECT_EQ(s.layers, repeat({{1, 1}, {2, 30}, {0, 1}}));
  EXPECT_NE(s.rule.find("multi-token prediction"), std::string::npos);
  r.pipeline = 16;
  r.virtual_stages = 1;
  EXPECT_EQ(make_pipeline_split(r, "j").layers, repeat({{3, 1}, {4, 14}, {2, 1}}));
  r.pipeline = 12;  // 64 does not divide by 12: as even as possible, as without MTP
  EXPECT_EQ(make_pipeline_split(r, "j").layers, split(61, 12, 1).layers);
  r.num_layers = 64;  // divisible: even, MTP on top of the last stage as Megatron does by default
  r.pipeline = 16;
  EXPECT_TRUE(make_pipeline_split(r, "j").layers.empty());
}

// Megatron-Core's --pipeline-model-parallel-layout, on Megatron-Bridge's own H100 recipes: Llama-3 70B on 8 x 5 chunks
// ("Et*2|(t*2|)*34,t*3|(t*2|)*3,tL": 2 on the embedding's chunk, 34 x 2, one chunk of 3, 3 x 2, 1 with the loss) and
// DeepSeek-V3 on 8 x 4 ("Et|(tt|)*30mL": 1, 30 x 2, and the MTP layer with the loss).
TEST(PipelineSplit, MegatronLayoutStrings) {
  PipelineSplitRequest r;
  r.num_layers = 80;
  r.pipeline = 8;
  r.virtual_stages = 5;
  r.layout = "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL";
  PipelineSplit s = make_pipeline_split(r, "j");
  EXPECT_EQ(s.layers, repeat({{2, 35}, {3, 1}, {2, 3}, {1, 1}}));
  EXPECT_EQ(s.rule, "given (parallelism.pipeline_layout)");
  r.num_layers = 61;
  r.virtual_stages = 4;
  r.mtp_layers = 1;
  r.layout = "Et|(tt|)*30mL";
  EXPECT_EQ(make_pipeline_split(r, "j").layers, repeat({{1, 1}, {2, 30}, {0, 1}}));
  EXPECT_EQ(parse_pipeline_layout("E|t*4|(t*4|)*14,t|L", "").layers, repeat({{0, 1}, {4, 15}, {1, 1}, {0, 1}}));
  EXPECT_EQ(parse_pipeline_layout(" E t t , t | t t L ", "").layers, (std::vector<int>{3, 2}));  // spaces, commas
}

TEST(PipelineSplit, BadLayoutsNameTheKeyAndTheRule) {
  auto error = [](const std::string& layout, int layers = 4, int p = 2, int v = 1, int mtp = 0) {
    PipelineSplitRequest r;
    r.num_layers = layers;
    r.pipeline = p;
    r.virtual_stages = v;
    r.mtp_layers = mtp;
    r.layout = layout;
    try {
      make_pipeline_split(r, "job.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string key = "job.yaml: key parallelism.pipeline_layout: ";
  EXPECT_EQ(error("tEt|ttL"), key + "the embedding 'E' must come first");
  EXPECT_EQ(error("Ett|ttL|"), key + "the loss 'L' must come last, at the end of the last chunk");
  EXPECT_EQ(error("Ett|tt"), key + "needs the loss 'L' once, last");
  EXPECT_NE(error("Ett|txL").find("'x' is not one of"), std::string::npos);
  EXPECT_NE(error("Ett|tmtL", 4, 2, 1, 1).find("must come before the multi-token prediction"), std::string::npos);
  EXPECT_NE(error("Ett|tt|m|L", 4, 2, 2, 1).find("in a chunk of their own"), std::string::npos);
  EXPECT_NE(error("Ett|ttmL", 4, 2, 1, 0).find("holds 1 multi-token prediction layers 'm', model.mtp_layers is 0"),
            std::string::npos);
  EXPECT_EQ(error("Et|tttL"), "no error");
  EXPECT_NE(error("Et|ttL").find("holds 3 transformer layers 't', model.num_layers is 4"), std::string::npos);
  EXPECT_NE(error("Et|t|t|tL").find("has 4 model chunks"), std::string::npos);
  EXPECT_NE(error("E(t|t*2L").find("'(' without ')'"), std::string::npos);
  EXPECT_NE(error("E((t)*2)*2|L").find("nested parentheses"), std::string::npos);
  EXPECT_NE(error("Et*|tttL").find("'*' must be followed by a count"), std::string::npos);
  EXPECT_NE(error("Et*99999999|L").find("repeat count"), std::string::npos);
  EXPECT_NE(error("E(t*9999999|)*9999999L").find("expands to more than"), std::string::npos);
  EXPECT_NE(error(std::string(5000, 't')).find("longer than 4096"), std::string::npos);
  PipelineSplitRequest both;
  both.num_layers = 4;
  both.pipeline = 2;
  both.layout = "Ett|ttL";
  both.pipeline_layers = {2, 2};
  EXPECT_THROW(make_pipeline_split(both, "j"), InputError);
}

TEST(PipelineSplit, AccountForEmbeddingAndLoss) {
  PipelineSplitRequest r;
  r.num_layers = 30;
  r.pipeline = 4;
  r.virtual_stages = 2;
  r.account_for_embedding = r.account_for_loss = true;
  EXPECT_EQ(make_pipeline_split(r, "j").layers, (std::vector<int>{3, 4, 4, 4, 4, 4, 4, 3}));
  r.account_for_loss = false;  // 31 does not divide 8
  try {
    make_pipeline_split(r, "j.yaml");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("j.yaml: key parallelism.account_for_embedding_in_pipeline_split"), std::string::npos) << e.what();
  }
}

TEST(PipelineSplit, FirstAndLastStageLayersAsMegatron) {
  // Megatron-Core: stage layers 6, 8, 8, 8 with two virtual chunks each, in layer order (chunk * p + stage).
  PipelineSplitRequest r;
  r.num_layers = 30;
  r.pipeline = 4;
  r.virtual_stages = 2;
  r.first_stage_layers = 6;
  r.last_stage_layers = 8;
  EXPECT_EQ(make_pipeline_split(r, "j").layers, (std::vector<int>{3, 4, 4, 4, 3, 4, 4, 4}));
  r.first_stage_layers = 5;  // not divisible by 2 virtual chunks
  EXPECT_THROW(make_pipeline_split(r, "j"), InputError);
}

TEST(PipelineSplit, ExplicitListMustSumAndMatchTheChunks) {
  PipelineSplitRequest r;
  r.num_layers = 9;
  r.pipeline = 2;
  r.pipeline_layers = {4, 5};
  EXPECT_EQ(make_pipeline_split(r, "j").layers, (std::vector<int>{4, 5}));
  r.pipeline_layers = {4, 4};
  EXPECT_THROW(make_pipeline_split(r, "j"), InputError);
  r.pipeline_layers = {4, 5};
  r.account_for_loss = true;
  EXPECT_THROW(make_pipeline_split(r, "j"), InputError);
}

TEST(PipelineSplit, JobWithUnevenLayersSimulatesAndSaysHow) {
  // 9 layers on PP 2: 9 + 2 = 11 odd -> as even: 4 on the first chunk, 5 on the last. The summary prints it.
  std::string yaml = test::small_gpt_yaml(2, 2, 2, 16);
  yaml.replace(yaml.find("num_layers: 8"), 13, "num_layers: 9");
  const std::string path = test::write_temp("uneven_auto.yaml", yaml);
  const auto r = test::run_cli("simulate " + path);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("layers per model chunk: 4, 5 (automatic: as even as possible"), std::string::npos) << r.output;
}

// The layout as a job key: its 4 chunks over PP 2 set VP 2 (interleaved) when virtual_stages is absent, and the
// summary prints the split; 3 chunks on PP 2 exit 2 naming the key.
TEST(PipelineSplit, LayoutKeySetsTheVirtualStages) {
  const std::string yaml = test::small_gpt_yaml(2, 2, 2, 16, ", pipeline_layout: 'Et|ttt|ttt|tL'");
  const JobSpec job = test::job_from_yaml(yaml);
  EXPECT_EQ(job.parallelism.virtual_stages, 2);
  EXPECT_EQ(job.parallelism.schedule, PipelineSchedule::Interleaved1F1B);
  EXPECT_EQ(job.parallelism.pipeline_layers, (std::vector<int>{1, 3, 3, 1}));
  const auto r = test::run_cli("simulate " + test::write_temp("layout.yaml", yaml));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("layers per model chunk: 1, 3 x 2, 1 (given (parallelism.pipeline_layout))"),
            std::string::npos) << r.output;
  const auto bad = test::run_cli("simulate " + test::write_temp(
      "layout_bad.yaml", test::small_gpt_yaml(2, 2, 2, 16, ", pipeline_layout: 'Ett|ttt|tttL'")));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("key parallelism.pipeline_layout: its 3 model chunks are not a multiple of parallelism.pipeline 2"),
            std::string::npos) << bad.output;
}

}  // namespace
}  // namespace stepsim::spec
