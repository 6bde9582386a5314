#include "stepsim/ingest/profile/volume_model.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "stepsim/input/hf_config.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"

namespace stepsim::profile {
namespace {

// Large enough for any model (10^13 parameters), small enough that products stay exact in a double.
constexpr int64_t kMaxValue = int64_t{1} << 44;

int64_t* field(ModelShape& m, const std::string& key) {
  if (key == "layers") return &m.layers;
  if (key == "hidden") return &m.hidden;
  if (key == "seq") return &m.seq;
  if (key == "vocab") return &m.vocab;
  if (key == "mbs") return &m.micro_batch;
  if (key == "microbatches") return &m.micro_batches;
  if (key == "iterations") return &m.iterations;
  if (key == "bytes") return &m.dtype_bytes;
  if (key == "params") return &m.params;
  if (key == "moe_layers") return &m.moe_layers;
  if (key == "topk") return &m.topk;
  return nullptr;
}

constexpr const char* kKeys = "layers, hidden, seq, vocab, mbs, microbatches, iterations, bytes, params, moe_layers, topk";

}  // namespace

ModelShape parse_model_options(const std::string& text, ModelShape m) {
  std::istringstream in(text);
  std::string kv;
  while (std::getline(in, kv, ',')) {
    const size_t eq = kv.find('=');
    const std::string key = kv.substr(0, eq);
    int64_t* f = field(m, key);
    if (!f) throw InputError("--model: unknown key '" + key + "' (one of " + kKeys + ")");
    const std::string val = eq == std::string::npos ? "" : kv.substr(eq + 1);
    int64_t v = 0;
    auto r = std::from_chars(val.data(), val.data() + val.size(), v);
    // moe_layers may be 0 (a dense model); every other quantity of the formulas is a positive count.
    const int64_t lo = key == "moe_layers" ? 0 : 1;
    if (val.empty() || r.ec != std::errc() || r.ptr != val.data() + val.size() || v < lo || v > kMaxValue)
      throw InputError("--model: '" + kv + "': " + key + " must be an integer in [" + std::to_string(lo) + ", 2^44]");
    *f = v;
  }
  return m;
}

ModelShape model_from_hf_config(const std::string& path) {
  // A regular file of at most kMaxInputFileBytes, like every job input (a device such as /dev/zero is refused before
  // it is read).
  const YAML::Node n = spec::hf_config_to_model_node(spec::read_text_file(path, "the model config (--model-config)"), path);
  ModelShape m;
  m.layers = n["num_layers"].as<int64_t>();
  m.hidden = n["hidden_size"].as<int64_t>();
  m.vocab = n["vocab_size"].as<int64_t>();
  m.seq = n["seq_length"].as<int64_t>();
  if (n["moe"]) {
    // The job schema's rule: dense below first_k_dense, then MoE every layer_freq-th layer.
    const int64_t freq = std::max<int64_t>(n["moe"]["layer_freq"].as<int64_t>(), 1);
    const int64_t first = n["moe"]["first_k_dense"].as<int64_t>();
    for (int64_t l = first; l < m.layers; ++l) m.moe_layers += (l - first) % freq == 0;
    m.topk = n["moe"]["topk"].as<int64_t>();
  }
  return m;
}

void check_model(const ModelShape& m) {
  for (const auto& [key, v] : {std::pair{"layers", m.layers}, {"hidden", m.hidden}, {"seq", m.seq}})
    if (v <= 0) throw InputError(std::string("--model: ") + key + " is required by the §2.4 formulas (a positive integer)");
  if (m.vocab <= 0 && m.params <= 0)
    throw InputError("--model: vocab is required by eq. 2.4 unless params is given (a positive integer)");
  if (m.moe_layers > m.layers)
    throw InputError("--model: moe_layers=" + std::to_string(m.moe_layers) + " must not exceed layers=" + std::to_string(m.layers));
}

double model_params(const ModelShape& m) {
  if (m.params > 0) return static_cast<double>(m.params);
  const double l = static_cast<double>(m.layers), h = static_cast<double>(m.hidden);
  return 12 * l * h * h + l * h + static_cast<double>(m.vocab + m.seq);
}

std::map<std::string, double> model_volumes(const ModelShape& m, const ParallelismSizes& p, int rank) {
  const double t = std::max(p.tp, 1), pp = std::max(p.pp, 1), d = std::max(p.dp, 1), e = std::max(p.ep, 1),
               c = std::max(p.cp, 1);
  const double beta = static_cast<double>(m.dtype_bytes), b = static_cast<double>(m.micro_batch),
               mb = static_cast<double>(m.micro_batches), it = static_cast<double>(m.iterations),
               h = static_cast<double>(m.hidden), L = static_cast<double>(m.layers), moe = static_cast<double>(m.moe_layers);
  const double s = static_cast<double>(m.seq) / c;  // each CP rank holds its share of the sequence
  const double stage_layers = L / pp;
  std::map<std::string, double> v;
  if (d > 1) {
    // eq. 2.6; with EP the expert weights leave the data-parallel reduction (thesis §5.3.5: non-MoE share).
    const double P = model_params(m) * (e > 1 && moe > 0 ? (L - moe) / L : 1.0);
    v["DP"] = 2 * (d - 1) / d * P / (t * pp) * beta * it;
  }
  if (t > 1) v["TP"] = stage_layers * 8 * b * s * h * (t - 1) / t * beta * mb * it;  // eq. 2.7 × m
  if (pp > 1) {
    // eq. 2.9 per direction and boundary; forward activations and backward gradients cross each boundary.
    const int stage = (rank / static_cast<int>(t * c * d)) % static_cast<int>(pp);
    const double boundaries = stage == 0 || stage == static_cast<int>(pp) - 1 ? 1 : 2;
    v["PP"] = boundaries * 2 * mb * b * s * h / t * beta * it;
  }
  if (e > 1 && moe > 0) {
    // eq. 2.11 over the EP group divided by its n_EP ranks: B·S = n_EP·b·m·s tokens per step.
    v["EP"] = 4 * b * mb * s * static_cast<double>(m.topk) * h * (1 - 1 / e) * beta * (moe / pp) * it;
  }
  if (c > 1) {
    // §2.4.4: per layer K and V (b·s·h/t each, whole sequence) all-gathered forward and reduce-scattered
    // backward; a ring moves (c−1)/c of each per rank.
    v["CP"] = stage_layers * 4 * b * static_cast<double>(m.seq) * h / t * (c - 1) / c * beta * mb * it;
  }
  return v;
}

}  // namespace stepsim::profile
