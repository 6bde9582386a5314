#include "stepsim/calibrate/nccl_records.hpp"

#include <algorithm>
#include <cctype>

#include "stepsim/io/csv_table.hpp"
#include "stepsim/calibrate/nccl_tests_text.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {

KernelRecords parse_kernel_records(std::string_view text, const std::string& path) {
  check_measurement_text(text, path);
  const CsvTable csv = parse_csv(text, path);
  if (csv.header_line == 0) throw InputError(path + ": empty; kernel records are a CSV with a header line");
  const char* required[] = {"collective", "bytes", "ranks", "nodes", "ranks_per_node", "duration_us"};
  int col[6];
  for (int i = 0; i < 6; ++i) {
    col[i] = csv.column(required[i]);
    if (col[i] < 0) {
      throw InputError(path + ":" + std::to_string(csv.header_line) + ": kernel records need the columns collective, "
                       "bytes, ranks, nodes, ranks_per_node, duration_us (missing '" + required[i] + "')");
    }
  }
  const int c_algo = csv.column("algorithm"), c_proto = csv.column("protocol");
  KernelRecords out;
  out.path = path;
  auto bad = [&](int line) {
    ++out.bad_lines;
    out.bad_line_numbers.push_back(line);
  };
  for (int l : csv.bad_lines) bad(l);
  for (const auto& row : csv.rows) {
    const auto& v = row.fields;
    KernelRecord r;
    r.line = row.line;
    const auto coll = parse_bench_collective(v[col[0]]);
    refuse_impossible_number(path, row.line, "duration_us", v[col[5]], 0);
    for (int c : {2, 3, 4}) refuse_impossible_number(path, row.line, required[c], v[col[c]], 1);
    bool ok = coll && parse_u64(v[col[1]], r.bytes) && parse_int(v[col[2]], r.ranks) && parse_int(v[col[3]], r.nodes) &&
              parse_int(v[col[4]], r.ranks_per_node) && parse_number(v[col[5]], r.duration_us);
    ok = ok && r.ranks >= 1 && r.ranks <= (1 << 20) && r.nodes >= 1 && r.nodes <= r.ranks &&
         r.ranks_per_node >= (r.ranks + r.nodes - 1) / r.nodes && r.ranks_per_node <= r.ranks && r.duration_us > 0;
    if (ok && c_algo >= 0) {
      const std::string& a = v[c_algo];
      if (!a.empty() && a != "direct" && a != "Direct" && a != "DIRECT") {
        const auto parsed = parse_algorithm(a);
        ok = parsed.has_value();
        if (ok) r.algorithm = *parsed;
      }
    }
    if (ok && c_proto >= 0 && !v[c_proto].empty()) {
      r.protocol = parse_protocol(v[c_proto]);
      ok = r.protocol.has_value();
    }
    if (!ok) {
      bad(row.line);
      continue;
    }
    check_collective_measurement(path, r.line, r.bytes, r.duration_us);
    r.collective = *coll;
    out.records.push_back(r);
  }
  std::sort(out.bad_line_numbers.begin(), out.bad_line_numbers.end());
  if (out.bad_line_numbers.size() > 20) out.bad_line_numbers.resize(20);
  if (out.records.empty()) {
    std::string msg = path + ": no valid kernel records";
    if (out.bad_lines > 0) msg += " (" + std::to_string(out.bad_lines) + " bad rows, the first at line " +
                                  std::to_string(out.bad_line_numbers.front()) + ")";
    throw InputError(msg);
  }
  return out;
}

KernelRecords read_kernel_records(const std::string& path) {
  return parse_kernel_records(read_measurement_file(path), path);
}

CommPoint comm_point(const KernelRecord& r, const std::string& where) {
  CommPoint p;
  p.collective = r.collective;
  p.bytes = r.bytes;
  p.geometry = {r.ranks, r.nodes, r.ranks_per_node};
  p.time_us = r.duration_us;
  p.algorithm = r.algorithm;
  p.protocol = r.protocol;
  p.where = where;
  return p;
}

}  // namespace stepsim::cost
