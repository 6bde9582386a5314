#pragma once
// NCCL's topology dump (thesis §4.2.1): the block between "=== System : maxBw X totalBw Y ===" and the
// closing "=====" line, printed at init with NCCL_DEBUG_SUBSYS=GRAPH. Roots are CPU sockets; "+ PCI[24.0] -
// GPU/81000 (0)" is a link from the enclosing node, its indentation says which node encloses it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::profile {

struct TopoNode {
  std::string type;  // CPU, GPU, NIC, NET, NVS, PCI (switch)
  std::string id;    // as printed after the slash: "81000", "0-1000", "1"
  int local_rank = -1;  // GPUs only: "(0)" after the id
};

struct TopoLink {
  int from = -1, to = -1;  // indices into TopologyBlock::nodes
  std::string type;        // PCI, NVL, SYS, NET, C2C, LOC, ...
  double bw_GBps = 0;
};

struct TopologyBlock {
  std::string host;
  int line = 0;  // line of the "=== System" header
  double max_bw_GBps = 0, total_bw_GBps = 0;
  std::vector<TopoNode> nodes;
  std::vector<TopoLink> links;
  int find(std::string_view type, std::string_view id) const;  // node index or -1
  // GPU bus id → local rank, for every GPU line that carries "(rank)".
  std::optional<int> local_rank_of(std::string_view bus_id) const;
  // Slowest link type/bandwidth on the way between two GPUs of this node: a direct NVL link, else the
  // PCI/SYS links through the CPUs (min over the path's links). nullopt when a GPU is missing.
  struct Bottleneck {
    std::string link;
    double bw_GBps = 0;
  };
  std::optional<Bottleneck> gpu_pair_bottleneck(std::string_view bus_a, std::string_view bus_b) const;
  std::optional<Bottleneck> net_bottleneck() const;  // the fastest NET link of the node (what leaves it)
};

// Incremental parser fed one NCCL message at a time (the text after "NCCL INFO "), so blocks of several
// processes interleaved in one file stay apart: callers keep one TopologyParser per process.
class TopologyParser {
 public:
  // True when the message belonged to a block (header, body or footer).
  bool feed(std::string_view msg, int line, const std::string& host);
  bool in_block() const { return open_; }
  std::vector<TopologyBlock> blocks;
  int garbled = 0;  // body lines inside a block that did not parse

 private:
  bool open_ = false;
  std::vector<std::pair<size_t, int>> stack_;  // (indent, node index) of the enclosing nodes
};

}  // namespace stepsim::profile
