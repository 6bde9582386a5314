#include "stepsim/cost/collective/collective_algorithm.hpp"

#include <algorithm>
#include <cctype>

#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {

const char* name_of(Algorithm a) {
  switch (a) {
    case Algorithm::Auto: return "auto";
    case Algorithm::Ring: return "ring";
    case Algorithm::Tree: return "tree";
    case Algorithm::Nvls: return "nvls";
    case Algorithm::NvlsTree: return "nvls_tree";
    case Algorithm::Pat: return "pat";
    case Algorithm::Direct: return "direct";
    case Algorithm::CollNetDirect: return "collnet_direct";
    case Algorithm::CollNetChain: return "collnet_chain";
  }
  return "?";
}

const char* name_of(Protocol p) {
  switch (p) {
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::Simple: return "Simple";
  }
  return "?";
}

std::optional<Algorithm> parse_algorithm(const std::string& s) {
  std::string k = s;
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return c == '-' ? '_' : std::tolower(c); });
  for (Algorithm a : {Algorithm::Auto, Algorithm::Ring, Algorithm::Tree, Algorithm::Nvls, Algorithm::NvlsTree,
                      Algorithm::Pat, Algorithm::CollNetDirect, Algorithm::CollNetChain}) {
    if (k == name_of(a)) return a;
  }
  return std::nullopt;
}

std::optional<Protocol> parse_protocol(std::string_view s) {
  std::string k;
  for (char c : s) k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (k == "ll") return Protocol::LL;
  if (k == "ll128") return Protocol::LL128;
  if (k == "simple") return Protocol::Simple;
  return std::nullopt;
}

Algorithm algorithm_option(const std::string& s) {
  const auto a = parse_algorithm(s);
  if (!a) throw InputError("--algo " + s + ": one of auto, ring, tree, nvls, nvls_tree, pat, collnet_direct, collnet_chain");
  return *a;
}

std::optional<Protocol> protocol_option(const std::string& s) {
  if (s == "auto") return std::nullopt;
  const auto p = parse_protocol(s);
  if (!p) throw InputError("--proto " + s + ": one of auto, LL, LL128, Simple");
  return p;
}

void require_simple_protocol(const std::optional<Protocol>& proto, const char* model) {
  if (proto && *proto != Protocol::Simple) {
    throw InputError(std::string("--proto ") + name_of(*proto) + ": the " + model +
                     " model times NCCL's Simple protocol only; --model nccl chooses among LL, LL128 and Simple");
  }
}

}  // namespace stepsim::cost
