#pragma once
// Writing a workload's per-rank programs as Chakra execution traces that ASTRA-sim runs (`stepsim trace export-chakra`,
// docs/CHAKRA.md): DIR/<name>.<rank>.et for every rank and DIR/comm_group.json.
//
// Each op becomes one node (a P2P exchange or a context-parallel ring step: one COMM_SEND_NODE / COMM_RECV_NODE per
// transfer). A node's data_deps are the op's previous op on the same stream (a CUDA stream runs in order; Chakra has no
// streams) and the ops its cross-stream waits name. Compute nodes carry the compute model's time (duration_micros,
// rounded, and stepsim's exact `duration_ns`), FLOPs (`num_ops`) and HBM bytes (`tensor_size`); collectives carry
// `comm_type`, `comm_size` (the message size S as nccl-tests counts it) and `pg_name` (the group's id in
// comm_group.json) and no time: the simulator that reads them times them. Sends and receives carry
// `comm_src`/`comm_dst`/`comm_tag`, the tag being the exchange's number between that pair of ranks, which both sides
// count alike. Each attribute has the value kind ASTRA-sim's ETFeederNode reads (int32 for comm_src/dst/tag and
// M/N/K, uint64 for tensor_size, int64 for num_ops/comm_type/comm_size, bool for is_cpu_op, string for pg_name). stepsim's own attributes (`stepsim_op`, `phase`, `category`, `duration_ns`, ...) let `stepsim trace import`
// rebuild the program exactly; other readers ignore them.
#include <cstdint>
#include <string>

#include "stepsim/io/progress.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::chakra {

// The default bound on what one export writes (`--max-gib`): the 8,192-GPU example writes 13 GiB, a million-GPU job
// tens of GiB in hundreds of thousands of files.
constexpr double kDefaultExportMaxGiB = 4.0;

struct ExportOptions {
  std::string dir;
  std::string name = "workload";  // files <name>.<rank>.et
  // Above this the export is refused before any file is written; the size is estimated from one rank of each
  // program (ranks running the same program write files of nearly the same size).
  double max_gib = kDefaultExportMaxGiB;
  ProgressFn progress;  // "writing Chakra traces", ranks done of the world
};

struct ExportSummary {
  int ranks = 0;
  int64_t nodes = 0;        // over every rank
  int64_t bytes = 0;        // of every .et file
  int comm_groups = 0;
  std::string comm_group_file;
};

// The workload's compute ops must be timed (sim::timed_workload). InputError naming the path when DIR cannot be written.
ExportSummary export_chakra(const workload::Workload& w, const ExportOptions& opt);
// The file-name prefix is a name, not a path: letters, digits, '.', '_' and '-', not starting with '.', so that every
// file lands in the output folder (`--name ../../x` would write elsewhere). InputError naming --name otherwise.
void check_export_name(const std::string& name);

// Chakra's collective type for a stepsim collective (SendRecv has none: it is written as a send and a receive).
int chakra_comm_type(workload::CollType c);

}  // namespace stepsim::chakra
