#include "stepsim/ingest/trace/import_output.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stepsim/ingest/trace/traced_program_json.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/io/utf8.hpp"

namespace stepsim::trace {
namespace {

void write_string(std::ostream& o, const std::string& s) {
  o << '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o << '\\' << ch;
    } else if (c < 0x20) {
      static const char* hex = "0123456789abcdef";
      o << "\\u00" << hex[c >> 4] << hex[c & 15];
    } else {
      o << ch;
    }
  }
  o << '"';
}

void write_int_or_null(std::ostream& o, int64_t v) {
  if (v < 0) o << "null";
  else o << v;
}

void write_op(std::ostream& o, const ImportedOp& op) {
  using workload::OpKind;
  o << "{\"kind\":" << (op.kind == OpKind::Compute ? "\"compute\"" : op.kind == OpKind::P2P ? "\"p2p\"" : "\"collective\"")
    << ",\"name\":" << op.name << ",\"cuda_stream\":" << op.cuda_stream << ",\"start_ns\":" << op.start_ns
    << ",\"duration_ns\":" << op.duration_ns;
  if (op.kind == OpKind::Compute) {
    o << ",\"stream\":\"compute\",\"category\":\"" << workload::name_of(op.category) << '"';
  } else {
    o << ",\"stream\":\"" << workload::name_of(op.group) << "\",\"group\":\"" << workload::name_of(op.group) << '"';
    if (op.kind == OpKind::Collective) o << ",\"coll\":\"" << workload::name_of(op.coll) << '"';
    o << ",\"collective\":";
    write_string(o, op.collective);
    o << ",\"dtype\":";
    write_string(o, op.dtype);
    o << ",\"bytes\":";
    write_int_or_null(o, op.bytes);
    o << ",\"group_size\":";
    write_int_or_null(o, op.group_size);
    o << ",\"group_ranks\":[";
    for (size_t i = 0; i < op.group_ranks.size(); ++i) o << (i ? "," : "") << op.group_ranks[i];
    o << "],\"seq\":" << op.seq;
  }
  o << ",\"cpu_op\":";
  write_int_or_null(o, op.cpu_op);
  o << ",\"correlation\":";
  write_int_or_null(o, op.correlation);
  o << ",\"step\":";
  write_int_or_null(o, op.step);
  o << ",\"et_node\":";
  write_int_or_null(o, op.et_node);
  if (op.mem_alloc) o << ",\"mem_alloc_bytes\":" << op.mem_alloc;
  if (op.mem_free) o << ",\"mem_free_bytes\":" << op.mem_free;
  o << '}';
}

}  // namespace

void write_rank_program(const RankImport& r, std::ostream& o) {
  o << "{\"format\":\"stepsim-trace-program\",\"version\":1,\"rank\":" << r.rank << ",\"world_size\":";
  write_int_or_null(o, r.world_size);
  o << ",\n\"source\":";
  write_string(o, r.source);
  o << ",\"execution_trace\":";
  if (r.execution_trace.empty()) o << "null";
  else write_string(o, r.execution_trace);
  if (r.memory_events) o << ",\"static_memory_bytes\":" << r.static_memory_bytes << ",\"memory_events\":" << r.memory_events;
  o << ",\n\"steps\":[";
  for (size_t i = 0; i < r.steps.size(); ++i) {
    o << (i ? "," : "") << "{\"number\":" << r.steps[i].number << ",\"start_ns\":" << r.steps[i].start_ns
      << ",\"duration_ns\":" << r.steps[i].dur_ns << '}';
  }
  o << ']';
  o << ",\n\"kernels\":" << r.kernels << ",\"nccl_kernels\":" << r.nccl_kernels << ",\n\"names\":[";
  for (size_t i = 0; i < r.names.size(); ++i) {
    o << (i ? ",\n" : "\n");
    write_string(o, r.names[i]);
  }
  o << "],\n\"ops\":[";
  for (size_t i = 0; i < r.ops.size(); ++i) {
    o << (i ? ",\n" : "\n");
    write_op(o, r.ops[i]);
  }
  o << "]}\n";
}

uintmax_t min_imported_op_bytes() {
  static const uintmax_t bytes = [] {
    size_t shortest = SIZE_MAX;
    for (int c = 0; c <= static_cast<int>(workload::ComputeCategory::Host); ++c) {
      ImportedOp op;
      op.cuda_stream = 0;
      op.category = static_cast<workload::ComputeCategory>(c);
      std::ostringstream o;
      write_op(o, op);
      shortest = std::min(shortest, o.str().size());
    }
    return static_cast<uintmax_t>(shortest + 2);  // ",\n" between ops
  }();
  return bytes;
}

nlohmann::json summary_json(const std::vector<RankImport>& ranks) {
  nlohmann::json list = nlohmann::json::array();
  for (const RankImport& r : ranks) {
    list.push_back({{"rank", r.rank},
                    {"kernels", r.kernels},
                    {"nccl_kernels", r.nccl_kernels},
                    {"compute_busy_s", r.compute_busy_s},
                    {"step_time_s", r.step_time_s ? nlohmann::json(*r.step_time_s) : nlohmann::json(nullptr)}});
  }
  return {{"ranks", list}};
}

void write_import(const std::vector<RankImport>& ranks, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir + ": cannot create the output folder (--out): " + ec.message());
  auto write = [&](const std::string& path, auto&& fill) {
    std::ofstream out(path, std::ios::binary);
    if (!out) throw InputError(path + ": cannot write");
    fill(out);
    out.flush();
    if (!out) throw InputError(path + ": cannot write");
  };
  RankFileBudget budget(dir);
  for (const RankImport& r : ranks) {
    const std::string path = dir + "/rank" + std::to_string(r.rank) + ".json";
    uintmax_t bytes = 0;
    budget.wrote(path);
    write(path, [&](std::ofstream& o) {
      write_rank_program(r, o);
      bytes = static_cast<uintmax_t>(o.tellp());
    });
    // Streamed, so measured once written; a refusal removes it with the ones before (the budget's transaction).
    check_rank_file_size(path, bytes);
    budget.add(bytes);
  }
  write(dir + "/summary.json", [&](std::ostream& o) { o << io::json_text(summary_json(ranks), 2) << "\n"; });
  budget.commit();
}

}  // namespace stepsim::trace
