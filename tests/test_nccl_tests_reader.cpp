// nccl-tests reader: exact values from the real files in shared/data, and the hand-made edge cases of
// tests/data/nccl-tests (README there).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "stepsim/calibrate/nccl_records.hpp"
#include "stepsim/calibrate/nccl_tests_reader.hpp"
#include "stepsim/calibrate/nccl_tests_text.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"

namespace stepsim::cost {
namespace {

std::string data(const std::string& name) { return test::source_dir() + "/tests/data/nccl-tests/" + name; }
std::string a100_csv() { return std::string(STEPSIM_SHARED_DIR) + "/data/nccl-tests/a100-8gpu-all_reduce.csv"; }
std::string issue350() {
  return std::string(STEPSIM_SHARED_DIR) + "/data/real/nccl-logs/nvidia-nccl-tests-issue-350.log";
}

std::string error_of(const std::string& text, const std::string& path = "t.txt") {
  try {
    (void)parse_nccl_tests(text, path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(NcclTestsReader, A100CsvExactValues) {
  const NcclTestsFile f = read_nccl_tests(a100_csv());
  ASSERT_EQ(f.tables.size(), 1u);
  const NcclTestsTable& t = f.tables[0];
  ASSERT_EQ(t.rows.size(), 8u);
  EXPECT_EQ(t.collective, BenchCollective::AllReduce);
  EXPECT_EQ(t.ranks, 8);
  EXPECT_EQ(t.nodes, 1);
  EXPECT_EQ(t.gpu, "A100 (SXM, 8-GPU node)");
  EXPECT_EQ(t.interconnect, "NVLink3/NVSwitch (300 GB/s uni per GPU)");
  EXPECT_EQ(t.rows[0].bytes, 32768u);
  EXPECT_DOUBLE_EQ(t.rows[0].time_us, 43.83);
  EXPECT_EQ(t.rows[5].bytes, 1073741824u);
  EXPECT_DOUBLE_EQ(t.rows[5].time_us, 8203.9);
  EXPECT_DOUBLE_EQ(t.rows[5].algbw_GBps, 130.88);
  EXPECT_DOUBLE_EQ(t.rows[5].busbw_GBps, 229.04);
  EXPECT_EQ(t.rows[7].bytes, 17179869184u);
  EXPECT_DOUBLE_EQ(t.rows[7].time_us, 127997);
  EXPECT_EQ(t.rows[7].line, 9);
  EXPECT_EQ(f.garbled_lines, 0);
  EXPECT_TRUE(f.mismatches.empty()) << f.mismatches.front().what;  // every row: algbw = S/t, busbw = 1.75 algbw
  EXPECT_EQ(f.nccl_version, "");
}

TEST(NcclTestsReader, Issue350LogExactValues) {
  const NcclTestsFile f = read_nccl_tests(issue350());
  EXPECT_EQ(f.nccl_version, "2.16.5");
  ASSERT_EQ(f.tables.size(), 1u);
  const NcclTestsTable& t = f.tables[0];
  EXPECT_EQ(t.collective, BenchCollective::Gather);
  EXPECT_EQ(t.ranks, 2);
  EXPECT_EQ(t.nodes, 2);  // n013 and n014
  EXPECT_EQ(t.gpu, "NVIDIA A100-PCIE-40GB");
  ASSERT_EQ(t.rows.size(), 50u);  // the table is cut after the 6.7 GB row
  const NcclTestsRow& r = t.rows.front();
  EXPECT_EQ(r.line, 88);
  EXPECT_EQ(r.bytes, 134217728u);
  EXPECT_EQ(r.count, 16777216u);
  EXPECT_EQ(r.type, "float");
  EXPECT_EQ(r.redop, "none");
  EXPECT_EQ(r.root, 0);
  EXPECT_DOUBLE_EQ(r.time_us, 3324.7);
  EXPECT_DOUBLE_EQ(r.algbw_GBps, 40.37);
  EXPECT_DOUBLE_EQ(r.busbw_GBps, 20.19);
  EXPECT_EQ(r.wrong, "0");
  EXPECT_DOUBLE_EQ(r.inplace_time_us.value(), 3003.4);
  EXPECT_DOUBLE_EQ(r.inplace_algbw_GBps.value(), 44.69);
  EXPECT_DOUBLE_EQ(r.inplace_busbw_GBps.value(), 22.34);
  EXPECT_EQ(t.rows[2].bytes, 402653184u);
  EXPECT_DOUBLE_EQ(t.rows[2].time_us, 10258);
  EXPECT_EQ(t.rows.back().bytes, 6710886400u);
  EXPECT_DOUBLE_EQ(t.rows.back().time_us, 309970);
  EXPECT_DOUBLE_EQ(t.rows.back().inplace_time_us.value(), 304582);
  EXPECT_EQ(f.garbled_lines, 0);  // the NCCL INFO lines between header and rows are log lines, not rows
  EXPECT_TRUE(f.mismatches.empty()) << f.mismatches.front().what;  // gather busbw = algbw (n-1)/n
  EXPECT_FALSE(t.avg_busbw_GBps.has_value());
}

TEST(NcclTestsReader, CurrentFormatTwoHosts) {
  const NcclTestsFile f = read_nccl_tests(data("h100-16gpu-2node-all_reduce.txt"));
  EXPECT_EQ(f.nccl_version, "2.18.6");  // from nccl-library=21806
  ASSERT_EQ(f.tables.size(), 1u);
  const NcclTestsTable& t = f.tables[0];
  EXPECT_EQ(t.collective, BenchCollective::AllReduce);
  EXPECT_EQ(t.ranks, 16);
  EXPECT_EQ(t.nodes, 2);
  EXPECT_EQ(t.gpu, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(t.rows.size(), 8u);
  EXPECT_EQ(t.rows.back().bytes, 1073741824u);
  EXPECT_DOUBLE_EQ(t.rows.back().time_us, 14980);
  EXPECT_EQ(t.rows[0].root, -1);
  EXPECT_DOUBLE_EQ(t.avg_busbw_GBps.value(), 58.1234);
  EXPECT_TRUE(f.mismatches.empty());
}

TEST(NcclTestsReader, OldFormatWithoutRootColumn) {
  const NcclTestsFile f = read_nccl_tests(data("v100-4gpu-old-format-all_gather.txt"));
  EXPECT_EQ(f.nccl_version, "2.7.8");
  ASSERT_EQ(f.tables.size(), 1u);
  const NcclTestsTable& t = f.tables[0];
  EXPECT_EQ(t.collective, BenchCollective::AllGather);  // from the shell command line
  EXPECT_EQ(t.ranks, 4);
  EXPECT_EQ(t.nodes, 1);
  EXPECT_EQ(t.gpu, "Tesla V100-SXM2-32GB");
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[1].bytes, 8388608u);
  EXPECT_DOUBLE_EQ(t.rows[1].time_us, 160.5);
  EXPECT_EQ(t.rows[1].wrong, "0e+00");
  EXPECT_EQ(t.rows[1].redop, "sum");
  EXPECT_EQ(t.rows[1].root, -1);
  EXPECT_TRUE(f.mismatches.empty());
}

TEST(NcclTestsReader, InterleavedLogLinesAndGarbledRowsAreSkippedAndCounted) {
  const NcclTestsFile f = read_nccl_tests(data("a100-2node-sendrecv-interleaved.txt"));
  EXPECT_EQ(f.nccl_version, "2.18.3");
  ASSERT_EQ(f.tables.size(), 1u);
  const NcclTestsTable& t = f.tables[0];
  EXPECT_EQ(t.collective, BenchCollective::SendRecv);
  EXPECT_EQ(t.ranks, 2);
  EXPECT_EQ(t.nodes, 2);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].bytes, 1048576u);
  EXPECT_EQ(t.rows[1].bytes, 67108864u);
  EXPECT_DOUBLE_EQ(t.rows[1].time_us, 2520.6);
  EXPECT_EQ(f.garbled_lines, 3);
  EXPECT_EQ(f.garbled_line_numbers, (std::vector<int>{15, 16, 18}));
  EXPECT_DOUBLE_EQ(t.avg_busbw_GBps.value(), 24.01);
}

TEST(NcclTestsReader, TwoRunsInOneFile) {
  const NcclTestsFile f = read_nccl_tests(data("h100-8gpu-two-runs.txt"));
  ASSERT_EQ(f.tables.size(), 2u);
  EXPECT_EQ(f.tables[0].collective, BenchCollective::AllGather);
  EXPECT_EQ(f.tables[1].collective, BenchCollective::ReduceScatter);
  for (const auto& t : f.tables) {
    EXPECT_EQ(t.ranks, 8);
    EXPECT_EQ(t.nodes, 1);
    EXPECT_EQ(t.rows.size(), 3u);
  }
  EXPECT_EQ(f.tables[1].rows[0].line, 41);
  EXPECT_TRUE(f.mismatches.empty());
}

TEST(NcclTestsReader, RowsWithoutAnyHeader) {
  const NcclTestsFile f = read_nccl_tests(data("rows-only.txt"));
  ASSERT_EQ(f.tables.size(), 1u);
  EXPECT_FALSE(f.tables[0].collective.has_value());
  EXPECT_EQ(f.tables[0].ranks, 0);
  ASSERT_EQ(f.tables[0].rows.size(), 3u);
  EXPECT_EQ(f.tables[0].rows[2].type, "bfloat16");
  EXPECT_DOUBLE_EQ(f.tables[0].rows[2].time_us, 5900);
}

TEST(NcclTestsReader, CrossCheckNamesTheRowsThatDisagree) {
  const NcclTestsFile f = read_nccl_tests(data("a100-4gpu-cross-check-failures.txt"));
  ASSERT_EQ(f.tables.size(), 1u);
  EXPECT_EQ(f.tables[0].rows.size(), 4u);  // reported, not dropped
  ASSERT_EQ(f.mismatches.size(), 3u);
  EXPECT_EQ(f.mismatches[0].line, 14);
  EXPECT_NE(f.mismatches[0].what.find("algbw 50 GB/s disagrees with size/time"), std::string::npos);
  EXPECT_EQ(f.mismatches[1].line, 15);
  EXPECT_NE(f.mismatches[1].what.find("wrong collective or rank count"), std::string::npos);
  EXPECT_EQ(f.mismatches[2].line, 16);
  EXPECT_NE(f.mismatches[2].what.find("3 wrong elements"), std::string::npos);
}

TEST(NcclTestsReader, CsvBadRowsAreSkippedAndCounted) {
  const NcclTestsFile f = read_nccl_tests(data("h100-csv-with-bad-rows.csv"));
  EXPECT_EQ(f.garbled_lines, 4);
  EXPECT_EQ(f.garbled_line_numbers, (std::vector<int>{4, 5, 6, 9}));
  ASSERT_EQ(f.tables.size(), 2u);
  EXPECT_EQ(f.tables[0].rows.size(), 3u);
  EXPECT_EQ(f.tables[0].gpu, "H100 (SXM, 8-GPU node)");  // quoted, with a comma
  EXPECT_EQ(f.tables[1].collective, BenchCollective::AllGather);
  EXPECT_EQ(f.tables[1].ranks, 16);
  EXPECT_EQ(f.tables[1].nodes, 2);
  EXPECT_TRUE(f.mismatches.empty());
}

TEST(NcclTestsReader, NoRowsIsAnInputErrorNamingTheFile) {
  const std::string e = error_of(test::read_file(data("crashed-no-rows.txt")), "crashed-no-rows.txt");
  EXPECT_EQ(e.rfind("crashed-no-rows.txt: no nccl-tests result rows", 0), 0u) << e;
  EXPECT_NE(error_of("", "empty.txt").find("empty.txt: no nccl-tests result rows"), std::string::npos);
  // Only garbled rows: the message says where the first one is.
  const std::string g = error_of("# nThread 1\n   1024  256  float  sum  -1  30.\n", "cut.txt");
  EXPECT_NE(g.find("1 line(s) looked like rows but did not parse, the first at line 2"), std::string::npos) << g;
}

TEST(NcclTestsReader, MeasurementsOutsidePhysicalRangesAreRefusedWithTheLine) {
  // Issue 15 item 16: a time of 1e-320 us or a size of 2^63-1 bytes is no measurement; a fit to it stored infinite
  // errors. Refused in the text format, the CSV format and kernel records alike, naming file and line.
  const std::string good = "     2097152       1048576  bfloat16     sum      -1    70.20   29.87   52.28      0    69.80   30.05   52.58      0\n";
  EXPECT_EQ(error_of(good, "ok.txt"), "<no error>");
  std::string tiny = good;
  tiny.replace(tiny.find("70.20"), 5, "1e-320");
  // (1e-320 is subnormal: printed as the double it became, 9.99989e-321.)
  EXPECT_EQ(error_of(good + tiny, "tiny.txt"),
            "tiny.txt:2: time 9.99989e-321 us is outside 0.01 .. 1e9 us; not a measurement a collective can give");
  std::string huge = good;
  huge.replace(huge.find("2097152"), 7, "9223372036854775807");
  const std::string h = error_of(huge, "huge.txt");
  EXPECT_EQ(h, "huge.txt:1: message size 9223372036854775807 bytes is over 2^48; not a measurement a collective can give");
  // 1 GiB in 1 us is 1.07e6 GB/s.
  const std::string fast = "  1073741824  268435456  float  sum  -1  1.00  1073.74  1879.05  0  1.00  1073.74  1879.05  0\n";
  EXPECT_NE(error_of(fast, "fast.txt").find("fast.txt:1: 1073741824 bytes in 1 us is 1.07374e+06 GB/s, over 1e5 GB/s"),
            std::string::npos);
  const std::string csv = test::write_temp("tiny.csv", "collective,message_size_bytes,time_us\nall_reduce,1048576,20.5\n"
                                                       "all_reduce,2097152,1e-320\n");
  // The message a reader's InputError carries ("<no error>" when it accepted the file).
  auto message = [](auto read, const std::string& path) -> std::string {
    try {
      (void)read(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "<no error>";
  };
  const std::string c = message([](const std::string& f) { return read_nccl_tests(f); }, csv);
  EXPECT_EQ(c.rfind(csv + ":3: time 9.99989e-321 us is outside", 0), 0u) << c;
  const std::string rec = test::write_temp("tiny-records.csv", "collective,bytes,ranks,nodes,ranks_per_node,duration_us\n"
                                                               "all_reduce,9223372036854775807,8,1,8,100\n");
  const std::string k = message([](const std::string& f) { return read_kernel_records(f); }, rec);
  EXPECT_EQ(k.rfind(rec + ":2: message size 9223372036854775807 bytes is over 2^48", 0), 0u) << k;
  // A negative, NaN or infinite time, or zero GPUs, is a number no measurement has: refused with line and column,
  // not skipped as a garbled row (which stored the rest of the file's calibration with exit 0).
  for (const char* cell : {"-5", "nan", "inf", "-inf"}) {
    const std::string f = test::write_temp("bad-time.csv", std::string("collective,message_size_bytes,time_us\n"
                                                                       "all_reduce,1048576,20.5\nall_reduce,2097152,") +
                                                               cell + "\n");
    const std::string m = message([](const std::string& x) { return read_nccl_tests(x); }, f);
    EXPECT_EQ(m, f + ":3: column time_us: '" + cell + "' is not a measurement (must be a finite number of at least 0)");
  }
  // A negative message size likewise, in the CSV and the text format (it was skipped as a garbled line).
  const std::string neg = test::write_temp("neg-size.csv", "collective,message_size_bytes,time_us\n"
                                                           "all_reduce,1048576,20.5\nall_reduce,-2097152,30\n");
  EXPECT_EQ(message([](const std::string& x) { return read_nccl_tests(x); }, neg),
            neg + ":3: column message_size_bytes: '-2097152' is not a measurement (must be a finite number of at least 0)");
  std::string neg_row = good;
  neg_row.replace(neg_row.find("2097152"), 7, "-2097152");
  EXPECT_EQ(error_of(good + neg_row, "neg.txt"),
            "neg.txt:2: column size: '-2097152' is not a measurement (must be a finite number of at least 0)");
  const std::string zero = test::write_temp("zero-gpus.csv", "collective,message_size_bytes,time_us,num_gpus\n"
                                                             "all_reduce,1048576,20.5,0\n");
  EXPECT_EQ(message([](const std::string& x) { return read_nccl_tests(x); }, zero),
            zero + ":2: column num_gpus: '0' is not a measurement (must be a finite number of at least 1)");
  const std::string nan_rec = test::write_temp("nan-records.csv", "collective,bytes,ranks,nodes,ranks_per_node,duration_us\n"
                                                                  "all_reduce,1048576,8,1,8,nan\n");
  EXPECT_NE(message([](const std::string& f) { return read_kernel_records(f); }, nan_rec)
                .find(":2: column duration_us: 'nan' is not a measurement"),
            std::string::npos);
  // From the command line: exit 2, the line named.
  const auto r = test::run_cli("calibrate comm --records " + rec + " --dry-run");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(rec + ":2:"), std::string::npos) << r.output;
}

TEST(NcclTestsReader, BinaryJunkIsAnInputError) {
  std::string junk = "# nThread 1\nabc\n";
  junk += std::string("\x7f" "ELF\x02\x01", 6) + std::string(1, '\0') + "xyz";
  const std::string e = error_of(junk, "a.out");
  EXPECT_EQ(e.rfind("a.out:3: binary data (NUL byte at offset", 0), 0u) << e;
  std::string ctrl(200, '\x01');
  EXPECT_NE(error_of(ctrl + "\n", "c.bin").find("c.bin: binary data (200 control bytes"), std::string::npos);
}

TEST(NcclTestsReader, OversizedFileIsAnInputError) {
  const std::string path = stepsim::test::temp_dir() + "big-nccl-tests.txt";
  {
    std::ofstream out(path, std::ios::binary);
    const std::string line(1023, '#');
    for (size_t i = 0; i < (kMaxMeasurementFileBytes >> 10) + 1; ++i) out << line << '\n';
  }
  try {
    (void)read_nccl_tests(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("big-nccl-tests.txt: larger than the 64 MiB limit"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  try {
    (void)read_nccl_tests(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read"), std::string::npos) << e.what();
  }
}

TEST(NcclTestsReader, NumbersAndTheirRounding) {
  double v = 0, h = 0;
  ASSERT_TRUE(parse_number("3324.7", v, &h));
  EXPECT_DOUBLE_EQ(v, 3324.7);
  EXPECT_DOUBLE_EQ(h, 0.05);
  ASSERT_TRUE(parse_number("27257", v, &h));
  EXPECT_DOUBLE_EQ(h, 0.5);
  ASSERT_TRUE(parse_number("1.5e+03", v, &h));
  EXPECT_DOUBLE_EQ(v, 1500);
  EXPECT_DOUBLE_EQ(h, 50);
  for (const char* bad : {"", "inf", "nan", "0x10", "1.2.3x", "12 ", "--1", "1e99999"}) {
    EXPECT_FALSE(parse_number(bad, v)) << bad;
  }
  uint64_t u = 0;
  EXPECT_TRUE(parse_u64("17179869184", u));
  EXPECT_EQ(u, 17179869184u);
  EXPECT_FALSE(parse_u64("-1", u));
  EXPECT_FALSE(parse_u64("99999999999999999999999", u));
}

TEST(NcclTestsReader, CollectiveNames) {
  EXPECT_EQ(parse_bench_collective("all_reduce_perf"), BenchCollective::AllReduce);
  EXPECT_EQ(parse_bench_collective("ncclAllGather"), BenchCollective::AllGather);
  EXPECT_EQ(parse_bench_collective("ReduceScatter"), BenchCollective::ReduceScatter);
  EXPECT_EQ(parse_bench_collective("all-to-all"), BenchCollective::AllToAll);
  EXPECT_EQ(parse_bench_collective("Send"), BenchCollective::SendRecv);
  EXPECT_EQ(parse_bench_collective("gather_perf"), BenchCollective::Gather);
  EXPECT_FALSE(parse_bench_collective("hypercube").has_value());
  EXPECT_DOUBLE_EQ(bench_bus_factor(BenchCollective::AllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bench_bus_factor(BenchCollective::Gather, 2), 0.5);
  EXPECT_DOUBLE_EQ(bench_bus_factor(BenchCollective::SendRecv, 2), 1.0);
}

TEST(NcclTestsReader, KernelRecords) {
  const KernelRecords k = read_kernel_records(data("records-h100.csv"));
  ASSERT_EQ(k.records.size(), 7u);
  EXPECT_EQ(k.bad_lines, 5);
  EXPECT_EQ(k.bad_line_numbers, (std::vector<int>{10, 11, 12, 13, 14}));
  EXPECT_EQ(k.records[0].collective, BenchCollective::AllReduce);
  EXPECT_EQ(k.records[0].bytes, 4194304u);
  EXPECT_EQ(k.records[0].ranks, 16);
  EXPECT_EQ(k.records[0].nodes, 2);
  EXPECT_EQ(k.records[0].ranks_per_node, 8);
  EXPECT_DOUBLE_EQ(k.records[0].duration_us, 95.5);
  EXPECT_EQ(k.records[0].algorithm, Algorithm::Ring);
  EXPECT_EQ(k.records[0].protocol, Protocol::LL128);
  EXPECT_EQ(k.records[2].algorithm, Algorithm::Auto);  // empty: not recorded
  EXPECT_FALSE(k.records[2].protocol.has_value());
  EXPECT_EQ(k.records[6].protocol, Protocol::Simple);  // any case
  try {
    (void)parse_kernel_records("collective,bytes,ranks\nAllReduce,1,2\n", "r.csv");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("r.csv:1: kernel records need the columns"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stepsim::cost
