#include "stepsim/ingest/trace/execution_trace.hpp"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/json_read.hpp"
#include "stepsim/ingest/trace/readers.hpp"
#include "stepsim/ingest/trace/trace_document.hpp"

namespace stepsim::trace {
namespace {

namespace od = json::od;

using json::throw_if;

// The first string among the top-level input values: record_param_comms passes the collective's name there.
std::string first_string_input(od::value inputs) {
  od::json_type t;
  throw_if(inputs.type().get(t));
  od::array values;
  if (t == od::json_type::object) {
    od::object o;
    throw_if(inputs.get_object().get(o));
    od::value v;
    if (o.find_field_unordered("values").get(v) || v.get_array().get(values)) return {};
  } else if (inputs.get_array().get(values)) {
    return {};
  }
  for (auto e : values) {
    od::value ev;
    throw_if(e.get(ev));
    if (auto s = json::string_of(ev)) return *s;
  }
  return {};
}

// A shape list: one entry per value, a list of integers for a tensor (anything else leaves dims_known false).
std::vector<EtValue> shapes_of(od::value v) {
  std::vector<EtValue> out;
  od::array a;
  if (v.get_array().get(a)) return out;
  for (auto e : a) {
    od::value ev;
    throw_if(e.get(ev));
    EtValue x;
    od::array dims;
    if (!ev.get_array().get(dims)) {
      x.dims_known = true;
      for (auto d : dims) {
        od::value dv;
        throw_if(d.get(dv));
        const auto n = json::int_of(dv);
        if (n && *n >= 0) x.dims.push_back(*n);
        else x.dims_known = false;
      }
    }
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<std::string> types_of(od::value v) {
  std::vector<std::string> out;
  od::array a;
  if (v.get_array().get(a)) return out;
  for (auto e : a) {
    od::value ev;
    throw_if(e.get(ev));
    out.push_back(json::string_of(ev).value_or(""));
  }
  return out;
}

void set_types(std::vector<EtValue>& values, const std::vector<std::string>& types) {
  if (values.size() < types.size()) values.resize(types.size());
  for (size_t i = 0; i < types.size(); ++i) values[i].type = types[i];
}

// Chakra schemas: {"values": [...], "shapes": [...], "types": [...]}; the first string value names a collective.
void read_io_object(od::object o, std::vector<EtValue>& values, std::string* first_string) {
  std::vector<std::string> types;
  for (auto f : o) {
    std::string_view k;
    throw_if(f.unescaped_key().get(k));
    od::value v;
    throw_if(f.value().get(v));
    if (k == "shapes") {
      std::vector<EtValue> s = shapes_of(v);
      for (size_t i = 0; i < s.size(); ++i) {
        if (i < values.size()) s[i].type = values[i].type;
      }
      values = std::move(s);
    } else if (k == "types") {
      types = types_of(v);
    } else if (k == "values" && first_string) {
      od::array a;
      if (v.get_array().get(a)) continue;
      for (auto e : a) {
        od::value ev;
        throw_if(e.get(ev));
        if (auto s = json::string_of(ev)) {
          *first_string = *s;
          break;
        }
      }
    }
  }
  set_types(values, types);
}

void read_attrs(od::value attrs, EtNode& n) {
  od::array a;
  if (attrs.get_array().get(a)) return;
  for (auto e : a) {
    od::value ev;
    throw_if(e.get(ev));
    od::object o;
    if (ev.get_object().get(o)) continue;
    std::string name;
    std::optional<int64_t> ival;
    std::optional<std::string> sval;
    for (auto f : o) {
      std::string_view k;
      throw_if(f.unescaped_key().get(k));
      od::value v;
      throw_if(f.value().get(v));
      if (k == "name") name = json::string_of(v).value_or("");
      else if (k == "value") {
        od::json_type t;
        throw_if(v.type().get(t));
        if (t == od::json_type::number) ival = json::int_of(v);
        else if (t == od::json_type::string) sval = json::string_of(v);
      }
    }
    if (name == "rf_id" && ival) n.rf_id = *ival;
    else if (name == "collective_name" && sval) n.collective = *sval;
    else if (name == "seq_id" && ival) n.seq_id = *ival;
  }
}

}  // namespace

EtReader::EtReader(const std::string& name) { et_.path = name; }

bool EtReader::field(std::string_view key, od::value v) {
  if (key == "schema") {
    et_.schema = json::string_of(v).value_or("");
    return true;
  }
  if (key == "pid") {
    et_.pid = json::int_of(v).value_or(-1);
    return true;
  }
  if (key != "nodes") return false;
  od::array nodes;
  if (v.get_array().get(nodes)) throw InputError(et_.path + ": nodes must be an array");
  saw_nodes_ = true;
  for (auto e : nodes) {
    od::value ev;
    throw_if(e.get(ev));
    od::object o;
    if (ev.get_object().get(o)) throw InputError(et_.path + ": every element of nodes must be an object");
    EtNode n;
    std::string first_input;
    bool comms = false;
    std::vector<std::string> in_types, out_types;
    for (auto f : o) {
      std::string_view k;
      throw_if(f.unescaped_key().get(k));
      od::value fv;
      throw_if(f.value().get(fv));
      if (k == "id") n.id = json::int_of(fv).value_or(-1);
      else if (k == "name") {
        n.name = json::string_of(fv).value_or("");
        comms = n.name == "record_param_comms";
      } else if (k == "rf_id") n.rf_id = json::int_of(fv).value_or(-1);
      else if (k == "parent" || k == "ctrl_deps") n.parent = json::int_of(fv).value_or(-1);
      else if (k == "attrs") read_attrs(fv, n);
      else if (k == "seq_id") n.seq_id = json::int_of(fv).value_or(-1);
      else if (k == "input_shapes") n.inputs = shapes_of(fv);
      else if (k == "input_types") in_types = types_of(fv);
      else if (k == "output_shapes") n.outputs = shapes_of(fv);
      else if (k == "output_types") out_types = types_of(fv);
      else if (k == "inputs" || k == "outputs") {
        od::object io;
        const bool want_name = k == "inputs" && (comms || n.name.empty());
        if (!fv.get_object().get(io)) read_io_object(io, k == "inputs" ? n.inputs : n.outputs, want_name ? &first_input : nullptr);
        else if (want_name) first_input = first_string_input(fv);
      }
    }
    set_types(n.inputs, in_types);
    set_types(n.outputs, out_types);
    if (n.id < 0) throw InputError(et_.path + ": node " + std::to_string(et_.nodes.size()) + " has no integer id >= 0");
    if (comms && n.collective.empty()) n.collective = first_input;
    if (!comms) n.collective.clear();
    if (et_.nodes.size() >= kMaxTraceEvents) {
      throw InputError(et_.path + ": more than " + std::to_string(kMaxTraceEvents) +
                       " nodes: over the limit for one execution trace");
    }
    et_.nodes.push_back(std::move(n));
  }
  return true;
}

ExecutionTrace parse_execution_trace(const TextBuffer& text, const std::string& name) {
  TraceDocument d = parse_trace_document(text, name);
  if (d.format != TraceFormat::Execution)
    throw InputError(name + ": a Kineto trace where an execution trace (nodes) was expected");
  return std::move(d.execution);
}

ExecutionTrace read_execution_trace(const std::string& path) {
  return parse_execution_trace(read_text_file(path), path);
}

namespace {

// Without "Record function id" the Kineto ops and the ET nodes are two name sequences (by External id, by rf_id)
// that agree where the same code ran: walk both, and where the names differ skip ahead in whichever sequence
// reaches the other's current name sooner (within kAlignWindow), as Chakra's linker does by order and name.
std::vector<int> align_by_name(const KinetoTrace& k, const ExecutionTrace& et) {
  constexpr size_t kAlignWindow = 512;
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<int> ops;
  for (size_t i = 0; i < k.cpu_ops.size(); ++i)
    if (k.cpu_ops[i].external_id >= 0) ops.push_back(static_cast<int>(i));
  std::stable_sort(ops.begin(), ops.end(),
                   [&](int a, int b) { return k.cpu_ops[a].external_id < k.cpu_ops[b].external_id; });
  std::vector<int> nodes;
  for (size_t i = 0; i < et.nodes.size(); ++i)
    if (et.nodes[i].rf_id >= 0) nodes.push_back(static_cast<int>(i));
  std::stable_sort(nodes.begin(), nodes.end(), [&](int a, int b) { return et.nodes[a].rf_id < et.nodes[b].rf_id; });
  std::unordered_map<std::string, uint32_t> id_of;
  for (size_t i = 0; i < k.names.size(); ++i) id_of.emplace(k.names[i], static_cast<uint32_t>(i));
  std::vector<uint32_t> a(ops.size()), b(nodes.size());
  for (size_t i = 0; i < ops.size(); ++i) a[i] = k.cpu_ops[ops[i]].name;
  for (size_t j = 0; j < nodes.size(); ++j) {
    auto it = id_of.find(et.nodes[nodes[j]].name);
    b[j] = it == id_of.end() ? kNone : it->second;
  }
  // Positions of each name in each sequence, to find the next occurrence in O(log n).
  std::unordered_map<uint32_t, std::vector<size_t>> pos_a, pos_b;
  for (size_t i = 0; i < a.size(); ++i) pos_a[a[i]].push_back(i);
  for (size_t j = 0; j < b.size(); ++j) pos_b[b[j]].push_back(j);
  auto next_at = [](const std::unordered_map<uint32_t, std::vector<size_t>>& pos, uint32_t name, size_t from) {
    auto it = pos.find(name);
    if (it == pos.end()) return SIZE_MAX;
    auto p = std::upper_bound(it->second.begin(), it->second.end(), from);
    return p == it->second.end() ? SIZE_MAX : *p - from;
  };
  std::vector<int> node_of_op(k.cpu_ops.size(), -1);
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) {
      node_of_op[ops[i++]] = nodes[j++];
      continue;
    }
    const size_t skip_b = next_at(pos_b, a[i], j), skip_a = next_at(pos_a, b[j], i);
    if (skip_b <= skip_a && skip_b <= kAlignWindow) j += skip_b;
    else if (skip_a <= kAlignWindow) i += skip_a;
    else ++i, ++j;
  }
  return node_of_op;
}

}  // namespace

std::vector<int> link_kernels_to_nodes(const KinetoTrace& k, const ExecutionTrace& et) {
  bool has_rf = false;
  for (const CpuOp& op : k.cpu_ops) has_rf = has_rf || op.rf_id >= 0;
  std::vector<int> node_of_op(k.cpu_ops.size(), -1);
  if (has_rf) {
    std::vector<std::pair<int64_t, int>> by_rf;
    for (size_t i = 0; i < et.nodes.size(); ++i)
      if (et.nodes[i].rf_id >= 0) by_rf.emplace_back(et.nodes[i].rf_id, static_cast<int>(i));
    std::sort(by_rf.begin(), by_rf.end());
    for (size_t i = 0; i < k.cpu_ops.size(); ++i) {
      auto it = std::lower_bound(by_rf.begin(), by_rf.end(), std::make_pair(k.cpu_ops[i].rf_id, -1));
      if (k.cpu_ops[i].rf_id >= 0 && it != by_rf.end() && it->first == k.cpu_ops[i].rf_id) node_of_op[i] = it->second;
    }
  } else {
    node_of_op = align_by_name(k, et);
  }
  std::vector<int> out(k.kernels.size(), -1);
  for (size_t i = 0; i < k.kernels.size(); ++i)
    if (k.kernels[i].cpu_op >= 0) out[i] = node_of_op[k.kernels[i].cpu_op];
  return out;
}

}  // namespace stepsim::trace
