// NCCL debug-log parsing: every real log in ../shared/data/real/nccl-logs with counts taken independently by
// grep (commands in the comments), the thesis' topology listing (§4.2.1 Listing 4.3, §4.3.3), several
// versions' line formats, interleaved threads, garbled and truncated lines, and the kernel-name parser.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "stepsim/ingest/profile/nccl_kernel_name.hpp"
#include "stepsim/ingest/profile/nccl_log.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"

namespace stepsim::profile {
namespace {

std::string real(const std::string& name) { return std::string(STEPSIM_SHARED_DIR) + "/data/real/nccl-logs/" + name; }

std::map<std::string, int> ops(const NcclLog& log) {
  std::map<std::string, int> m;
  for (const auto& c : log.calls) ++m[std::string(op_name(c.op))];
  return m;
}

int count(const NcclLog& log, ChannelLine::Kind k) {
  int n = 0;
  for (const auto& c : log.channels) n += c.kind == k;
  return n;
}

// Counts per file, by grep in ../shared/data/real/nccl-logs:
//   calls:  grep -cE 'NCCL INFO [A-Za-z]+: opCount' FILE
//   tuning: grep -c 'Bytes -> Algo' FILE          inits: grep -c 'Init COMPLETE' FILE
//   topology blocks: grep -c '=== System' FILE      rings: grep -cE 'NCCL INFO Ring [0-9]+ :' FILE
//   ring orders: grep -cE 'NCCL INFO Channel [0-9]+/[0-9]+ :( +[0-9]+)+ *$' FILE
//   trees: grep -cE 'NCCL INFO Trees? ' FILE          lines: wc -l (+1: the last line has no newline? no: all end in \n)
struct Expect {
  const char* file;
  int calls, tuning, inits, topo, rings, orders, trees;
};
constexpr Expect kReal[] = {
    {"devopsrustem-slurmv4-sglang-tp16.log", 16, 2, 4, 0, 0, 0, 0},
    {"eunomia-bpf-nccl-ebpf-default-suboptimal-search.log", 0, 18, 0, 0, 0, 0, 0},
    {"nvidia-nccl-issue-1193.log", 4, 0, 0, 0, 0, 0, 0},
    {"nvidia-nccl-issue-1453.log", 0, 0, 0, 0, 0, 9, 0},
    {"nvidia-nccl-issue-1519.log", 0, 0, 0, 0, 14, 0, 1},
    {"nvidia-nccl-issue-203.log", 7, 0, 0, 0, 0, 0, 0},
    {"nvidia-nccl-issue-531.log", 4, 0, 0, 0, 0, 0, 0},
    {"nvidia-nccl-issue-584.log", 7, 0, 0, 0, 0, 0, 0},
    {"nvidia-nccl-tests-issue-133.log", 0, 0, 0, 0, 0, 0, 0},
    {"nvidia-nccl-tests-issue-350.log", 0, 0, 1, 1, 2, 2, 3},
    {"pytorch-torchtitan-issue-1369.log", 7, 0, 0, 0, 0, 0, 0},
};

TEST(ProfileNcclLog, EveryRealLogCounts) {
  for (const auto& e : kReal) {
    SCOPED_TRACE(e.file);
    const NcclLog log = parse_nccl_logs({real(e.file)});
    EXPECT_EQ(static_cast<int>(log.calls.size()), e.calls);
    EXPECT_EQ(log.tuning_lines, e.tuning);
    EXPECT_EQ(static_cast<int>(log.inits.size()), e.inits);
    EXPECT_EQ(static_cast<int>(log.topologies.size()), e.topo);
    EXPECT_EQ(count(log, ChannelLine::Kind::Ring), e.rings);
    EXPECT_EQ(count(log, ChannelLine::Kind::RingOrder), e.orders);
    EXPECT_EQ(count(log, ChannelLine::Kind::Tree) + count(log, ChannelLine::Kind::Trees), e.trees);
    EXPECT_EQ(log.garbled_lines, 0) << (log.garbled_examples.empty() ? "" : log.garbled_examples[0]);
  }
}

// All eleven at once: 45 calls. By op: grep -hoE 'NCCL INFO [A-Za-z]+: opCount' *.log | awk '{print $3}' | sort | uniq -c
//   → AllGather 7, AllReduce 29, Recv 1, ReduceScatter 2, Send 6.
TEST(ProfileNcclLog, AllRealLogsAtOnce) {
  std::vector<std::string> paths;
  for (const auto& e : kReal) paths.push_back(real(e.file));
  const NcclLog log = parse_nccl_logs(paths);
  EXPECT_EQ(log.calls.size(), 45u);
  const auto m = ops(log);
  EXPECT_EQ(m.at("AllGather"), 7);
  EXPECT_EQ(m.at("AllReduce"), 29);
  EXPECT_EQ(m.at("Recv"), 1);
  EXPECT_EQ(m.at("ReduceScatter"), 2);
  EXPECT_EQ(m.at("Send"), 6);
  EXPECT_EQ(log.files.size(), paths.size());
  EXPECT_EQ(log.calls.front().at.file, 0);
}

// Field values read by eye from the files.
TEST(ProfileNcclLog, RealFieldValues) {
  {
    // nvidia-nccl-issue-1193.log line 2: Ray prefix, opCount 139d (hex), 128 ranks.
    const NcclLog log = parse_nccl_logs({real("nvidia-nccl-issue-1193.log")});
    const NcclCall& c = log.calls.at(0);
    EXPECT_EQ(c.at.line, 2);
    EXPECT_EQ(c.at.host, "r24-02-22-23-29-0066-raycluster-lv52c-worker-l4-8-fqztx");
    EXPECT_EQ(c.at.pid, 615);
    EXPECT_EQ(c.at.tid, 18953);
    EXPECT_EQ(c.at.cuda_dev, 2);
    EXPECT_EQ(c.op_count, 0x139du);
    EXPECT_EQ(c.count, 7382228);
    EXPECT_EQ(c.datatype, 7);
    EXPECT_EQ(c.bytes(), 7382228 * 4);
    EXPECT_EQ(c.nranks, 128);
    EXPECT_EQ(c.comm, 0x78cfda045840u);
    EXPECT_EQ(c.stream, 0x78d07125e5e0u);
  }
  {
    // nvidia-nccl-issue-584.log: Send with "recvbuff (nil)" and the peer in root; the last line is a Recv.
    const NcclLog log = parse_nccl_logs({real("nvidia-nccl-issue-584.log")});
    EXPECT_EQ(log.calls.at(0).op, NcclOp::Send);
    EXPECT_EQ(log.calls.at(0).recvbuff, 0u);
    EXPECT_EQ(log.calls.at(0).root, 1);
    EXPECT_EQ(log.calls.at(4).op_count, 0xd60u);
    EXPECT_EQ(log.calls.back().op, NcclOp::Recv);
    EXPECT_EQ(log.calls.back().sendbuff, 0u);
  }
  {
    // devopsrustem: the TUNING line of pid 177787 follows its AllReduce of 1 float = 4 bytes: TREE/LL, channels 0..0;
    // the NCCL_ALGO=Ring run (pid 185302) picks RING/SIMPLE. Init: rank 4 of 16, busId 9a000.
    const NcclLog log = parse_nccl_logs({real("devopsrustem-slurmv4-sglang-tp16.log")});
    int tuned = 0;
    for (const auto& c : log.calls) {
      if (c.algorithm.empty()) continue;
      ++tuned;
      if (c.at.pid == 177787) {
        EXPECT_EQ(c.algorithm + "/" + c.protocol, "TREE/LL");
      }
      if (c.at.pid == 185302) {
        EXPECT_EQ(c.algorithm + "/" + c.protocol, "RING/SIMPLE");
      }
      EXPECT_EQ(c.channel_lo, 0);
      EXPECT_EQ(c.channel_hi, 0);
    }
    EXPECT_EQ(tuned, 2);
    const CommInit& i = log.inits.at(0);
    EXPECT_EQ(i.rank, 4);
    EXPECT_EQ(i.nranks, 16);
    EXPECT_EQ(i.bus_id, "9a000");
    EXPECT_EQ(i.comm, 0x5635705dda90u);
    EXPECT_EQ(i.comm_id, 0x221dee7fa4558566u);
  }
  {
    // nvidia-nccl-tests-issue-350.log: the topology block (7 nodes, 7 links), NCCL version, ring order.
    const NcclLog log = parse_nccl_logs({real("nvidia-nccl-tests-issue-350.log")});
    EXPECT_EQ(log.nccl_version, "2.16.5+cuda11.8");
    const TopologyBlock& t = log.topologies.at(0);
    EXPECT_DOUBLE_EQ(t.max_bw_GBps, 24.0);
    EXPECT_DOUBLE_EQ(t.total_bw_GBps, 24.0);
    EXPECT_EQ(t.nodes.size(), 7u);  // CPU/1 CPU/0 GPU/81000 NIC/D1000 NET/1 NIC/21000 NET/0
    EXPECT_EQ(t.links.size(), 7u);
    EXPECT_EQ(t.local_rank_of("81000"), 0);
    EXPECT_DOUBLE_EQ(t.net_bottleneck()->bw_GBps, 25.0);
    const CommInit& i = log.inits.at(0);
    EXPECT_EQ(i.rank, 0);
    EXPECT_EQ(i.nranks, 2);
    EXPECT_EQ(i.bus_id, "81000");
    for (const auto& c : log.channels)
      if (c.kind == ChannelLine::Kind::RingOrder) {
        EXPECT_EQ(c.nchannels, 2);
        EXPECT_EQ(c.ranks, (std::vector<int>{0, 1}));
      }
  }
}

// Thesis Listing 4.3 (dual socket, NVLink pairs, two NICs), then a second block that must not replace the first.
const char* kThesisTopology =
    "n1:10:20 [0] NCCL INFO === System : maxBw 80.0 totalBw 80.0 ===\n"
    "n1:10:20 [0] NCCL INFO CPU/0-0 (1/2/-1)\n"
    "n1:10:20 [0] NCCL INFO + PCI[24.0] - GPU/0-1000 (0)\n"
    "n1:10:20 [0] NCCL INFO           + NVL[80.0] - GPU/0-25000\n"
    "n1:10:20 [0] NCCL INFO + PCI[24.0] - GPU/0-25000 (1)\n"
    "n1:10:20 [0] NCCL INFO           + NVL[80.0] - GPU/0-1000\n"
    "n1:10:20 [0] NCCL INFO + SYS[16.0] - CPU/0-1\n"
    "n1:10:20 [0] NCCL INFO CPU/0-1 (1/2/-1)\n"
    "n1:10:20 [0] NCCL INFO + PCI[24.0] - GPU/0-c1000 (2)\n"
    "n1:10:20 [0] NCCL INFO           + NVL[80.0] - GPU/0-e1000\n"
    "n1:10:20 [0] NCCL INFO + PCI[24.0] - GPU/0-e1000 (3)\n"
    "n1:10:20 [0] NCCL INFO           + NVL[80.0] - GPU/0-c1000\n"
    "n1:10:20 [0] NCCL INFO + SYS[16.0] - CPU/0-0\n"
    "n1:10:20 [0] NCCL INFO + PCI[12.0] - NIC/0-c2000\n"
    "n1:10:20 [0] NCCL INFO           + NET[12.5] - NET/0-0\n"
    "n1:10:20 [0] NCCL INFO + PCI[12.0] - NIC/0-c3000\n"
    "n1:10:20 [0] NCCL INFO           + NET[12.5] - NET/0-1\n"
    "n1:10:20 [0] NCCL INFO ==========================================\n"
    "n1:10:21 [1] NCCL INFO === System : maxBw 40.0 totalBw 40.0 ===\n"
    "n1:10:21 [1] NCCL INFO CPU/0-0 (1/2/-1)\n"
    "n1:10:21 [1] NCCL INFO + PCI[24.0] - GPU/0-1000 (0)\n"
    "n1:10:21 [1] NCCL INFO ==========================================\n";

TEST(ProfileNcclLog, ThesisTopologyListing) {
  NcclLog log;
  parse_nccl_log_text(kThesisTopology, "topo.log", log);
  ASSERT_EQ(log.topologies.size(), 2u);
  const TopologyBlock& t = log.topologies[0];  // §4.2.1 item 4: the first block is the one used
  EXPECT_DOUBLE_EQ(t.max_bw_GBps, 80.0);
  EXPECT_EQ(t.local_rank_of("0-1000"), 0);
  EXPECT_EQ(t.local_rank_of("0-25000"), 1);
  EXPECT_EQ(t.local_rank_of("0-c1000"), 2);
  EXPECT_EQ(t.local_rank_of("0-e1000"), 3);
  // GPU pair on one socket: the NVLink (80.0); across sockets: PCI 24 → SYS 16 → PCI 24, bottleneck SYS 16.
  EXPECT_DOUBLE_EQ(t.gpu_pair_bottleneck("0-1000", "0-25000")->bw_GBps, 80.0);
  EXPECT_EQ(t.gpu_pair_bottleneck("0-1000", "0-25000")->link, "NVL");
  EXPECT_DOUBLE_EQ(t.gpu_pair_bottleneck("0-1000", "0-c1000")->bw_GBps, 16.0);
  EXPECT_EQ(t.gpu_pair_bottleneck("0-1000", "0-c1000")->link, "SYS");
  EXPECT_DOUBLE_EQ(t.net_bottleneck()->bw_GBps, 12.5);
  int pci = 0, nvl = 0, sys = 0, net = 0;
  for (const auto& l : t.links) {
    pci += l.type == "PCI" && l.bw_GBps == 24.0;
    nvl += l.type == "NVL" && l.bw_GBps == 80.0;
    sys += l.type == "SYS";
    net += l.type == "NET" && l.bw_GBps == 12.5;
  }
  EXPECT_EQ(pci, 4);
  EXPECT_EQ(nvl, 4);
  EXPECT_EQ(sys, 2);
  EXPECT_EQ(net, 2);
  EXPECT_EQ(log.garbled_lines, 0);
  EXPECT_DOUBLE_EQ(log.topologies[1].max_bw_GBps, 40.0);
}

// The thesis' Listing 4.1 format (epoch timestamp first, no [nranks=]), an NCCL 2.4-era line, a 2.27 line, two
// threads interleaved with their own TUNING lines, a truncated call and a garbled tuning line.
TEST(ProfileNcclLog, VersionsInterleavingAndGarbage) {
  const std::string text =
      "1766081276.802766 csg-rivulet02:1426907:1427588 [2] NCCL INFO AllReduce: opCount 0 sendbuff 0x7fd9f7780000 "
      "recvbuff 0x7fd9f7780000 count 131072 datatype 6 op 0 root 0 comm 0x447b8890 stream 0x32dc6760\n"
      "1766081276.802770 csg-rivulet02:1426907:1427599 [3] NCCL INFO AllGather: opCount 0 sendbuff 0x1 recvbuff 0x2 "
      "count 64 datatype 9 op 0 root 0 comm 0x447b9999 [nranks=4] stream 0x32dc6770\n"
      "1766081276.802821 csg-rivulet02:1426907:1427588 [2] NCCL INFO AllReduce: 262144 Bytes -> Algo RING proto LL "
      "channel{Lo..Hi}={0..7}\n"
      "1766081276.802822 csg-rivulet02:1426907:1427599 [3] NCCL INFO AllGather: 128 Bytes -> Algo 1 proto 2 "
      "channel{Lo..Hi}={0..1}\n"
      "csg-rivulet02:1426907:1427588 [2] NCCL INFO ReduceScatter: opCount 1 sendbuff 0x7fd9f7780000 recvbuff 0x7fd9f77\n"
      "csg-rivulet02:1426907:1427588 [2] NCCL INFO AllReduce: lots Bytes -> Algo\n"
      "csg-rivulet02:1426907:1427588 [2] NCCL INFO ncclCommInitRankConfig comm 0x447b8890 rank 2 nranks 4 cudaDev 2 "
      "busId 3b000 - Init COMPLETE\n"
      "some program output\n";
  NcclLog log;
  parse_nccl_log_text(text, "mixed.log", log);
  ASSERT_EQ(log.calls.size(), 2u);
  EXPECT_DOUBLE_EQ(log.calls[0].at.epoch_s, 1766081276.802766);
  EXPECT_EQ(log.calls[0].bytes(), 262144);  // 131072 × float16
  EXPECT_EQ(log.calls[0].algorithm, "RING");
  EXPECT_EQ(log.calls[0].channel_hi, 7);
  EXPECT_EQ(log.calls[0].nranks, -1);
  EXPECT_EQ(log.calls[1].algorithm, "RING");  // numeric "Algo 1 proto 2" of older versions
  EXPECT_EQ(log.calls[1].protocol, "SIMPLE");
  EXPECT_EQ(log.calls[1].nranks, 4);
  EXPECT_EQ(log.garbled_lines, 2);  // the truncated ReduceScatter and the broken tuning line
  ASSERT_EQ(log.garbled_examples.size(), 2u);
  EXPECT_NE(log.garbled_examples[0].find("mixed.log:5:"), std::string::npos);
  ASSERT_EQ(log.inits.size(), 1u);
  EXPECT_EQ(log.inits[0].nranks, 4);
  EXPECT_EQ(log.lines, 8);
}

// Issue 48 item 9: a communicator of 2^31 - 1 ranks is no log of a real job: the line is counted as garbled (with the
// others a log reader skips and names), not read as a call or an init.
TEST(ProfileNcclLog, ImpossibleRankCountsAreGarbled) {
  const std::string text =
      "h:1:2 [0] NCCL INFO AllGather: opCount 0 sendbuff 0x1 recvbuff 0x2 count 64 datatype 9 op 0 root 0 comm 0x44 "
      "[nranks=2147483647] stream 0x32\n"
      "h:1:2 [0] NCCL INFO ncclCommInitRankConfig comm 0x44 rank 0 nranks 2147483647 cudaDev 0 busId 3b000 - Init "
      "COMPLETE\n"
      "h:1:2 [0] NCCL INFO ncclCommInitRankConfig comm 0x45 rank 0 nranks 1048576 cudaDev 0 busId 3b000 - Init "
      "COMPLETE\n";
  NcclLog log;
  parse_nccl_log_text(text, "big.log", log);
  EXPECT_TRUE(log.calls.empty());
  EXPECT_EQ(log.garbled_lines, 2);
  ASSERT_EQ(log.inits.size(), 1u);  // 2^20 ranks: the largest job stepsim simulates
  EXPECT_EQ(log.inits[0].nranks, 1 << 20);
}

// Issue 15 item 4: NCCL versions that print a bracketed index before the collective's name.
TEST(ProfileNcclLog, BracketedIndexBeforeTheCallName) {
  const std::string text =
      "host1:100:200 [0] NCCL INFO [2] AllReduce: opCount e sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 op 0 "
      "root 0 comm 0x55 [nranks=8] stream 0x66\n"
      "host1:100:200 [0] NCCL INFO [3] AllGather: opCount f sendbuff 0x1 recvbuff 0x2 count 16 datatype 9 op 0 "
      "root 0 comm 0x55 [nranks=8] stream 0x66\n";
  NcclLog log;
  parse_nccl_log_text(text, "bracketed.log", log);
  ASSERT_EQ(log.calls.size(), 2u);
  EXPECT_EQ(std::string(op_name(log.calls[0].op)), "AllReduce");
  EXPECT_EQ(log.calls[0].op_count, 0xe);
  EXPECT_EQ(log.calls[0].bytes(), 1024 * 4);  // datatype 7: float32
  EXPECT_EQ(log.calls[1].op_count, 0xf);
  EXPECT_EQ(log.garbled_lines, 0);
  // As a user runs it: the two calls are counted with their bytes (4,096 B of float32, 16 bf16 = 32 B), nothing
  // is reported as skipped. Before the fix this log printed "0 calls on 0 rank(s)".
  const std::string path = test::temp_dir() + "bracketed.log";
  std::ofstream(path) << text;
  const auto r = test::run_cli("profile nccl --log " + path);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 log file(s), 2 calls on 1 rank(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("AllReduce            1           4096"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("AllGather            1             32"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("skipped"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not read"), std::string::npos) << r.output;
}

// RCCL's COLL line (its enqueue.cc INFO format, as RCCL's own replayer tool parses it): NCCL's fields, then
// "task %d globalrank %d". Its native AllToAll logs the elements sent to each peer; AllToAllv, Gather and Scatter
// lines are counted as not read, never as garbled, and `profile nccl` says so.
TEST(ProfileNcclLog, RcclCollLinesAndItsOwnCollectives) {
  const std::string tail = " comm 0x55d1 [nranks=2] stream 0x55e0 task 0 globalrank 0\n";
  const std::string text =
      "node1:1234:1234 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count 1048576 datatype 7 op 0 "
      "root 0" + tail +
      "node1:1234:1234 [0] NCCL INFO AllToAll: opCount 1 sendbuff 0x7f10 recvbuff 0x7f20 count 4096 datatype 9 op 0 "
      "root 0" + tail +
      "node1:1234:1234 [0] NCCL INFO AllToAllv: opCount 2 sendbuff 0x7f10 recvbuff 0x7f20 count 4096 datatype 9 op 0 "
      "root 0" + tail +
      "node1:1234:1234 [0] NCCL INFO Gather: opCount 3 sendbuff 0x7f10 recvbuff 0x7f20 count 4096 datatype 9 op 0 "
      "root 0" + tail +
      "node1:1234:1234 [0] NCCL INFO Frobnicate: opCount 4 sendbuff 0x7f10 recvbuff 0x7f20 count 1 datatype 9 op 0 "
      "root 0" + tail;
  NcclLog log;
  parse_nccl_log_text(text, "rccl.log", log);
  ASSERT_EQ(log.calls.size(), 2u);
  EXPECT_EQ(std::string(op_name(log.calls[0].op)), "AllReduce");
  EXPECT_EQ(log.calls[0].bytes(), 1048576 * 4);
  EXPECT_EQ(log.calls[0].nranks, 2);
  EXPECT_EQ(std::string(op_name(log.calls[1].op)), "AllToAll");
  EXPECT_EQ(log.calls[1].bytes(), 4096 * 2);  // bf16, per peer
  EXPECT_EQ(log.unread_calls.at("AllToAllv"), 1);
  EXPECT_EQ(log.unread_calls.at("Gather"), 1);
  EXPECT_EQ(log.garbled_lines, 1);  // only the made-up operation
  ASSERT_FALSE(log.garbled_examples.empty());
  EXPECT_NE(log.garbled_examples[0].find("Frobnicate"), std::string::npos);
  // Through the CLI: the summary names what it left out.
  const std::string path = test::write_temp("/rccl0.log", text);
  const auto r = test::run_cli("profile nccl --log " + path);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("not read: 1 AllToAllv call(s) 1 Gather call(s)"), std::string::npos) << r.output;
}

TEST(ProfileNcclLog, MissingFileIsInputError) {
  try {
    (void)parse_nccl_logs({"/nonexistent/x.log"});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.log"), std::string::npos);
  }
}

TEST(ProfileKernelName, NewAndOldNames) {
  auto k = parse_nccl_kernel_name("ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->op, NcclOp::AllReduce);
  EXPECT_EQ(k->redop, "Sum");
  EXPECT_EQ(k->datatype, 6);
  EXPECT_EQ(k->algorithm, "RING");
  EXPECT_EQ(k->protocol, "LL");
  k = parse_nccl_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->op, NcclOp::AllReduce);
  EXPECT_EQ(k->datatype, 7);
  EXPECT_EQ(k->algorithm, "RING");
  k = parse_nccl_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->op, NcclOp::SendRecv);
  EXPECT_EQ(k->datatype, 0);
  EXPECT_EQ(k->protocol, "SIMPLE");
  k = parse_nccl_kernel_name("ncclDevKernel_AllGather_RING_LL");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->op, NcclOp::AllGather);
  EXPECT_EQ(k->datatype, -1);
  k = parse_nccl_kernel_name("ncclDevKernel_ReduceScatter_Sum_bf16_COLLNET_DIRECT_SIMPLE");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->datatype, 9);
  EXPECT_EQ(k->algorithm, "COLLNET_DIRECT");
  k = parse_nccl_kernel_name("ncclDevKernel_AllReduce_Sum_f32_NVLS_TREE_SIMPLE");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->algorithm, "NVLS_TREE");
  k = parse_nccl_kernel_name("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->op, NcclOp::Unknown);
  EXPECT_FALSE(parse_nccl_kernel_name("void saxpy(int, float, float*, float*)"));
  EXPECT_FALSE(parse_nccl_kernel_name("ampere_sgemm_128x64_nn"));
}

TEST(ProfileNcclLog, AFileWithoutOneNcclLineIsAnError) {
  // Issue 15 item 14: an empty log, binary junk or another program's output reported "0 calls on 0 rank(s)", exit 0.
  auto error_of = [](const std::string& text, const std::string& name) -> std::string {
    NcclLog log;
    try {
      parse_nccl_log_text(text, name, log);
    } catch (const InputError& e) {
      return e.what();
    }
    return "<no error>";
  };
  EXPECT_EQ(error_of("", "empty.log").rfind("empty.log: no NCCL log line in 0 line(s) of 0 bytes", 0), 0u);
  EXPECT_EQ(error_of("hello\nworld\n", "other.log").rfind("other.log: no NCCL log line in 2 line(s)", 0), 0u);
  std::string junk(4096, '\0');
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 131) % 251);
  EXPECT_NE(error_of(junk, "junk.log").find("junk.log: no NCCL log line"), std::string::npos);
  // One NCCL line is enough (a log of a run that made no collective is still a log).
  EXPECT_EQ(error_of("h:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n", "boot.log"), "<no error>");
  // From the command line, exit 2.
  const auto r = test::run_cli("profile nccl --log /dev/null");
  EXPECT_EQ(r.code, 2) << r.output;
}

// Issue 15 item 15: a log file is read in blocks of 1 MiB, never whole. Lines that cross a block boundary, a last line
// without a newline and a line longer than kMaxLineBytes (garbled, its tail skipped) read as they do from the text.
TEST(ProfileNcclLog, StreamedFileReadsAsTheText) {
  std::string text;
  for (int i = 0; text.size() < (3u << 20); ++i) {
    char line[320];
    std::snprintf(line, sizeof line,
                  "gpu1:13135:13922 [%d] NCCL INFO AllReduce: opCount %x sendbuff 0x10048f82700 recvbuff "
                  "0x10048f82800 count %d datatype 7 op 0 root 0 comm 0x7f0c741162f0 [nranks=2] stream 0x7f0c74002f00\n",
                  i % 2, i, 64 + i);
    text += line;
    if (i == 5000) text += std::string(kMaxLineBytes + 300000, 'x') + "\n";  // crosses a block boundary
  }
  text += "gpu1:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>";  // no final newline
  NcclLog from_text;
  parse_nccl_log_text(text, "a.log", from_text);
  const std::string path = test::write_temp("streamed.log", text);
  const NcclLog from_file = parse_nccl_logs({path});
  ASSERT_GT(from_text.calls.size(), 10000u);
  ASSERT_EQ(from_file.calls.size(), from_text.calls.size());
  for (size_t i = 0; i < from_text.calls.size(); ++i) {
    ASSERT_EQ(from_file.calls[i].op_count, from_text.calls[i].op_count) << i;
    ASSERT_EQ(from_file.calls[i].count, from_text.calls[i].count) << i;
    ASSERT_EQ(from_file.calls[i].at.line, from_text.calls[i].at.line) << i;
  }
  EXPECT_EQ(from_file.lines, from_text.lines);
  EXPECT_EQ(from_file.nccl_lines, from_text.nccl_lines);
  EXPECT_EQ(from_file.garbled_lines, 1);
  EXPECT_EQ(from_text.garbled_lines, 1);
}

}  // namespace
}  // namespace stepsim::profile
