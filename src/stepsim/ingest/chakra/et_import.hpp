#pragma once
// Reading Chakra execution traces as trace-driven programs (`stepsim trace import` of .et files or Chakra JSON,
// docs/CHAKRA.md): one TracedRank per file, with the dependencies the file gives, ready for
// `stepsim simulate JOB --workload DIR`.
//
// What becomes an op: GPU compute nodes (COMP_NODE with is_cpu_op false) keep their time (stepsim's `duration_ns`
// attribute, else duration_micros); COMM_COLL_NODEs become collectives of `comm_type` and `comm_size` over the group
// `pg_name` names in the communicator-group file (none: the whole world, as ASTRA-sim runs it: every rank it
// simulates), or replay their measured time when the file gives no size; COMM_SEND/RECV_NODEs become point-to-point
// transfers. Nodes stepsim wrote for one op (the same `stepsim_op`) become that one op again. CPU nodes (is_cpu_op
// true: host-side operators and the host side of collectives), memory and metadata nodes are not GPU work: they are
// skipped and counted, and a dependency through them is kept by linking their GPU ancestors to their GPU
// descendants. Ops come out in the file's order where its dependencies allow (a node listed before one it depends on
// moves after it); a cycle is an error.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/ingest/chakra/comm_groups.hpp"
#include "stepsim/ingest/chakra/et_node.hpp"
#include "stepsim/io/progress.hpp"
#include "stepsim/ingest/trace/traced_rank.hpp"

namespace stepsim::chakra {

struct ImportedRank {
  trace::TracedRank rank;
  // A collective without a pg_name ran over the whole world and the file gives no world_size: the world is the rank
  // files given to the import (rank.world_size is set to their count, so a job of another size is refused).
  bool world_from_files = false;
  int64_t nodes = 0;               // in the file
  int64_t cpu_nodes_skipped = 0;   // is_cpu_op nodes
  int64_t other_nodes_skipped = 0; // memory, metadata and invalid nodes
  int64_t compute_ops = 0, comm_ops = 0;
  double compute_s = 0;            // sum of the compute ops' durations
};

// The rank of `<name>.<rank>.et` / `<name>.<rank>.json[.gz]`; nullopt when the name has none.
std::optional<int> rank_from_file_name(const std::string& path);

// One graph as the program of `rank` (the graph's own `rank` metadata wins when present). `groups` may be null when
// no node names a group. `files_world`: how many rank files the import reads, the world of a collective without a
// pg_name when the graph has no world_size metadata (0: unknown; one file cannot tell a world, so an all-gather
// over it is refused). InputError naming the file, the node and the rule.
ImportedRank import_graph(const EtGraph& g, const std::string& path, std::optional<int> rank, const CommGroups* groups,
                          int files_world = 0);

// Chakra's JSON form ({"workload_graph": [{"Id", "Name", "NodeType", "data_deps", "runtime", "is_cpu_op", ...}]}),
// plain or gzip; true when the text looks like one.
bool is_chakra_json(const std::string& text);
EtGraph parse_chakra_json(const std::string& text, const std::string& path);

// A file by its content: a .et protobuf stream, or Chakra JSON. `files_world` as for import_graph.
ImportedRank import_file(const std::string& path, const CommGroups* groups, int files_world = 0);

// Whether `trace import` should read a file as Chakra: a .et name, or JSON (plain or gzip) whose first 64 KiB hold
// a workload_graph key.
bool looks_like_chakra(const std::string& path);

struct ChakraImport {
  std::vector<ImportedRank> ranks;  // by rank
  std::string comm_groups;          // the group file read, "" when none
  std::vector<std::string> notes;   // what the import assumed (the world of collectives without a pg_name)
};
// Every file (each one rank); `comm_groups_path` "" = comm_group.json beside the first file when it exists.
// `progress` hears "reading Chakra traces" per file.
// InputError when two files hold the same rank, or when the rank files are taken as the world and their ranks are
// not 0 .. count - 1.
ChakraImport import_chakra(const std::vector<std::string>& paths, const std::string& comm_groups_path,
                           const ProgressFn& progress = {});
// DIR/rank<r>.json (stepsim-trace-program with `after`) and DIR/summary.json (with the notes).
void write_chakra_import(const ChakraImport& c, const std::string& dir);

}  // namespace stepsim::chakra
