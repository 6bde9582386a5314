#include "stepsim/ingest/profile/volume_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace stepsim::profile {

using nlohmann::json;

namespace {

json ratio(int64_t measured, int64_t model) {
  return model > 0 ? json(static_cast<double>(measured) / static_cast<double>(model)) : json(nullptr);
}


// Bytes a rank sends for one call in the bandwidth-optimal (ring) algorithm, the quantity the §2.4 formulas count
// (eq. 2.6-2.7): nccl-tests' bytes times the ring bus factor (all-reduce 2(n-1)/n of the message, all-gather and
// reduce-scatter (n-1)/n of the whole buffer, the rest the message). A communicator of unknown size counts its message.
int64_t bus_bytes(const NcclCall& call, int n) {
  if (n <= 1) return call.bytes();
  return std::llround(static_cast<double>(algbw_bytes(call, n)) * bus_factors(call.op, "RING", n).gamma);
}

}  // namespace

json volume_vs_model_json(const ProfileResult& r) {
  if (!r.model) return nullptr;
  const ModelShape& m = *r.model;
  const ParallelismSizes& p = r.parallelism;
  struct Bytes {
    int64_t bus = 0, message = 0;
  };
  std::map<int, std::map<std::string, Bytes>> measured;
  for (const auto& c : r.calls) {
    const NcclCall& call = r.log.calls[c.call];
    const int n = c.comm >= 0 ? r.comms[c.comm].size : call.nranks;
    Bytes& b = measured[c.rank][call_parallelism(r, c)];
    b.bus += bus_bytes(call, n);
    b.message += call.bytes();
  }
  json rows = json::array();
  struct Total {
    int ranks = 0;
    int64_t bus = 0, message = 0, model = 0;
  };
  std::map<std::string, Total> total;
  for (const auto& rp : r.ranks) {
    std::map<std::string, std::pair<Bytes, int64_t>> row;  // type → (measured, model)
    for (const auto& [type, b] : measured[rp.rank]) row[type].first = b;
    for (const auto& [type, b] : model_volumes(m, p, rp.rank)) row[type].second = std::llround(b);
    for (const auto& [type, v] : row) {
      rows.push_back({{"rank", rp.rank}, {"parallelism", type}, {"measured_bytes", v.first.bus},
                      {"message_bytes", v.first.message}, {"model_bytes", v.second}, {"ratio", ratio(v.first.bus, v.second)}});
      Total& t = total[type];
      ++t.ranks;
      t.bus += v.first.bus;
      t.message += v.first.message;
      t.model += v.second;
    }
  }
  json by_type = json::array();
  for (const auto& [type, t] : total)
    by_type.push_back({{"parallelism", type}, {"ranks", t.ranks}, {"measured_bytes", t.bus}, {"message_bytes", t.message},
                       {"model_bytes", t.model}, {"ratio", ratio(t.bus, t.model)}});
  json model = {{"layers", m.layers}, {"hidden", m.hidden}, {"seq", m.seq}, {"vocab", m.vocab},
                {"mbs", m.micro_batch}, {"microbatches", m.micro_batches}, {"iterations", m.iterations},
                {"bytes", m.dtype_bytes}, {"moe_layers", m.moe_layers}, {"topk", m.topk},
                {"params", std::llround(model_params(m))}, {"params_from", m.params > 0 ? "given" : "eq. 2.4"},
                {"sizes", {{"tp", std::max(p.tp, 1)}, {"pp", std::max(p.pp, 1)}, {"dp", std::max(p.dp, 1)},
                           {"ep", std::max(p.ep, 1)}, {"cp", std::max(p.cp, 1)}}}};
  return {{"model", model}, {"rows", rows}, {"by_type", by_type}};
}

std::string volume_vs_model_text(const json& v) {
  if (v.is_null()) return "";
  std::ostringstream o;
  const json& m = v["model"];
  const json& z = m["sizes"];
  o << "\nvolume per rank vs the §2.4 models (thesis Table 5.1 style; P = " << m["params"].get<int64_t>() << " ("
    << m["params_from"].get<std::string>() << "), " << m["iterations"].get<int64_t>() << " iteration(s), tp "
    << z["tp"] << " pp " << z["pp"] << " dp " << z["dp"] << " ep " << z["ep"] << " cp " << z["cp"] << "); both columns are\n"
    << "bus volume, the bytes a rank sends: all-reduce 2(n-1)/n x message, all-gather / reduce-scatter (n-1)/n x buffer,\n"
    << "send/recv the message (message bytes as logged: message_bytes in the JSON):\n";
  auto line = [&](const std::string& who, const json& x) {
    char buf[160];
    const std::string r = x["ratio"].is_null() ? "-" : [&] {
      char q[32];
      std::snprintf(q, sizeof q, "%.2fx", x["ratio"].get<double>());
      return std::string(q);
    }();
    std::snprintf(buf, sizeof buf, "%-6s %-10s %16lld %16lld %8s\n", who.c_str(), x["parallelism"].get<std::string>().c_str(),
                  static_cast<long long>(x["model_bytes"].get<int64_t>()),
                  static_cast<long long>(x["measured_bytes"].get<int64_t>()), r.c_str());
    o << buf;
  };
  o << "rank   type        theor (bytes)      obs (bytes)    ratio\n";
  for (const auto& x : v["rows"]) line(std::to_string(x["rank"].get<int>()), x);
  o << "all ranks (sums):\n";
  for (const auto& x : v["by_type"]) line("", x);
  return o.str();
}

}  // namespace stepsim::profile
