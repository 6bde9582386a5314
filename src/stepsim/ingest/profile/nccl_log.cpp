#include "stepsim/ingest/profile/nccl_log.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"

namespace stepsim::profile {
namespace {

constexpr size_t kMaxGarbledExamples = 8;
constexpr size_t kMaxRanksPerChannelLine = 1 << 16;
// The most ranks a communicator of a job stepsim simulates can have (a million GPUs); a larger nranks is no log of one.
constexpr int kMaxNcclRanks = 1 << 20;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "[2]": a bracketed decimal index.
bool bracketed_index(std::string_view w) {
  if (w.size() < 3 || w.front() != '[' || w.back() != ']') return false;
  for (char c : w.substr(1, w.size() - 2))
    if (c < '0' || c > '9') return false;
  return true;
}

std::vector<std::string_view> split_ws(std::string_view s, size_t max_tokens = 256) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size() && out.size() < max_tokens) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const size_t b = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

template <class T>
bool parse_int(std::string_view s, T& out, int base = 10) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "0x7fb201e00400" or "(nil)" (glibc's %p for a null pointer).
bool parse_ptr(std::string_view s, uint64_t& out) {
  if (s == "(nil)" || s == "0") {
    out = 0;
    return true;
  }
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  return parse_int(s.substr(2), out, 16);
}

// The "host:pid:tid [dev]" part before "NCCL INFO"; launcher text before it is ignored.
bool parse_origin(std::string_view prefix, LogOrigin& o) {
  const auto tok = split_ws(prefix);
  if (tok.size() < 2) return false;
  std::string_view dev = tok.back(), hpt = tok[tok.size() - 2];
  if (dev.size() < 3 || dev.front() != '[' || dev.back() != ']' || !parse_int(dev.substr(1, dev.size() - 2), o.cuda_dev))
    return false;
  const size_t c2 = hpt.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return false;
  const size_t c1 = hpt.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos || c1 == 0) return false;
  if (!parse_int(hpt.substr(c1 + 1, c2 - c1 - 1), o.pid) || !parse_int(hpt.substr(c2 + 1), o.tid)) return false;
  o.host = std::string(hpt.substr(0, c1));
  if (tok.size() >= 3) {
    double t = 0;
    std::string_view ts = tok[tok.size() - 3];
    auto r = std::from_chars(ts.data(), ts.data() + ts.size(), t);
    if (r.ec == std::errc() && r.ptr == ts.data() + ts.size() && ts.find('.') != std::string_view::npos && t > 0)
      o.epoch_s = t;
  }
  return true;
}

// Older NCCL printed the tuning choice as numbers ("Algo 1 proto 2").
std::string algo_text(std::string_view s) {
  static const char* names[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  int i = -1;
  if (parse_int(s, i) && i >= 0 && i < 7) return names[i];
  return std::string(s);
}
std::string proto_text(std::string_view s) {
  static const char* names[] = {"LL", "LL128", "SIMPLE"};
  int i = -1;
  if (parse_int(s, i) && i >= 0 && i < 3) return names[i];
  return std::string(s);
}

struct Parser {
  NcclLog& log;
  int file;
  const std::string& name;
  // Last call of each emitting thread, for the TUNING line that follows it.
  std::map<std::tuple<std::string, int64_t, int64_t>, size_t> last_call;
  std::map<std::pair<std::string, int64_t>, TopologyParser> topo;  // per process: blocks interleave

  void garbled(int line, const std::string& why) {
    ++log.garbled_lines;
    if (log.garbled_examples.size() < kMaxGarbledExamples)
      log.garbled_examples.push_back(name + ":" + std::to_string(line) + ": " + why);
  }

  // "AllReduce: opCount 0 sendbuff 0x… recvbuff 0x… count 1 datatype 7 op 0 root 0 comm 0x… [nranks=16] stream 0x…"
  bool call(const LogOrigin& o, std::string_view op_tok, const std::vector<std::string_view>& t) {
    const auto op = op_from_name(op_tok);
    if (!op) {
      // Collectives NCCL or RCCL log that the profile does not read: a count by name, not a garbled line.
      static const std::set<std::string_view> kUnread = {"AllToAllv", "Gather", "Scatter", "AllGatherV",
                                                         "ReduceScatterV", "AllToAllV"};
      if (kUnread.count(op_tok) && t.size() >= 3 && t[1] == "opCount") ++log.unread_calls[std::string(op_tok)];
      else garbled(o.line, "unknown operation '" + std::string(op_tok) + "'");
      return true;
    }
    NcclCall c;
    c.at = o;
    c.op = *op;
    bool have_count = false, have_dt = false, have_comm = false, have_op = false, ok = true;
    for (size_t i = 1; i < t.size() && ok; ++i) {
      const std::string_view k = t[i];
      if (k.starts_with("[nranks=") && k.back() == ']') {
        ok = parse_int(k.substr(8, k.size() - 9), c.nranks) && c.nranks > 0 && c.nranks <= kMaxNcclRanks;
        continue;
      }
      if (i + 1 >= t.size()) break;
      const std::string_view v = t[i + 1];
      if (k == "opCount") ok = have_op = parse_int(v, c.op_count, 16);
      else if (k == "sendbuff") ok = parse_ptr(v, c.sendbuff);
      else if (k == "recvbuff") ok = parse_ptr(v, c.recvbuff);
      else if (k == "count") ok = have_count = parse_int(v, c.count) && c.count >= 0 && c.count < (int64_t{1} << 48);
      else if (k == "datatype") ok = have_dt = parse_int(v, c.datatype);
      else if (k == "op") ok = parse_int(v, c.red_op);
      else if (k == "root") ok = parse_int(v, c.root);
      else if (k == "comm") ok = have_comm = parse_ptr(v, c.comm);
      else if (k == "stream") ok = parse_ptr(v, c.stream);
      else continue;
      ++i;
    }
    if (!ok || !have_op || !have_count || !have_dt || !have_comm) {
      garbled(o.line, std::string(op_name(*op)) + " line without a valid opCount/count/datatype/comm (truncated?)");
      return true;
    }
    if (static_cast<int64_t>(log.calls.size()) >= kMaxCallsPerLog)
      throw InputError(name + ":" + std::to_string(o.line) + ": more than " + std::to_string(kMaxCallsPerLog) +
                       " NCCL calls in the logs (the limit)");
    last_call[{o.host, o.pid, o.tid}] = log.calls.size();
    log.calls.push_back(std::move(c));
    return true;
  }

  // "AllReduce: 4 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..0}"
  bool tuning(const LogOrigin& o, std::string_view op_tok, const std::vector<std::string_view>& t) {
    ++log.tuning_lines;
    int64_t bytes = -1;
    if (t.size() < 8 || !parse_int(t[1], bytes) || t[3] != "->" || t[4] != "Algo" || t[6] != "proto") {
      garbled(o.line, "tuning line without 'N Bytes -> Algo A proto P'");
      return true;
    }
    const auto op = op_from_name(op_tok);
    auto it = last_call.find({o.host, o.pid, o.tid});
    if (op && it != last_call.end()) {
      NcclCall& c = log.calls[it->second];
      if (c.op == *op && c.algorithm.empty() && c.bytes() == bytes) {
        c.algorithm = algo_text(t[5]);
        c.protocol = proto_text(t[7]);
        for (size_t i = 8; i < t.size(); ++i) {
          std::string_view s = t[i];
          const size_t eq = s.find("={");
          if (!s.starts_with("channel") || eq == std::string_view::npos || s.back() != '}') continue;
          s = s.substr(eq + 2, s.size() - eq - 3);
          const size_t dots = s.find("..");
          if (dots == std::string_view::npos || !parse_int(s.substr(0, dots), c.channel_lo) ||
              !parse_int(s.substr(dots + 2), c.channel_hi))
            c.channel_lo = c.channel_hi = -1;
        }
      }
    }
    return true;
  }

  bool init(const LogOrigin& o, const std::vector<std::string_view>& t) {
    CommInit ci;
    ci.at = o;
    bool have_comm = false, have_rank = false, have_n = false, ok = true;
    for (size_t i = 0; i + 1 < t.size() && ok; ++i) {
      const std::string_view k = t[i], v = t[i + 1];
      if (k == "comm") ok = have_comm = parse_ptr(v, ci.comm);
      else if (k == "rank") ok = have_rank = parse_int(v, ci.rank) && ci.rank >= 0;
      else if (k == "nranks") ok = have_n = parse_int(v, ci.nranks) && ci.nranks > 0 && ci.nranks <= kMaxNcclRanks;
      else if (k == "busId") ci.bus_id = std::string(v.substr(0, 64));
      else if (k == "commId") ok = parse_ptr(v, ci.comm_id);
      else continue;
      ++i;
    }
    if (!ok || !have_comm || !have_rank || !have_n || ci.rank >= ci.nranks) {
      garbled(o.line, "Init COMPLETE line without a valid comm/rank/nranks");
      return true;
    }
    log.inits.push_back(std::move(ci));
    return true;
  }

  // Ranks of "0   7  14", "1 -> 0 -> 7", "-1 -> 0 -> 1/-1/-1" or "[0] 1/-1/-1->0->7 [1] …".
  bool ranks_of(std::string_view s, std::vector<int>& out, bool bracketed_channels) {
    size_t i = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == ' ' || c == '/' || c == '>' || (c == '-' && i + 1 < s.size() && s[i + 1] == '>')) {
        ++i;
        continue;
      }
      if (bracketed_channels && c == '[') {
        const size_t e = s.find(']', i);
        if (e == std::string_view::npos) return false;
        i = e + 1;
        continue;
      }
      int v = 0;
      auto r = std::from_chars(s.data() + i, s.data() + s.size(), v);
      if (r.ec != std::errc() || v < -1) return false;
      out.push_back(v);
      if (out.size() > kMaxRanksPerChannelLine) return false;
      i = static_cast<size_t>(r.ptr - s.data());
    }
    return !out.empty();
  }

  bool channel_line(const LogOrigin& o, std::string_view msg) {
    ChannelLine cl;
    cl.at = o;
    std::string_view rest;
    if (msg.starts_with("Trees ")) {
      cl.kind = ChannelLine::Kind::Trees;
      rest = msg.substr(6);
    } else {
      const size_t colon = msg.find(" : ");
      if (colon == std::string_view::npos) return false;
      std::string_view head = msg.substr(0, colon);
      rest = msg.substr(colon + 3);
      std::string_view num;
      if (head.starts_with("Channel ")) {
        // "Channel 00/02 :  0 1" is the ring order; "Channel 00/0 : 1[81000] -> 0[81000] via …" is a connection.
        if (rest.find('[') != std::string_view::npos || rest.find("via") != std::string_view::npos) return false;
        cl.kind = ChannelLine::Kind::RingOrder;
        num = head.substr(8);
        const size_t slash = num.find('/');
        if (slash == std::string_view::npos || !parse_int(num.substr(slash + 1), cl.nchannels)) return false;
        num = num.substr(0, slash);
      } else if (head.starts_with("Ring ")) {
        cl.kind = ChannelLine::Kind::Ring;
        num = head.substr(5);
      } else if (head.starts_with("Tree ")) {
        cl.kind = ChannelLine::Kind::Tree;
        num = head.substr(5);
      } else {
        return false;
      }
      if (!parse_int(trim(num), cl.channel)) {
        garbled(o.line, "channel line with a bad channel number");
        return true;
      }
    }
    if (!ranks_of(rest, cl.ranks, cl.kind == ChannelLine::Kind::Trees)) {
      garbled(o.line, "ring/tree line with unparsable ranks");
      return true;
    }
    log.channels.push_back(std::move(cl));
    return true;
  }

  void line(std::string_view raw, int line_no) {
    ++log.lines;
    if (raw.size() > kMaxLineBytes) {
      garbled(line_no, "line longer than " + std::to_string(kMaxLineBytes) + " bytes");
      return;
    }
    if (log.nccl_version.empty()) {
      const size_t v = raw.find("NCCL version ");
      if (v != std::string_view::npos) {
        const auto tok = split_ws(raw.substr(v + 13), 1);
        if (!tok.empty()) log.nccl_version = std::string(tok[0].substr(0, 64));
      }
    }
    size_t at = raw.find(" NCCL INFO ");
    size_t len = 11;
    if (at == std::string_view::npos) {
      at = raw.find(" NCCL WARN ");
      if (at == std::string_view::npos) return;  // not an NCCL debug line (program output, nccl-tests table)
      ++log.nccl_lines;
      ++log.other_lines;  // warnings are kept out of the records
      return;
    }
    ++log.nccl_lines;
    LogOrigin o;
    o.file = file;
    o.line = line_no;
    const bool have_origin = parse_origin(raw.substr(0, at), o);
    std::string_view msg = raw.substr(at + len);
    while (!msg.empty() && (msg.back() == '\r' || msg.back() == '\n')) msg.remove_suffix(1);
    if (have_origin) {
      TopologyParser& tp = topo[{o.host, o.pid}];
      if (tp.feed(msg, line_no, o.host)) return;
    }
    auto t = split_ws(msg, 4096);
    if (t.empty()) {
      ++log.other_lines;
      return;
    }
    // Some NCCL versions print a bracketed index before a call's name ("NCCL INFO [2] AllReduce: opCount e ...").
    if (t.size() >= 3 && bracketed_index(t[0]) && t[1].size() > 1 && t[1].back() == ':') t.erase(t.begin());
    const bool op_like = t[0].size() > 1 && t[0].back() == ':' && t.size() >= 2;
    if (op_like && t[1] == "opCount") {
      if (!have_origin) return garbled(line_no, "call line without 'host:pid:tid [dev]' before NCCL INFO");
      call(o, t[0].substr(0, t[0].size() - 1), t);
      return;
    }
    if (op_like && t.size() >= 3 && t[2] == "Bytes") {
      if (have_origin) tuning(o, t[0].substr(0, t[0].size() - 1), t);
      return;
    }
    if (msg.find("Init COMPLETE") != std::string_view::npos && msg.find("nranks") != std::string_view::npos) {
      init(o, t);
      return;
    }
    if ((t[0] == "Channel" || t[0] == "Ring" || t[0] == "Tree" || t[0] == "Trees") && channel_line(o, msg)) return;
    ++log.other_lines;
  }
};

}  // namespace

namespace {

// One log file, line by line: the parser's state, the line count and the bytes seen, and the checks made once the
// file is read.
class LogFile {
 public:
  LogFile(NcclLog& log, const std::string& name)
      : log_(log), p_{log, static_cast<int>(log.files.size()), name, {}, {}}, name_(name),
        nccl_lines_before_(log.nccl_lines) {
    log.files.push_back(name);
  }
  void line(std::string_view text) { p_.line(text, ++line_no_); }
  void finish(int64_t bytes) {
    // A file with not one NCCL line is not an NCCL log (an empty file, binary data, some other program's output):
    // reporting "0 calls on 0 ranks" would read as a run that made no collectives.
    if (log_.nccl_lines == nccl_lines_before_) {
      throw InputError(name_ + ": no NCCL log line in " + std::to_string(line_no_) + " line(s) of " +
                       std::to_string(bytes) + " bytes (expected lines such as 'host:pid:tid [rank] NCCL INFO ...'; "
                       "run with NCCL_DEBUG=INFO)");
    }
    const size_t first_block = log_.topologies.size();
    for (auto& [key, tp] : p_.topo) {
      log_.garbled_lines += tp.garbled;
      for (auto& b : tp.blocks) log_.topologies.push_back(std::move(b));
    }
    std::stable_sort(log_.topologies.begin() + static_cast<std::ptrdiff_t>(first_block), log_.topologies.end(),
                     [](const TopologyBlock& a, const TopologyBlock& b) { return a.line < b.line; });
  }

 private:
  NcclLog& log_;
  Parser p_;
  std::string name_;
  int64_t nccl_lines_before_;
  int line_no_ = 0;
};

[[noreturn]] void too_big(const std::string& name, int64_t bytes) {
  throw InputError(name + ": NCCL log of " + std::to_string(bytes) + " bytes is over the limit of " +
                   std::to_string(kMaxLogBytes) + " bytes");
}

}  // namespace

void parse_nccl_log_text(std::string_view text, const std::string& name, NcclLog& log) {
  if (static_cast<int64_t>(text.size()) > kMaxLogBytes) too_big(name, static_cast<int64_t>(text.size()));
  LogFile f(log, name);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    f.line(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  f.finish(static_cast<int64_t>(text.size()));
}

// Streamed in blocks of 1 MiB: memory holds one block and the start of a line that crosses it, never the file (a line
// is cut at kMaxLineBytes + 1 bytes: the parser reports anything longer than kMaxLineBytes as garbled).
NcclLog parse_nccl_logs(const std::vector<std::string>& paths) {
  NcclLog log;
  constexpr size_t kBlock = 1 << 20;
  std::vector<char> block(kBlock);
  for (const auto& path : paths) {
    spec::require_existing_file(path, "the NCCL log (--log)");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open the NCCL log (--log)");
    LogFile f(log, path);
    std::string carry;  // the part of a line read so far
    int64_t bytes = 0;
    while (in) {
      in.read(block.data(), static_cast<std::streamsize>(kBlock));
      const auto n = static_cast<size_t>(in.gcount());
      if (n == 0) break;
      bytes += static_cast<int64_t>(n);
      if (bytes > kMaxLogBytes) too_big(path, bytes);
      std::string_view rest(block.data(), n);
      for (size_t nl; (nl = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(nl + 1)) {
        if (carry.empty()) {
          f.line(rest.substr(0, nl));
        } else {
          carry.append(rest.substr(0, std::min(nl, kMaxLineBytes + 1 - carry.size())));  // carry <= kMaxLineBytes + 1
          f.line(carry);
          carry.clear();
        }
      }
      if (carry.size() <= kMaxLineBytes) carry.append(rest.substr(0, kMaxLineBytes + 1 - carry.size()));
    }
    if (in.bad()) throw InputError(path + ": cannot read the NCCL log (--log)");
    if (!carry.empty()) f.line(carry);
    f.finish(bytes);
  }
  return log;
}

}  // namespace stepsim::profile
