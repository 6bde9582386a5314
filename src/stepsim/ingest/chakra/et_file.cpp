// Chakra .et streams through the protobuf classes generated from et_def.proto (Debian's libprotobuf).
#include "stepsim/ingest/chakra/et_file.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#include <google/protobuf/stubs/logging.h>

#include "et_def.pb.h"
#include "stepsim/io/input_error.hpp"

namespace stepsim::chakra {

const EtAttr* EtNode::find(const std::string& attr) const {
  for (const EtAttr& a : attrs) {
    if (a.name == attr) return &a;
  }
  return nullptr;
}

namespace {

namespace pb = ChakraProtoMsg;

void put_attr(const EtAttr& a, pb::AttributeProto* p) {
  p->set_name(a.name);
  std::visit(
      [p](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) p->set_int64_val(v);
        else if constexpr (std::is_same_v<T, uint64_t>) p->set_uint64_val(v);
        else if constexpr (std::is_same_v<T, double>) p->set_double_val(v);
        else if constexpr (std::is_same_v<T, bool>) p->set_bool_val(v);
        else if constexpr (std::is_same_v<T, int32_t>) p->set_int32_val(v);
        else p->set_string_val(v);
      },
      a.value);
}

// The schema's scalar kinds as stepsim's AttrValue; false for list values (dropped) and unset ones.
bool get_attr(const pb::AttributeProto& p, EtAttr& a) {
  a.name = p.name();
  using V = pb::AttributeProto;
  switch (p.value_case()) {
    case V::kDoubleVal: a.value = p.double_val(); return true;
    case V::kFloatVal: a.value = static_cast<double>(p.float_val()); return true;
    case V::kInt32Val: a.value = static_cast<int64_t>(p.int32_val()); return true;
    case V::kInt64Val: a.value = static_cast<int64_t>(p.int64_val()); return true;
    case V::kUint32Val: a.value = static_cast<int64_t>(p.uint32_val()); return true;
    case V::kSint32Val: a.value = static_cast<int64_t>(p.sint32_val()); return true;
    case V::kSint64Val: a.value = static_cast<int64_t>(p.sint64_val()); return true;
    case V::kFixed32Val: a.value = static_cast<int64_t>(p.fixed32_val()); return true;
    case V::kSfixed32Val: a.value = static_cast<int64_t>(p.sfixed32_val()); return true;
    case V::kSfixed64Val: a.value = static_cast<int64_t>(p.sfixed64_val()); return true;
    case V::kUint64Val:
    case V::kFixed64Val: {
      const uint64_t u = p.value_case() == V::kUint64Val ? p.uint64_val() : p.fixed64_val();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) a.value = static_cast<int64_t>(u);
      else a.value = u;
      return true;
    }
    case V::kBoolVal: a.value = p.bool_val(); return true;
    case V::kStringVal: a.value = p.string_val(); return true;
    case V::kBytesVal: a.value = p.bytes_val(); return true;
    default: return false;
  }
}

void put_varint(uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_message(const google::protobuf::MessageLite& m, std::string& out) {
  const size_t n = m.ByteSizeLong();
  put_varint(n, out);
  const size_t at = out.size();
  out.resize(at + n);
  m.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + at));
}

}  // namespace

size_t write_et(const EtGraph& g, std::string& out) {
  const size_t start = out.size();
  pb::GlobalMetadata meta;
  meta.set_version(g.version);
  for (const EtAttr& a : g.metadata) put_attr(a, meta.add_attr());
  put_message(meta, out);
  pb::Node n;
  for (const EtNode& e : g.nodes) {
    n.Clear();
    n.set_id(e.id);
    n.set_name(e.name);
    n.set_type(static_cast<pb::NodeType>(e.type));
    for (uint64_t d : e.data_deps) n.add_data_deps(d);
    for (uint64_t d : e.ctrl_deps) n.add_ctrl_deps(d);
    n.set_duration_micros(e.duration_micros);
    for (const EtAttr& a : e.attrs) put_attr(a, n.add_attr());
    put_message(n, out);
  }
  return out.size() - start;
}

void write_et_file(const EtGraph& g, const std::string& path) {
  std::string bytes;
  write_et(g, bytes);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) throw InputError(path + ": cannot write (--out)");
}

EtGraph parse_et(std::string_view bytes, const std::string& path) {
  // A message that does not parse is reported once, as an InputError naming the file and the message; libprotobuf's
  // own log lines (invalid UTF-8 in a string field, say) would only repeat it on stderr.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  if (bytes.size() > kMaxEtFileBytes) {
    throw InputError(path + ": larger than " + std::to_string(kMaxEtFileBytes >> 20) + " MiB, the most a Chakra trace may be");
  }
  EtGraph g;
  size_t pos = 0;
  int64_t index = 0;  // message number, for errors: 0 = the metadata
  auto fail = [&](const std::string& rule) -> void {
    throw InputError(path + ": " + (index == 0 ? std::string("the GlobalMetadata message")
                                               : "node message " + std::to_string(index)) +
                     " at byte " + std::to_string(pos) + ": " + rule);
  };
  if (bytes.empty()) fail("the file is empty: a Chakra trace starts with its GlobalMetadata message");
  pb::Node n;
  while (pos < bytes.size()) {
    uint64_t len = 0;
    int shift = 0;
    for (;;) {
      if (pos >= bytes.size()) fail("ends inside a message length (a truncated file, or not a Chakra .et trace)");
      const auto b = static_cast<uint8_t>(bytes[pos++]);
      if (shift > 63) fail("a message length longer than 10 bytes: not a Chakra .et trace");
      len |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    if (len > kMaxEtMessageBytes) fail("a message of " + std::to_string(len) + " bytes: more than the 64 MiB limit");
    if (len > bytes.size() - pos) fail("the file ends inside the message (a truncated file?)");
    const char* p = bytes.data() + pos;
    if (index == 0) {
      pb::GlobalMetadata meta;
      if (!meta.ParseFromArray(p, static_cast<int>(len))) fail("is not a valid GlobalMetadata message");
      g.version = meta.version();
      for (const auto& a : meta.attr()) {
        EtAttr e;
        if (get_attr(a, e)) g.metadata.push_back(std::move(e));
      }
    } else {
      if (g.nodes.size() >= kMaxEtNodes) fail("more than " + std::to_string(kMaxEtNodes) + " nodes, the most read from one file");
      if (!n.ParseFromArray(p, static_cast<int>(len))) fail("is not a valid Node message");
      EtNode e;
      e.id = n.id();
      e.name = n.name();
      e.type = static_cast<int>(n.type());
      e.data_deps.assign(n.data_deps().begin(), n.data_deps().end());
      e.ctrl_deps.assign(n.ctrl_deps().begin(), n.ctrl_deps().end());
      e.duration_micros = n.duration_micros();
      for (const auto& a : n.attr()) {
        EtAttr at;
        if (get_attr(a, at)) e.attrs.push_back(std::move(at));
      }
      g.nodes.push_back(std::move(e));
    }
    pos += len;
    ++index;
  }
  return g;
}

EtGraph read_et_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path + ": cannot read the Chakra trace");
  const std::streamoff size = in.tellg();
  if (size < 0) throw InputError(path + ": cannot read the Chakra trace");
  if (static_cast<uint64_t>(size) > kMaxEtFileBytes) {
    throw InputError(path + ": larger than " + std::to_string(kMaxEtFileBytes >> 20) + " MiB, the most a Chakra trace may be");
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  if (!in) throw InputError(path + ": cannot read the Chakra trace");
  return parse_et(bytes, path);
}

}  // namespace stepsim::chakra
