#include "stepsim/report/chrome_trace.hpp"
#include "stepsim/io/utf8.hpp"

#include <cstdio>
#include <fstream>

#include "stepsim/report/breakdown.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::report {

namespace {

using workload::kNumStreams;
using workload::Op;
using workload::OpKind;

// Trace timestamps are microseconds; keep nanosecond resolution.
std::string us(int64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1000.0);
  return buf;
}

// A JSON string's body: quotes and backslashes escaped, control bytes dropped, ill-formed UTF-8 replaced (io/utf8.hpp).
std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return io::valid_utf8(o);
}

}  // namespace

void write_chrome_trace(std::ostream& out, const sim::Simulation& s) {
  const auto& w = s.workload;
  const auto& layout = w.layout;
  bool first = true;
  auto event = [&](const std::string& body) {
    out << (first ? "\n" : ",\n") << "{" << body << "}";
    first = false;
  };
  // step_time_s: the job's step (every rank), which the recorded ranks' events alone may end before.
  char step[40];
  std::snprintf(step, sizeof step, "%.9f", static_cast<double>(s.result.step_ns) * 1e-9);
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"stepsim\",\"model\":\""
      << escape(w.job.model.name) << "\",\"gpus\":" << layout.world() << ",\"step_time_s\":" << step
      << "},\"traceEvents\":[";
  for (const sim::RankTimeline& tl : s.result.recorded) {
    const int r = tl.rank;
    const workload::RankCoord rc = layout.coord(r);
    const workload::Program& prog = w.program_of_rank(r);
    const std::string pid = std::to_string(r);
    event("\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid + ",\"args\":{\"name\":\"rank " + pid +
          " (stage " + std::to_string(rc.pp) + ", tp " + std::to_string(rc.tp) + ", cp " + std::to_string(rc.cp) +
          ", dp " + std::to_string(rc.dp) + ")\"}");
    event("\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + pid + ",\"args\":{\"sort_index\":" + pid + "}");
    for (int st = 0; st < kNumStreams; ++st) {
      event("\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid + ",\"tid\":" + std::to_string(st) +
            ",\"args\":{\"name\":\"" + workload::name_of(static_cast<workload::Stream>(st)) + "\"}");
    }
    for (const sim::OpRecord& rec : tl.ops) {
      const Op& op = prog.ops[rec.op];
      const std::string tid = std::to_string(static_cast<int>(op.stream));
      const std::string name = escape(prog.name(op));
      const std::string where = "\"microbatch\":" + std::to_string(op.microbatch) + ",\"layer\":" +
                                std::to_string(op.layer) + ",\"chunk\":" + std::to_string(op.chunk) + ",\"phase\":\"" +
                                workload::name_of(op.phase) + "\"";
      std::string args = where;
      std::string cat;
      if (op.kind == OpKind::Compute) {
        cat = workload::name_of(op.phase);
        char buf[160];
        std::snprintf(buf, sizeof buf, ",\"flops\":%.6g,\"bytes\":%llu,\"kernel\":\"%s\",\"slowdown\":%.4g", op.flops,
                      static_cast<unsigned long long>(op.bytes), workload::name_of(op.category), rec.slowdown);
        args += buf;
        if (rec.overlap_ns > 0) {
          // Factor by which communication kernels sharing the GPU stretched this kernel, and the time it added.
          const int64_t dur = rec.end_ns - rec.begin_ns;
          std::snprintf(buf, sizeof buf, ",\"overlap_slowdown\":%.4f,\"overlap_added_us\":%.3f",
                        dur > rec.overlap_ns ? static_cast<double>(dur) / static_cast<double>(dur - rec.overlap_ns) : 0.0,
                        static_cast<double>(rec.overlap_ns) * 1e-3);
          args += buf;
        }
      } else {
        cat = comm_kind_name(comm_kind_of(op.group));
        const uint64_t bytes = op.kind == OpKind::P2P ? op.send_prev + op.send_next + op.recv_prev + op.recv_next : op.bytes;
        args += ",\"bytes\":" + std::to_string(bytes) + ",\"group\":\"" + workload::name_of(op.group) +
                "\",\"group_size\":" + std::to_string(w.group_size_of(r, op)) + ",\"sync_wait_us\":" +
                us(rec.begin_ns - rec.post_ns);
        if (op.kind == OpKind::Collective) args += std::string(",\"collective\":\"") + workload::name_of(op.coll) + "\"";
        if (rec.begin_ns > rec.post_ns) {
          event("\"ph\":\"X\",\"name\":\"wait: " + name + "\",\"cat\":\"sync\",\"pid\":" + pid + ",\"tid\":" + tid +
                ",\"ts\":" + us(rec.post_ns) + ",\"dur\":" + us(rec.begin_ns - rec.post_ns) + ",\"args\":{" + where + "}");
        }
      }
      event("\"ph\":\"X\",\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"pid\":" + pid + ",\"tid\":" + tid +
            ",\"ts\":" + us(rec.begin_ns) + ",\"dur\":" + us(rec.end_ns - rec.begin_ns) + ",\"args\":{" + args + "}");
    }
    for (const sim::MemorySample& m : tl.memory) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(m.bytes) / (1024.0 * 1024.0 * 1024.0));
      event("\"ph\":\"C\",\"name\":\"memory_GiB\",\"pid\":" + pid + ",\"ts\":" + us(m.t_ns) + ",\"args\":{\"allocated\":" +
            buf + "}");
    }
  }
  int id = 0;
  for (const sim::Flow& f : s.result.flows) {
    const std::string fid = std::to_string(++id);
    event("\"ph\":\"s\",\"name\":\"p2p\",\"cat\":\"pp\",\"id\":" + fid + ",\"pid\":" + std::to_string(f.src_rank) +
          ",\"tid\":" + std::to_string(f.src_stream) + ",\"ts\":" + us(f.begin_ns) + ",\"args\":{\"bytes\":" +
          std::to_string(f.bytes) + "}");
    event("\"ph\":\"f\",\"bp\":\"e\",\"name\":\"p2p\",\"cat\":\"pp\",\"id\":" + fid + ",\"pid\":" +
          std::to_string(f.dst_rank) + ",\"tid\":" + std::to_string(f.dst_stream) + ",\"ts\":" + us(f.begin_ns));
  }
  out << "\n]}\n";
}

void write_chrome_trace_file(const std::string& path, const sim::Simulation& s) {
  std::ofstream out(path);
  if (!out) throw InputError(path + ": cannot write trace file");
  write_chrome_trace(out, s);
  if (!out) throw InputError(path + ": error while writing trace file");
}

}  // namespace stepsim::report
