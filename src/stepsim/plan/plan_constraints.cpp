#include "stepsim/plan/plan_constraints.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "stepsim/io/input_error.hpp"

namespace stepsim::plan {

namespace {

struct KeyInfo {
  PlanKey key;
  const char* name;
  const char* alias;  // what users also type ("" none)
  enum class Kind { Count, Switch, Recompute, CpComm, Stage } kind;
};

constexpr KeyInfo kKeys[] = {
    {PlanKey::Tensor, "tensor", "tp", KeyInfo::Kind::Count},
    {PlanKey::Pipeline, "pipeline", "pp", KeyInfo::Kind::Count},
    {PlanKey::Data, "data", "dp", KeyInfo::Kind::Count},
    {PlanKey::Context, "context", "cp", KeyInfo::Kind::Count},
    {PlanKey::Expert, "expert", "ep", KeyInfo::Kind::Count},
    {PlanKey::MicroBatch, "micro_batch_size", "mbs", KeyInfo::Kind::Count},
    {PlanKey::VirtualStages, "virtual_stages", "vp", KeyInfo::Kind::Count},
    {PlanKey::Recompute, "recompute", "", KeyInfo::Kind::Recompute},
    {PlanKey::ZeroStage, "zero_stage", "zero", KeyInfo::Kind::Stage},
    {PlanKey::TpCommOverlap, "tp_comm_overlap", "tpo", KeyInfo::Kind::Switch},
    {PlanKey::CpCommType, "cp_comm_type", "", KeyInfo::Kind::CpComm},
    {PlanKey::ExpertTensor, "expert_tensor", "etp", KeyInfo::Kind::Count},
    {PlanKey::EpOverlap, "overlap_moe_expert_parallel_comm", "ep_overlap", KeyInfo::Kind::Switch},
    {PlanKey::OverlapGradReduce, "overlap_grad_reduce", "ogr", KeyInfo::Kind::Switch},
    {PlanKey::OverlapParamGather, "overlap_param_gather", "opg", KeyInfo::Kind::Switch},
};
static_assert(std::size(kKeys) == kNumPlanKeys);

const KeyInfo& info(PlanKey k) { return kKeys[static_cast<int>(k)]; }

std::string key_list() {
  std::string s;
  for (const KeyInfo& k : kKeys) {
    s += (s.empty() ? "" : ", ") + std::string(k.name);
    if (*k.alias) s += std::string(" (") + k.alias + ")";
  }
  return s;
}

constexpr spec::Recompute kRecomputes[] = {spec::Recompute::None, spec::Recompute::Selective, spec::Recompute::Full};
constexpr spec::CpCommType kCpTypes[] = {spec::CpCommType::P2P, spec::CpCommType::AllGather, spec::CpCommType::A2A,
                                         spec::CpCommType::A2AP2P};

// One value of key k as the user wrote it; `flag` and `key` name it in the message.
int parse_value(const KeyInfo& k, const std::string& text, const std::string& where) {
  auto fail = [&](const std::string& rule) { throw InputError(where + ": '" + text + "' " + rule); };
  switch (k.kind) {
    case KeyInfo::Kind::Switch:
      if (text == "true" || text == "on" || text == "1") return 1;
      if (text == "false" || text == "off" || text == "0") return 0;
      fail("must be true or false");
      break;
    case KeyInfo::Kind::Recompute:
      for (spec::Recompute r : kRecomputes)
        if (text == spec::name_of(r)) return static_cast<int>(r);
      fail("must be none, selective or full");
      break;
    case KeyInfo::Kind::CpComm:
      for (spec::CpCommType c : kCpTypes)
        if (text == spec::name_of(c)) return static_cast<int>(c);
      fail("must be p2p, all_gather, a2a or a2a+p2p");
      break;
    case KeyInfo::Kind::Stage:
    case KeyInfo::Kind::Count: {
      int v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size()) fail("must be a whole number");
      if (k.kind == KeyInfo::Kind::Stage && (v < 0 || v > 3)) fail("must be a ZeRO stage 0-3");
      if (k.kind == KeyInfo::Kind::Count && (v < 1 || v > (1 << 24))) fail("must be a count from 1 to 16777216");
      return v;
    }
  }
  return 0;
}

const KeyInfo& find_key(const std::string& name, const std::string& flag, const std::string& arg) {
  for (const KeyInfo& k : kKeys)
    if (name == k.name || (*k.alias && name == k.alias)) return k;
  throw InputError(flag + " " + arg + ": unknown key '" + name + "' (keys: " + key_list() + ")");
}

// The key an item names ("tp=8" -> Tensor), or nullopt for an unknown one.
std::optional<PlanKey> key_of_item(const std::string& item) {
  const std::string name = item.substr(0, item.find('='));
  for (const KeyInfo& k : kKeys)
    if (name == k.name || (*k.alias && name == k.alias)) return k.key;
  return std::nullopt;
}

// "K=V1,V2" (or "K" where a bare switch is allowed) into the key and its values.
std::pair<PlanKey, std::vector<int>> parse_item(const std::string& flag, const std::string& arg, bool bare_switch) {
  const size_t eq = arg.find('=');
  const std::string name = arg.substr(0, eq);
  const KeyInfo& k = find_key(name, flag, arg);
  const std::string where = flag + " " + arg;
  if (eq == std::string::npos) {
    if (bare_switch && k.kind == KeyInfo::Kind::Switch) return {k.key, {1}};
    throw InputError(where + ": needs KEY=VALUE" + std::string(bare_switch ? " (a bare key only for a switch)" : ""));
  }
  std::vector<int> values;
  std::stringstream in(arg.substr(eq + 1));
  std::string item;
  while (std::getline(in, item, ',')) {
    const int v = parse_value(k, item, where);
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  if (values.empty()) throw InputError(where + ": no value after '='");
  std::sort(values.begin(), values.end());
  return {k.key, values};
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string values_text(PlanKey k, const std::vector<int>& v) {
  // Appended piece by piece: GCC 12's -Wstringop-overflow misfires on `"," + std::string` here (PR105329).
  std::string s = v.size() == 1 ? "" : "{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ',';
    s += value_text(k, v[i]);
  }
  if (v.size() != 1) s += '}';
  return s;
}

void allow_only(Constraints& c, PlanKey k, std::vector<int> v) { c.allowed[static_cast<int>(k)] = std::move(v); }

}  // namespace

const char* key_name(PlanKey k) { return info(k).name; }

int value_of(const Plan& p, PlanKey k) {
  switch (k) {
    case PlanKey::Tensor: return p.tensor;
    case PlanKey::Pipeline: return p.pipeline;
    case PlanKey::Data: return p.data;
    case PlanKey::Context: return p.context;
    case PlanKey::Expert: return p.expert;
    case PlanKey::MicroBatch: return p.micro_batch_size;
    case PlanKey::VirtualStages: return p.virtual_stages;
    case PlanKey::Recompute: return static_cast<int>(p.recompute);
    case PlanKey::ZeroStage: return p.zero_stage > 0 ? p.zero_stage : (p.distributed_optimizer ? 1 : 0);
    case PlanKey::TpCommOverlap: return p.tp_comm_overlap;
    case PlanKey::CpCommType: return static_cast<int>(p.cp_comm_type);
    case PlanKey::ExpertTensor: return p.expert_tensor > 0 ? p.expert_tensor : p.tensor;
    case PlanKey::EpOverlap: return p.ep_overlap;
    case PlanKey::OverlapGradReduce: return p.overlap_grad_reduce;
    case PlanKey::OverlapParamGather: return p.overlap_param_gather;
    case PlanKey::kCount: break;
  }
  return 0;
}

std::string value_text(PlanKey k, int v) {
  switch (info(k).kind) {
    case KeyInfo::Kind::Switch: return v ? "true" : "false";
    case KeyInfo::Kind::Recompute: return spec::name_of(static_cast<spec::Recompute>(v));
    case KeyInfo::Kind::CpComm: return spec::name_of(static_cast<spec::CpCommType>(v));
    case KeyInfo::Kind::Stage:
    case KeyInfo::Kind::Count: break;
  }
  return std::to_string(v);
}

bool Constraints::allows(PlanKey k, int v) const {
  const int i = static_cast<int>(k);
  if (allowed[i] && !contains(*allowed[i], v)) return false;
  return !contains(excluded[i], v);
}

std::optional<PlanKey> Constraints::refuses(const Plan& p) const {
  for (const KeyInfo& k : kKeys)
    if (!allows(k.key, value_of(p, k.key))) return k.key;
  return std::nullopt;
}

bool Constraints::empty() const {
  for (int i = 0; i < kNumPlanKeys; ++i)
    if (allowed[i] || !excluded[i].empty()) return false;
  return true;
}

std::string Constraints::describe() const {
  std::string s;
  for (const KeyInfo& k : kKeys) {
    const int i = static_cast<int>(k.key);
    if (allowed[i]) {
      s += (s.empty() ? "" : "; ") + std::string(k.name) + (allowed[i]->size() == 1 ? "=" : " in ") +
           values_text(k.key, *allowed[i]);
    }
    if (!excluded[i].empty())
      s += (s.empty() ? "not " : "; not ") + std::string(k.name) + "=" + values_text(k.key, excluded[i]);
  }
  return s.empty() ? "none" : s;
}

Constraints parse_constraints(const std::vector<std::string>& fix, const std::vector<std::string>& allow,
                              const std::vector<std::string>& exclude) {
  Constraints c;
  auto add_allowed = [&](const std::string& flag, const std::string& arg) {
    auto [k, values] = parse_item(flag, arg, false);
    if (flag == "--fix" && values.size() != 1) throw InputError("--fix " + arg + ": one value (--allow takes several)");
    auto& slot = c.allowed[static_cast<int>(k)];
    if (slot) throw InputError(flag + " " + arg + ": key " + key_name(k) + " is already fixed or allowed");
    slot = std::move(values);
  };
  for (const std::string& a : fix) add_allowed("--fix", a);
  for (const std::string& a : allow) add_allowed("--allow", a);
  for (const std::string& a : exclude) {
    auto [k, values] = parse_item("--exclude", a, true);
    auto& ex = c.excluded[static_cast<int>(k)];
    for (int v : values)
      if (!contains(ex, v)) ex.push_back(v);
    std::sort(ex.begin(), ex.end());
  }
  for (const KeyInfo& k : kKeys) {
    const int i = static_cast<int>(k.key);
    if (c.allowed[i] && std::all_of(c.allowed[i]->begin(), c.allowed[i]->end(),
                                    [&](int v) { return contains(c.excluded[i], v); })) {
      throw InputError(std::string("--exclude: removes every value --fix/--allow gives ") + k.name);
    }
  }
  return c;
}

FrameworkSpace framework_space(spec::Framework f) {
  FrameworkSpace s;
  s.framework = f;
  const std::vector<int> off{0};
  switch (f) {
    case spec::Framework::MegatronCore:
      s.optimizer_variants.assign(kOptimizerVariantList.begin(), kOptimizerVariantList.end());
      s.recomputes = {spec::Recompute::None, spec::Recompute::Selective, spec::Recompute::Full};
      // Megatron-Core's data parallelism is DDP or the distributed optimizer (ZeRO-1); its FSDP (ZeRO-2/3 sharding)
      // is a separate mode a recipe opts into: searched only when asked.
      allow_only(s.defaults, PlanKey::ZeroStage, {0, 1});
      s.summary = "DDP or the distributed optimizer (ZeRO-1; ZeRO-2/3 as "
                  "Megatron-FSDP only with --allow zero_stage=...), 1F1B or interleaved 1F1B, recompute none / "
                  "selective / full, TE userbuffers TP overlap, CP ring / all-gather / all-to-all, expert tensor "
                  "parallelism and the combined 1F1B EP overlap";
      break;
    case spec::Framework::Torchtitan:
      // DDP (data_parallel_replicate_degree), FSDP2 under a pipeline (parameters kept gathered between forward and
      // backward: ZeRO-1's communication), FSDP2 without one (ZeRO-3); FSDP2 always overlaps on its own streams.
      s.optimizer_variants = {{0, true, false}, {1, true, true}, {3, true, false}};
      s.recomputes = {spec::Recompute::None, spec::Recompute::Selective, spec::Recompute::Full};
      allow_only(s.limits, PlanKey::ZeroStage, {0, 1, 3});
      allow_only(s.limits, PlanKey::TpCommOverlap, off);
      allow_only(s.limits, PlanKey::CpCommType, {static_cast<int>(spec::CpCommType::P2P)});
      allow_only(s.limits, PlanKey::EpOverlap, off);
      allow_only(s.limits, PlanKey::Expert, {1});
      allow_only(s.limits, PlanKey::OverlapGradReduce, {1});
      s.summary = "FSDP2 (ZeRO-3; under a pipeline its parameters stay gathered, ZeRO-1's communication) "
                  "or DDP, TP with sequence parallelism (no userbuffers overlap), PyTorch's 1F1B or interleaved "
                  "pipeline schedules, PyTorch's ring context parallelism (p2p), recompute none / selective (op-level) "
                  "/ full; its Llama 3 model, no experts";
      break;
    case spec::Framework::DeepSpeed:
      s.optimizer_variants = {{3, true, false}};
      s.recomputes = {spec::Recompute::None, spec::Recompute::Full};
      for (PlanKey k : {PlanKey::Tensor, PlanKey::Pipeline, PlanKey::Context, PlanKey::Expert,
                        PlanKey::VirtualStages})
        allow_only(s.limits, k, {1});
      allow_only(s.limits, PlanKey::ZeroStage, {3});
      allow_only(s.limits, PlanKey::TpCommOverlap, off);
      allow_only(s.limits, PlanKey::EpOverlap, off);
      allow_only(s.limits, PlanKey::Recompute,
                 {static_cast<int>(spec::Recompute::None), static_cast<int>(spec::Recompute::Full)});
      s.summary = "ZeRO-3 around a Hugging Face model, data parallelism only, micro-batch size, recompute none "
                  "or full (Hugging Face's gradient checkpointing, one decoder layer per checkpoint)";
      break;
  }
  return s;
}

const char* framework_rule(spec::Framework f, const Plan& p) {
  if (f != spec::Framework::Torchtitan) return nullptr;
  const int stage = value_of(p, PlanKey::ZeroStage);
  if (stage == 1 && p.pipeline == 1) return "torchtitan's FSDP2 is ZeRO-1's communication only under a pipeline";
  if (stage == 3 && p.pipeline > 1) return "torchtitan keeps FSDP2's parameters gathered under a pipeline (ZeRO-1)";
  return nullptr;
}

SearchConstraints merge_constraints(const FrameworkSpace& fs, const Constraints& user) {
  SearchConstraints out;
  out.framework = fs.limits;
  out.user = user;
  for (const KeyInfo& k : kKeys) {
    const int i = static_cast<int>(k.key);
    const auto& asked = user.allowed[i];
    if (asked) {
      for (int v : *asked) {
        if (!fs.limits.allows(k.key, v)) {
          throw InputError(std::string("key ") + k.name + "=" + value_text(k.key, v) + ": framework " +
                           spec::name_of(fs.framework) + " does not run it (it runs " + values_text(k.key,
                           *fs.limits.allowed[i]) + "); plan --framework names another framework");
        }
      }
    } else if (fs.defaults.allowed[i]) {
      out.framework.allowed[i] = fs.defaults.allowed[i];
    }
  }
  return out;
}

ConstraintArgs merge_constraint_args(const ConstraintArgs& file, const ConstraintArgs& flags) {
  std::vector<PlanKey> by_flags;
  for (const auto* list : {&flags.fix, &flags.allow, &flags.exclude}) {
    for (const std::string& item : *list) {
      if (const auto k = key_of_item(item)) by_flags.push_back(*k);
    }
  }
  auto keep = [&](const std::vector<std::string>& from, const std::vector<std::string>& then) {
    std::vector<std::string> out;
    for (const std::string& item : from) {
      const auto k = key_of_item(item);
      if (!k || std::find(by_flags.begin(), by_flags.end(), *k) == by_flags.end()) out.push_back(item);
    }
    out.insert(out.end(), then.begin(), then.end());
    return out;
  };
  return {keep(file.fix, flags.fix), keep(file.allow, flags.allow), keep(file.exclude, flags.exclude)};
}

void cap_tensor_parallel(Constraints& user, int max_tp, int domain_gpus) {
  if (max_tp <= 0) return;
  auto& allowed = user.allowed[static_cast<int>(PlanKey::Tensor)];
  std::vector<int> values;
  if (allowed) {
    for (int v : *allowed) {
      if (v <= max_tp) values.push_back(v);
    }
  } else {
    for (int v = 1; v <= std::min(max_tp, domain_gpus); ++v) {
      if (domain_gpus % v == 0) values.push_back(v);
    }
  }
  if (values.empty()) {
    throw InputError("--max-tp-per-nvlink-domain " + std::to_string(max_tp) + ": leaves no tensor-parallel size " +
                     (allowed ? "that --fix / --allow give" : "that divides the " + std::to_string(domain_gpus) +
                                                                   "-GPU NVLink domain"));
  }
  allowed = values;
}

}  // namespace stepsim::plan
