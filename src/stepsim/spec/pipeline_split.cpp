// Uneven pipeline splits. Megatron-Core places layers per model chunk k = chunk * pipeline + stage, in layer order;
// the embedding sits on the first model chunk and the output layer + loss on the last, which is why the automatic
// rule makes those two chunks lighter.
#include "stepsim/spec/pipeline_split.hpp"

#include <numeric>

#include "stepsim/spec/input_error.hpp"

namespace stepsim::spec {
namespace {

// As even as possible; the lighter chunks go to the ends first (0, n-1, 1, n-2, ...), where the embedding and the
// output layer already add work.
std::vector<int> as_even(int layers, int n) {
  std::vector<int> out(static_cast<size_t>(n), layers / n + 1);
  int light = n - layers % n;
  if (layers % n == 0) light = n;  // all equal
  for (int i = 0; i < light; ++i) {
    const int pos = (i % 2 == 0) ? i / 2 : n - 1 - i / 2;
    out[static_cast<size_t>(pos)] = layers / n;
  }
  return out;
}

}  // namespace

std::string describe_layers(const std::vector<int>& layers) {
  std::string out;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j < layers.size() && layers[j] == layers[i]) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(layers[i]);
    if (j - i > 1) out += " x " + std::to_string(static_cast<int64_t>(j - i));
    i = j;
  }
  return out;
}

PipelineSplit make_pipeline_split(const PipelineSplitRequest& r, const std::string& source) {
  auto fail = [&](const std::string& key, const std::string& rule) {
    throw InputError(source + ": key parallelism." + key + ": " + rule);
  };
  const int p = r.pipeline, v = r.virtual_stages, n = p * v, L = r.num_layers;
  const bool first_last = r.first_stage_layers > 0 || r.last_stage_layers > 0;
  const bool account = r.account_for_embedding || r.account_for_loss;
  if (!r.pipeline_layers.empty()) {
    if (first_last || account) {
      fail("pipeline_layers", "give the explicit list or first/last_stage_layers or account_for_*, not several");
    }
    if (static_cast<int>(r.pipeline_layers.size()) != n) {
      fail("pipeline_layers", "has " + std::to_string(static_cast<int64_t>(r.pipeline_layers.size())) +
                                  " entries, needs pipeline x virtual_stages = " + std::to_string(n));
    }
    const int64_t sum = std::accumulate(r.pipeline_layers.begin(), r.pipeline_layers.end(), int64_t{0});
    if (sum != L) fail("pipeline_layers", "sums to " + std::to_string(sum) + ", must equal model.num_layers " + std::to_string(L));
    return {r.pipeline_layers, "given (parallelism.pipeline_layers)"};
  }
  if (first_last) {
    if (account) fail("first_stage_layers", "cannot be combined with account_for_embedding/loss_in_pipeline_split");
    // Megatron-Core (--decoder-first/last-pipeline-num-layers): the first/last stage holds that many layers, split
    // evenly over its virtual chunks; the other stages share the rest evenly.
    const bool f = r.first_stage_layers > 0, l = r.last_stage_layers > 0;
    if (f && r.first_stage_layers % v) fail("first_stage_layers", std::to_string(r.first_stage_layers) + " is not divisible by virtual_stages " + std::to_string(v));
    if (l && r.last_stage_layers % v) fail("last_stage_layers", std::to_string(r.last_stage_layers) + " is not divisible by virtual_stages " + std::to_string(v));
    const int middle = p - (f ? 1 : 0) - (l ? 1 : 0);
    if (middle < 0) fail("last_stage_layers", "first and last stage layers need pipeline >= 2");
    const int rest = L - r.first_stage_layers - r.last_stage_layers;
    if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && rest % (middle * v) != 0)) {
      fail(f ? "first_stage_layers" : "last_stage_layers",
           "the " + std::to_string(rest) + " remaining layers must split evenly over the other " + std::to_string(middle) + " stage(s) x " +
               std::to_string(v) + " virtual stages");
    }
    std::vector<int> out(static_cast<size_t>(n), middle > 0 ? rest / (middle * v) : 0);
    for (int c = 0; c < v; ++c) {
      if (f) out[static_cast<size_t>(c * p)] = r.first_stage_layers / v;
      if (l) out[static_cast<size_t>(c * p + p - 1)] = r.last_stage_layers / v;
    }
    return {out, "first/last stage layers given"};
  }
  if (account) {
    const int extra = (r.account_for_embedding ? 1 : 0) + (r.account_for_loss ? 1 : 0);
    if ((L + extra) % n != 0) {
      fail(r.account_for_embedding ? "account_for_embedding_in_pipeline_split" : "account_for_loss_in_pipeline_split",
           "model.num_layers " + std::to_string(L) + " + " + std::to_string(extra) + " is not divisible by pipeline x virtual_stages " + std::to_string(n));
    }
    std::vector<int> out(static_cast<size_t>(n), (L + extra) / n);
    if (r.account_for_embedding) --out.front();
    if (r.account_for_loss) --out.back();
    return {out, "embedding and/or loss counted as a layer (given)"};
  }
  if (L % n == 0) return {{}, "even"};
  // Multi-token prediction runs a whole transformer layer and a second pass through the output layer on the last
  // chunk: counted as a layer there, beside the embedding and the loss, when that makes the split even (DeepSeek-V3's
  // 61 layers on 8 x 4 chunks -> 1, 2 x 30, 0 + MTP: Megatron-Bridge's layout "Et|(tt|)*30mL").
  const int mtp = r.mtp_layers;
  if (mtp > 0 && (L + 2 + mtp) % n == 0) {
    std::vector<int> out(static_cast<size_t>(n), (L + 2 + mtp) / n);
    --out.front();
    out.back() -= 1 + mtp;
    if (out.front() >= 0 && out.back() >= 0) {
      return {out, "automatic: embedding, loss and each multi-token prediction depth counted as a layer"};
    }
  }
  if ((L + 2) % n == 0 && (L + 2) / n >= 1) {
    std::vector<int> out(static_cast<size_t>(n), (L + 2) / n);
    --out.front();
    --out.back();
    if (out.front() >= 0 && out.back() >= 0) return {out, "automatic: embedding and loss counted as a layer each"};
  }
  if (L < n) fail("pipeline", "model.num_layers " + std::to_string(L) + " is less than pipeline x virtual_stages " + std::to_string(n));
  return {as_even(L, n), "automatic: as even as possible, lighter chunks first and last"};
}

}  // namespace stepsim::spec
