#pragma once
// NCCL_DEBUG=INFO log parsing (thesis §4.2.1). Each line is "[launcher prefix] [epoch.us] host:pid:tid
// [cudaDev] NCCL INFO|WARN <message>"; the messages read here are the per-call COLL lines, the TUNING
// "N Bytes -> Algo A proto P channel{Lo..Hi}={a..b}" lines, communicator init lines, ring/tree channel
// lines and the topology dump. Several files and interleaved threads are fine: every record keeps its
// file, line, host, pid and tid. A line that starts like a record but does not parse is counted as
// garbled and skipped; other NCCL lines are counted as "other".
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/ingest/profile/nccl_op.hpp"
#include "stepsim/ingest/profile/nccl_topology.hpp"

namespace stepsim::profile {

// Where a line came from: the emitting process and thread (NCCL's "host:pid:tid [cudaDev]").
struct LogOrigin {
  int file = 0;  // index into the list of files given to parse_nccl_logs
  int line = 0;  // 1-based
  std::string host;
  int64_t pid = 0, tid = 0;
  int cuda_dev = -1;
  double epoch_s = -1;  // leading "1766081276.802766" timestamp when the launcher adds one
};

struct NcclCall {
  LogOrigin at;
  NcclOp op = NcclOp::Unknown;
  uint64_t op_count = 0;  // opCount is hex in the log
  uint64_t sendbuff = 0, recvbuff = 0;  // "(nil)" → 0
  int64_t count = 0;                    // elements
  int datatype = -1, red_op = -1, root = -1;
  uint64_t comm = 0, stream = 0;
  int nranks = -1;  // "[nranks=N]" (NCCL >= 2.13); -1 when the line has none
  // From the TUNING line that follows on the same thread; empty when there was none.
  std::string algorithm, protocol;
  int channel_lo = -1, channel_hi = -1;
  int64_t bytes() const { return count * datatype_bytes(datatype); }  // thesis eq. 4.9
};

// "comm 0x… rank R nranks N cudaDev D [nvmlDev E] busId B [commId 0x…] - Init COMPLETE"
struct CommInit {
  LogOrigin at;
  uint64_t comm = 0;
  int rank = -1, nranks = -1;
  std::string bus_id;
  uint64_t comm_id = 0;  // 0 when the version does not print it
};

// "Channel 00/02 :    0   1" (ring order), "Ring 00 : 1 -> 0 -> 1", "Tree 0 : -1 -> 0 -> 1/-1/-1",
// "Trees [0] 1/-1/-1->0->-1 [1] …"; ranks as printed (-1 = none).
struct ChannelLine {
  enum class Kind { RingOrder, Ring, Tree, Trees } kind = Kind::Ring;
  LogOrigin at;
  int channel = -1, nchannels = -1;
  std::vector<int> ranks;
};

struct NcclLog {
  std::vector<std::string> files;
  std::vector<NcclCall> calls;  // file order, then line order
  std::vector<CommInit> inits;
  std::vector<ChannelLine> channels;
  std::vector<TopologyBlock> topologies;  // every block, in order; thesis §4.2.1 uses the first per host
  std::string nccl_version;                // first "NCCL version X" seen
  int64_t lines = 0, nccl_lines = 0, other_lines = 0, tuning_lines = 0;
  int64_t garbled_lines = 0;
  std::vector<std::string> garbled_examples;  // "file:line: why", the first few
  // Well-formed call lines of operations the profile does not read (RCCL's AllToAllv, Gather, Scatter; NCCL's
  // AllGatherV): counted by name, so the summary says what was left out.
  std::map<std::string, int64_t> unread_calls;
};

// Size limits: a file over kMaxLogBytes is refused (InputError naming it); a line over kMaxLineBytes is
// garbled. Files are read line by line (parse_nccl_logs), so their size costs no memory; what is kept is one NcclCall
// (~200 bytes) per collective line: more than kMaxCallsPerLog calls in all the logs is refused, which keeps a profile
// under 2 GB of memory (a real log holds a few thousand calls per rank and step).
inline constexpr int64_t kMaxLogBytes = int64_t{4} << 30;
inline constexpr size_t kMaxLineBytes = 64 * 1024;
inline constexpr int64_t kMaxCallsPerLog = 4'000'000;

// Parses one file's text into `log` (file index = log.files.size() before the call).
void parse_nccl_log_text(std::string_view text, const std::string& name, NcclLog& log);
// Reads and parses every file; InputError when one cannot be read or is over the limit.
NcclLog parse_nccl_logs(const std::vector<std::string>& paths);

}  // namespace stepsim::profile
