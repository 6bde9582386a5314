// Uneven pipeline splits. Megatron-Core places layers per model chunk k = chunk * pipeline + stage, in layer order;
// the embedding sits on the first model chunk and the output layer + loss on the last, which is why the automatic
// rule makes those two chunks lighter.
#include "stepsim/job/pipeline_split.hpp"

#include <cctype>
#include <numeric>

#include <functional>

#include "stepsim/io/input_error.hpp"

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

// Bounds on what a layout string may expand to: no model has more chunks or layers than this.
constexpr size_t kMaxLayoutText = 4096;
constexpr size_t kMaxLayoutExpanded = 1 << 20;

// One pass of `(group)*n` (innermost groups first; Megatron's groups hold no parentheses) or `x*n` unrolling.
std::string unroll(const std::string& text, bool groups, const std::function<void(const std::string&)>& fail) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t body_begin = i, body_end = i + 1, after = i + 1;
    if (groups) {
      if (text[i] != '(') {
        out += text[i++];
        continue;
      }
      const size_t close = text.find(')', i + 1);
      if (close == std::string::npos) fail("'(' without ')'");
      if (text.find('(', i + 1) < close) fail("nested parentheses");
      body_begin = i + 1;
      body_end = close;
      after = close + 1;
    }
    if (after >= text.size() || text[after] != '*') {
      if (groups) fail("'(...)' must be followed by '*n'");
      out += text[i++];
      continue;
    }
    size_t digits_end = after + 1;
    while (digits_end < text.size() && std::isdigit(static_cast<unsigned char>(text[digits_end]))) ++digits_end;
    if (digits_end == after + 1) fail("'*' must be followed by a count");
    if (digits_end - after - 1 > 7) fail("a repeat count above 9999999");
    const size_t n = std::stoul(text.substr(after + 1, digits_end - after - 1));
    const std::string body = text.substr(body_begin, body_end - body_begin);
    if (body.empty()) fail("'()' repeats nothing");
    if (out.size() + body.size() * n > kMaxLayoutExpanded) fail("expands to more than 1048576 characters");
    for (size_t k = 0; k < n; ++k) out += body;
    i = digits_end;
  }
  return out;
}

}  // namespace

PipelineLayout parse_pipeline_layout(const std::string& layout, const std::string& error_prefix) {
  auto fail = [&](const std::string& rule) { throw InputError(error_prefix + rule); };
  if (layout.size() > kMaxLayoutText) fail("longer than " + std::to_string(kMaxLayoutText) + " characters");
  std::string text;
  for (char c : layout) {
    if (c != ',' && !std::isspace(static_cast<unsigned char>(c))) text += c;
  }
  text = unroll(unroll(text, true, fail), false, fail);
  std::vector<int> layers(1, 0);
  int embeddings = 0, losses = 0, mtp = 0;
  bool mtp_seen = false, loss_seen = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (loss_seen) fail("the loss 'L' must come last, at the end of the last chunk");
    switch (c) {
      case '|': layers.push_back(0); break;
      case 'E':
        if (i != 0) fail("the embedding 'E' must come first");
        ++embeddings;
        break;
      case 't':
        if (mtp_seen) fail("transformer layers 't' must come before the multi-token prediction layers 'm'");
        ++layers.back();
        break;
      case 'm':
        mtp_seen = true;
        ++mtp;
        break;
      case 'L': loss_seen = true; ++losses; break;
      default: fail(std::string("'") + c + "' is not one of E, t, m, L, |, *, (, ), digits");
    }
  }
  if (embeddings != 1) fail("needs the embedding 'E' once, first");
  if (losses != 1) fail("needs the loss 'L' once, last");
  // The workload builder runs multi-token prediction on the last model chunk, with the loss.
  const size_t last = text.rfind('|');
  if (mtp_seen && text.find('m') < (last == std::string::npos ? 0 : last)) {
    fail("multi-token prediction layers 'm' in a chunk of their own, before the loss's, are not modelled; put them "
         "with 'L' in the last chunk");
  }
  return {layers, mtp};
}

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
  if (!r.layout.empty()) {
    if (!r.pipeline_layers.empty() || first_last || account) {
      fail("pipeline_layout", "give the layout or pipeline_layers or first/last_stage_layers or account_for_*, not several");
    }
    const PipelineLayout parsed = parse_pipeline_layout(r.layout, source + ": key parallelism.pipeline_layout: ");
    const std::vector<int>& layers = parsed.layers;
    if (parsed.mtp_layers != r.mtp_layers) {
      fail("pipeline_layout", "holds " + std::to_string(parsed.mtp_layers) + " multi-token prediction layers 'm', "
           "model.mtp_layers is " + std::to_string(r.mtp_layers));
    }
    if (static_cast<int64_t>(layers.size()) != int64_t{n}) {
      fail("pipeline_layout", "has " + std::to_string(static_cast<int64_t>(layers.size())) + " model chunks ('|'-separated), "
           "needs pipeline x virtual_stages = " + std::to_string(n) + " (Megatron derives the virtual stages from the "
           "layout: set parallelism.virtual_stages to the chunks / pipeline)");
    }
    const int64_t sum = std::accumulate(layers.begin(), layers.end(), int64_t{0});
    if (sum != L) fail("pipeline_layout", "holds " + std::to_string(sum) + " transformer layers 't', model.num_layers is " + std::to_string(L));
    return {layers, "given (parallelism.pipeline_layout)"};
  }
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
