#pragma once
// NCCL's algorithm and protocol vocabulary (NCCL_ALGO_* / NCCL_PROTO_*), shared by every collective model so
// that `stepsim comm` can print what each model assumed.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stepsim::cost {

// Direct: all-to-all / send-recv pairs. CollNet*: in-network reduction (InfiniBand SHARP), cluster.network.sharp.
enum class Algorithm { Auto, Ring, Tree, Nvls, NvlsTree, Pat, Direct, CollNetDirect, CollNetChain };
enum class Protocol { LL, LL128, Simple };

const char* name_of(Algorithm a);
const char* name_of(Protocol p);
// Parses "auto", "ring", "tree", "nvls", "nvls_tree", "pat", "collnet_direct", "collnet_chain" (case-insensitive,
// - for _); nullopt otherwise.
std::optional<Algorithm> parse_algorithm(const std::string& s);
// Parses "LL", "LL128", "Simple" (any case, as NCCL_PROTO and kernel records write them); nullopt otherwise.
std::optional<Protocol> parse_protocol(std::string_view s);
// The --algo and --proto options, as NCCL_ALGO / NCCL_PROTO take them ("auto" = the model's choice, nullopt for the
// protocol); InputError naming the flag and the choices otherwise.
Algorithm algorithm_option(const std::string& s);
std::optional<Protocol> protocol_option(const std::string& s);
// The error of a model that times NCCL's Simple protocol only, for a forced protocol other than Simple (nothing
// when `proto` is empty or Simple).
void require_simple_protocol(const std::optional<Protocol>& proto, const char* model);

// What a model predicts for one collective: its time and the algorithm/protocol/channels it assumed.
struct CollectiveEstimate {
  int64_t ns = 0;
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int channels = 0;  // 0 = the model does not resolve channels
};

}  // namespace stepsim::cost
