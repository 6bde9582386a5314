// The Kineto trace reader on the real traces of ../shared/data/real (hta/, param/) and a hand-written fixture:
// kernel and NCCL-kernel counts, union of compute-kernel time, ProfilerStep spans, collective metadata and the
// kernel -> launching CPU op link. Expected numbers were counted from the files with Python's json module,
// independently of this reader (the one-liners are in the comments).
#include <gtest/gtest.h>

#include <filesystem>

#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/import_output.hpp"
#include "stepsim/ingest/trace/kernel_naming.hpp"
#include "stepsim/ingest/trace/kineto_trace.hpp"
#include "stepsim/ingest/trace/trace_program.hpp"
#include "test_util.hpp"

namespace stepsim::trace {
namespace {

using test::real;  // one definition for every test file (unity build batches)

int64_t busy_ns(const RankImport& r) { return static_cast<int64_t>(r.compute_busy_s * 1e9 + 0.5); }

// Counted with python3 (json.load(..., parse_float=Decimal), ns = floor(us x 1000)): for each worker*.json,
// kernels = events with ph X and cat kernel; nccl = those whose name starts with ncclKernel_; busy = union of
// [ts, ts+dur] of the others; launched = kernels whose args.correlation is the correlation of a cuda_runtime
// event (ranks 1 and 3 have 64 kernels whose launch fell outside the window); step = dur of ProfilerStep#10.
TEST(TraceKineto, DlrmAllEightRanks) {
  struct Expect {
    const char* file;
    int64_t kernels, busy_us, step_us, launched;
  };
  const Expect ex[8] = {
      {"worker0_step_12.1694128201545", 245, 1034, 14455, 245}, {"worker1_step_12.1694128201556", 310, 1246, 19901, 246},
      {"worker2_step_12.1694128201554", 246, 1068, 13017, 246}, {"worker3_step_12.1694128201557", 315, 1240, 19313, 251},
      {"worker4_step_12.1694128201547", 251, 1126, 17979, 251}, {"worker5_step_12.1694128201549", 245, 1041, 17797, 245},
      {"worker6_step_12.1694128201553", 246, 1051, 13091, 246}, {"worker7_step_12.1694128201553", 246, 1059, 12509, 246}};
  for (int r = 0; r < 8; ++r) {
    const KinetoTrace k = read_kineto_trace(real("param/dlrm_kineto/") + ex[r].file + ".pt.trace.json");
    EXPECT_EQ(k.rank, r);
    EXPECT_EQ(k.world_size, 8);
    EXPECT_EQ(k.cpu_pid > 0, true);
    const RankImport imp = build_rank_import(k, nullptr, k.rank);
    EXPECT_EQ(imp.kernels, ex[r].kernels) << r;
    EXPECT_EQ(imp.nccl_kernels, 8) << r;  // README: 5 SendRecv + 3 AllReduce per rank
    EXPECT_EQ(busy_ns(imp), ex[r].busy_us * 1000) << r;
    ASSERT_TRUE(imp.step_time_s.has_value());
    EXPECT_NEAR(*imp.step_time_s, ex[r].step_us * 1e-6, 1e-12) << r;
    EXPECT_EQ(imp.launches_found, ex[r].launched) << r;
  }
}

// Rank 0's communication in order. Counted by pairing the 8 nccl:* user_annotations (sorted by ts) with the 8
// NCCL kernels (sorted by ts): Input Dims [[6144]] float, [[24]] long int, [[384]] int, [[3392]] int,
// [[394241]] float (all_reduce), [[6144]] float, [[112]] float (all_reduce), [[226960]] float (all_reduce).
TEST(TraceKineto, DlrmCollectivesFromNcclOps) {
  const KinetoTrace k = read_kineto_trace(real("param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json"));
  const RankImport imp = build_rank_import(k, nullptr, 0);
  const int64_t bytes[8] = {6144 * 4, 24 * 8, 384 * 4, 3392 * 4, 394241 * 4, 6144 * 4, 112 * 4, 226960 * 4};
  const bool all_reduce[8] = {false, false, false, false, true, false, true, true};
  int seen = 0;
  for (const ImportedOp& op : imp.ops) {
    if (op.kind == workload::OpKind::Compute) continue;
    ASSERT_LT(seen, 8);
    EXPECT_EQ(op.seq, seen);
    EXPECT_EQ(op.kind, workload::OpKind::Collective) << seen;
    EXPECT_EQ(op.coll, all_reduce[seen] ? workload::CollType::AllReduce : workload::CollType::AllToAll) << seen;
    EXPECT_EQ(op.group, all_reduce[seen] ? workload::GroupKind::Dp : workload::GroupKind::Ep) << seen;
    EXPECT_EQ(op.bytes, bytes[seen]) << seen;
    EXPECT_EQ(op.cuda_stream, 84);
    ++seen;
  }
  EXPECT_EQ(seen, 8);
  // The first SendRecv kernel: ts 1694128201429795 dur 2146, launched inside nccl:all_to_all.
  const ImportedOp* first = nullptr;
  for (const ImportedOp& op : imp.ops)
    if (op.seq == 0) first = &op;
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->duration_ns, 2146000);
  EXPECT_EQ(imp.names[first->cpu_op], "nccl:all_to_all");
  EXPECT_EQ(first->collective, "all_to_all");
}

// 2024 trace whose NCCL kernels carry their own metadata. python3: kernels with ph X, cat kernel: 2700; names
// ncclKernel_*: 21; Collective name allreduce 15 (sum of In msg nelems x 4 bytes = 306684384), broadcast 6;
// Process Group Ranks "[0, 1]" on all; three ProfilerStep# spans 222442.191, 219726.905, 224936.243 us;
// union of the other kernels' [ts, ts+dur] = 115655847 ns (ts and dur read with json.load(parse_float=Decimal):
// all have 3 decimals, so x1000 is exact; binary floats would be off by a few ns).
TEST(TraceKineto, NcclKernelMetadata) {
  const KinetoTrace k = read_kineto_trace(real("hta/nccl_parser_config/nccl_data.json.gz"));
  EXPECT_EQ(k.rank, 0);
  EXPECT_EQ(k.world_size, 2);
  const RankImport imp = build_rank_import(k, nullptr, 0);
  EXPECT_EQ(imp.kernels, 2700);
  EXPECT_EQ(imp.nccl_kernels, 21);
  EXPECT_EQ(busy_ns(imp), 115655847);
  ASSERT_TRUE(imp.step_time_s.has_value());
  EXPECT_NEAR(*imp.step_time_s, (222442.191 + 219726.905 + 224936.243) / 3 * 1e-6, 1e-12);
  int64_t ar_bytes = 0;
  int ar = 0, bc = 0;
  for (const ImportedOp& op : imp.ops) {
    if (op.kind == workload::OpKind::Compute) continue;
    EXPECT_EQ(op.group_ranks, (std::vector<int>{0, 1}));
    EXPECT_EQ(op.group_size, 2);
    EXPECT_EQ(op.group, workload::GroupKind::Dp);  // the whole world
    if (op.coll == workload::CollType::AllReduce) ar_bytes += op.bytes, ++ar;
    if (op.coll == workload::CollType::Broadcast) ++bc;
  }
  EXPECT_EQ(ar, 15);
  EXPECT_EQ(bc, 6);
  EXPECT_EQ(ar_bytes, 306684384);
}

// Two ranks of a 128-rank job, sampled. python3: kernels 1154 / 1104, ncclKernel_* 10 / 10, ProfilerStep#551 and
// #552 spans 607312 + 622928 us (rank 0) and 607904 + 630639 us (rank 1); compute union 210320000 / 271973000 ns
// (Decimal arithmetic as above).
TEST(TraceKineto, SampledRanks) {
  const int64_t kernels[2] = {1154, 1104}, busy[2] = {210320000, 271973000};
  const double step[2] = {(607312.0 + 622928.0) / 2, (607904.0 + 630639.0) / 2};
  for (int r = 0; r < 2; ++r) {
    const KinetoTrace k = read_kineto_trace(real("hta/trace_filter/sampled_rank-" + std::to_string(r) + ".json.gz"));
    EXPECT_EQ(k.rank, r);
    EXPECT_EQ(k.world_size, 128);
    const RankImport imp = build_rank_import(k, nullptr, r);
    EXPECT_EQ(imp.kernels, kernels[r]);
    EXPECT_EQ(imp.nccl_kernels, 10);
    EXPECT_EQ(busy_ns(imp), busy[r]);
    EXPECT_EQ(imp.profiler_steps, 2);
    EXPECT_NEAR(*imp.step_time_s, step[r] * 1e-6, 1e-12);
  }
}

// More real traces, counted with the Decimal script above (kernels, ncclKernel_*, compute union in ns, kernels
// whose correlation has a cuda_runtime event): df_index_resolver (216k events, the largest) 19370 / 2020 /
// 620516000 / 19370; trace_diff control (rank 3 of 8) 8568 / 60 / 281336000 / 8568; negative_queue (rank 0 of 16,
// SendRecv on 3 streams) 6080 / 80 / 210998000 / 5375.
TEST(TraceKineto, MoreRealTraces) {
  struct Expect {
    const char* file;
    int rank;
    int64_t kernels, nccl, busy_ns, launched;
  };
  for (const Expect& e : {Expect{"hta/df_index_resolver/df_index_resolver.json.gz", 1, 19370, 2020, 620516000, 19370},
                          Expect{"hta/trace_diff/control/control.json.gz", 3, 8568, 60, 281336000, 8568},
                          Expect{"hta/negative_queue_length_values_check/rank0.json.gz", 0, 6080, 80, 210998000, 5375}}) {
    const KinetoTrace k = read_kineto_trace(real(e.file));
    EXPECT_EQ(k.rank, e.rank) << e.file;
    const RankImport imp = build_rank_import(k, nullptr, k.rank);
    EXPECT_EQ(imp.kernels, e.kernels) << e.file;
    EXPECT_EQ(imp.nccl_kernels, e.nccl) << e.file;
    EXPECT_EQ(busy_ns(imp), e.busy_ns) << e.file;
    EXPECT_EQ(imp.launches_found, e.launched) << e.file;
  }
}

// The fixture: ProfilerStep#3 over three kernels; a bf16 all-reduce of 1024 elements on ranks [1, 3] of 4.
TEST(TraceKineto, FixtureLinksAndMetadata) {
  const KinetoTrace k = read_kineto_trace(test::source_dir() + "/tests/data/trace/tiny_kineto.json");
  EXPECT_EQ(k.rank, 1);
  EXPECT_EQ(k.cpu_pid, 10);
  ASSERT_EQ(k.kernels.size(), 3u);
  EXPECT_EQ(k.kernels[0].dur_ns, 20500);  // 20.5 us
  const RankImport imp = build_rank_import(k, nullptr, 1);
  EXPECT_EQ(busy_ns(imp), 25000);  // [1010, 1030.5] u [1020, 1035] us
  EXPECT_NEAR(*imp.step_time_s, 100e-6, 1e-15);
  EXPECT_EQ(imp.ops[0].category, workload::ComputeCategory::Gemm);
  EXPECT_EQ(imp.names[imp.ops[0].cpu_op], "aten::mm");
  EXPECT_EQ(imp.ops[1].category, workload::ComputeCategory::Norm);
  EXPECT_EQ(imp.names[imp.ops[1].cpu_op], "aten::layer_norm");
  const ImportedOp& c = imp.ops[2];
  EXPECT_EQ(c.kind, workload::OpKind::Collective);
  EXPECT_EQ(c.coll, workload::CollType::AllReduce);
  EXPECT_EQ(c.bytes, 2048);
  EXPECT_EQ(c.group, workload::GroupKind::Dp);  // ranks 1 and 3 are not consecutive
  EXPECT_EQ(imp.names[c.cpu_op], "record_param_comms");
  for (const ImportedOp& op : imp.ops) EXPECT_EQ(op.step, 3);
  EXPECT_EQ(imp.program.ops.size(), 3u);
  EXPECT_EQ(imp.program.stream_ops[static_cast<int>(workload::Stream::Compute)].size(), 2u);
  EXPECT_EQ(imp.program.stream_ops[static_cast<int>(workload::Stream::Dp)].size(), 1u);
}

TEST(TraceKineto, Naming) {
  EXPECT_EQ(category_of_kernel("void flash_fwd_kernel<Flash_fwd_kernel_traits<128>>(Params)"),
            workload::ComputeCategory::Attention);
  EXPECT_EQ(category_of_kernel("sm90_xmma_gemm_bf16bf16_bf16f32"), workload::ComputeCategory::Gemm);
  EXPECT_EQ(category_of_kernel("void at::native::vectorized_elementwise_kernel<4>(int)"),
            workload::ComputeCategory::Elementwise);
  EXPECT_EQ(nccl_kernel_dtype("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"), "int8_t");
  EXPECT_EQ(nccl_kernel_dtype("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"), "float");
  EXPECT_EQ(dtype_bytes("c10::BFloat16"), 2);
  EXPECT_EQ(dtype_bytes("long int"), 8);
  EXPECT_TRUE(nccl_kind_of_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(x)")->p2p);
  EXPECT_EQ(nccl_kind_of_collective("_reduce_scatter_base")->coll, workload::CollType::ReduceScatter);
  EXPECT_FALSE(nccl_kind_of_collective("barrier").has_value());
  EXPECT_EQ(guess_group(false, workload::CollType::AllReduce, {4, 5, 6, 7}, 16), workload::GroupKind::Tp);
}

// Keys and strings are read as views into the text when they hold no escape, and unescaped when they do: a kernel
// name with an escaped quote and keys written with \u escapes read the same as plain ones. The kernel and CPU-op
// lists are reserved from a count of their category tokens (one kernel, one CPU op here).
TEST(TraceKineto, EscapedKeysAndNamesReadAsPlainOnes) {
  const std::string text =
      R"({"traceEvents":[)"
      R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":5,"args":{"External id":7}},)"
      R"({"\u0070h":"X","c\u0061t":"kernel","name":"gemm\"tn\"","pid":0,"tid":7,"ts":12,"dur":3,)"
      R"("args":{"str\u0065am":7,"correlation":9}},)"
      R"({"ph":"X","cat":"kernel","name":"plain","pid":0,"tid":7,"ts":20,"dur":1.5,"args":{"stream":7}}]})";
  const KinetoTrace k = parse_kineto_trace(TextBuffer::copy_of(text.data(), text.size()), "t.json");
  ASSERT_EQ(k.kernels.size(), 2u);
  EXPECT_EQ(k.name(k.kernels[0]), "gemm\"tn\"");
  EXPECT_EQ(k.kernels[0].stream, 7);
  EXPECT_EQ(k.kernels[0].correlation, 9);
  EXPECT_EQ(k.kernels[0].dur_ns, 3000);
  EXPECT_EQ(k.name(k.kernels[1]), "plain");
  EXPECT_EQ(k.kernels[1].dur_ns, 1500);
  ASSERT_EQ(k.cpu_ops.size(), 1u);
  EXPECT_EQ(k.name(k.cpu_ops[0]), "aten::mm");
  EXPECT_EQ(k.cpu_ops[0].external_id, 7);
}

// Text denser in JSON punctuation than 96 Mi characters is refused before simdjson indexes it (its index would take
// up to 8 bytes per punctuation character), naming the limit.
TEST(TraceKineto, PunctuationOverTheLimitIsRefusedBeforeParsing) {
  const std::string text = "{\"traceEvents\":[" + std::string(size_t{97} << 20, ',') + "]}";
  try {
    parse_kineto_trace(TextBuffer::copy_of(text.data(), text.size()), "dense.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "dense.json: 101711877 JSON punctuation characters, over the limit of 100663296 "
                                     "(simdjson's index of them would exceed 768 MiB)");
  }
}

// The kernels are counted on the text before the parse: a `"cat"` key (with any blanks around its colon) whose value
// is "kernel", not one inside a string. The DLRM rank 0 trace holds 245 (DlrmAllEightRanks counts them parsed).
TEST(TraceKineto, KernelEventsAreCountedOnTheText) {
  EXPECT_EQ(count_kernel_events(R"({"traceEvents":[{"ph":"X","cat":"kernel"},{"cat" :
 "kernel"},{"cat":"cpu_op"},{"name":"\"cat\": \"kernel\"","cat":"kernel"}]})"), 3u);
  EXPECT_EQ(count_kernel_events(R"("cat":)"), 0u);
  EXPECT_EQ(count_kernel_events(test::read_file(real("param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json"))),
            245u);
}

// An imported op takes at least {"kind":"compute","name":0,"cuda_stream":0,"start_ns":0,"duration_ns":0,
// "stream":"compute","category":"gemm","cpu_op":null,"correlation":null,"step":null,"et_node":null} and ",\n":
// 171 bytes (gemm, norm and loss have the shortest names). 96 MiB / 171 = 588,674.2 kernels: 588,674 may fit, one more
// cannot. `trace import` of a trace with that many (10 MB of bare kernel events) is refused before the parse, naming
// the file and the limit, and writes nothing.
TEST(TraceKineto, ATraceWhoseKernelsCannotFitARankFileIsRefusedBeforeParsing) {
  EXPECT_EQ(min_imported_op_bytes(), 171u);
  EXPECT_NO_THROW(check_kernel_events_fit("t.json", 588674, 171));
  EXPECT_THROW(check_kernel_events_fit("t.json", 588675, 171), InputError);
  std::string text = "{\"traceEvents\":[";
  for (int i = 0; i < 588675; ++i) text += "{\"cat\":\"kernel\"},";
  text.back() = ']';
  text += "}";
  const std::string path = test::write_temp("long.json", text);
  const std::string out = test::temp_dir() + "/long-import";
  const auto r = test::run_cli("trace import " + path + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ": 588675 kernel events: the rank's program would be at least 97 MiB (171 bytes an "
                                 "op), more than the 96 MiB a rank file of `simulate --workload` may hold; trace fewer "
                                 "steps (torch.profiler's schedule with active=1) or a smaller part of the run"),
            std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out + "/rank0.json"));
  // Read for another purpose than an import (trace extrapolate's source step), the same text is not refused for it.
  EXPECT_NO_THROW(parse_kineto_trace(TextBuffer::copy_of(text.data(), text.size()), "long.json"));
}

TEST(TraceKineto, MalformedInputIsInputError) {
  const std::string good = test::read_file(test::source_dir() + "/tests/data/trace/tiny_kineto.json");
  auto parse = [](const std::string& s) { return parse_kineto_trace(TextBuffer::copy_of(s.data(), s.size()), "t.json"); };
  EXPECT_NO_THROW(parse(good));
  EXPECT_THROW(parse(good.substr(0, good.size() / 2)), InputError);             // truncated
  EXPECT_THROW(parse("[1,2,3]"), InputError);                                     // not an object
  EXPECT_THROW(parse(R"({"traceEvents":{}})"), InputError);                      // not an array
  EXPECT_THROW(parse(R"({"foo":1})"), InputError);                               // no traceEvents
  EXPECT_THROW(parse(R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":-5}]})"), InputError);
  EXPECT_THROW(parse(R"({"distributedInfo":{"rank":-1},"traceEvents":[]})"), InputError);
  EXPECT_THROW(parse(std::string(5000, '[') + std::string(5000, ']')), InputError);  // deeper than simdjson allows
  try {
    parse(good.substr(0, 300));
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    EXPECT_EQ(std::string(e.what()).rfind("t.json: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace stepsim::trace
