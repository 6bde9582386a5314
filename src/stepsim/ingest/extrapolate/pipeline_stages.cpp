#include "stepsim/ingest/extrapolate/pipeline_stages.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "stepsim/io/input_error.hpp"

namespace stepsim::extrapolate {

namespace {

void need_layers(int stages, int layers) {
  if (layers < stages) {
    throw InputError("parallelism.pipeline: " + std::to_string(stages) + " stages, but the trace has only " +
                     std::to_string(layers) + " layer(s) (linear, convolution or embedding ops in the forward pass) to assign");
  }
}

int to_int(const std::string& s, const std::string& spec) {
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw InputError("--stages " + spec + ": '" + s + "' is not a layer index");
  return std::stoi(s);
}

}  // namespace

std::vector<std::pair<int, int>> parse_stages(const std::string& spec, int stages, int layers) {
  need_layers(stages, layers);
  std::vector<std::pair<int, int>> out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t dash = item.find('-');
    const int a = to_int(item.substr(0, dash), spec);
    const int b = dash == std::string::npos ? a : to_int(item.substr(dash + 1), spec);
    out.emplace_back(a, b);
  }
  if (static_cast<int>(out.size()) != stages)
    throw InputError("--stages " + spec + ": " + std::to_string(out.size()) + " range(s), but parallelism.pipeline is " +
                     std::to_string(stages));
  int next = 0;
  for (const auto& [a, b] : out) {
    if (a != next || b < a)
      throw InputError("--stages " + spec + ": ranges must be contiguous from layer 0, each FIRST-LAST with FIRST <= LAST");
    next = b + 1;
  }
  if (next != layers)
    throw InputError("--stages " + spec + ": the trace has layers 0-" + std::to_string(layers - 1) + "; the ranges end at " +
                     std::to_string(next - 1));
  return out;
}

std::vector<std::pair<int, int>> balance_stages(const std::vector<int64_t>& layer_ns, int stages) {
  const int n = static_cast<int>(layer_ns.size());
  need_layers(stages, n);
  std::vector<int64_t> prefix(static_cast<size_t>(n) + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layer_ns[i];
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  // best[k][i]: the smallest slowest stage splitting layers [0, i) into k stages; cut[k][i] its last cut.
  std::vector<std::vector<int64_t>> best(stages + 1, std::vector<int64_t>(n + 1, kInf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= stages; ++k) {
    for (int i = k; i <= n; ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == kInf) continue;
        const int64_t v = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (v < best[k][i]) best[k][i] = v, cut[k][i] = j;  // strict: the earliest cut wins ties
      }
    }
  }
  std::vector<std::pair<int, int>> out(static_cast<size_t>(stages));
  for (int k = stages, i = n; k >= 1; --k) {
    const int j = cut[k][i];
    out[static_cast<size_t>(k - 1)] = {j, i - 1};
    i = j;
  }
  return out;
}

}  // namespace stepsim::extrapolate
