// libFuzzer target for the job-file pipeline without the filesystem: parse_yaml, then job_from_node
// (strict conversion + validate). InputError is the expected outcome for bad input; any other
// exception, a crash, UB, a hang or huge memory is a bug. A job that validates and is small is also
// built into its per-stage programs (build_megatron_workload), whose invariants are checked below.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/workload/megatron_builder.hpp"

#include "fuzz_support.hpp"
#include "stepsim/catalog/catalog.hpp"


namespace {

using fuzz_support::require;

using stepsim::workload::kNumStreams;
using stepsim::workload::Op;
using stepsim::workload::OpKind;
using stepsim::workload::Program;
using stepsim::workload::Stream;

// Small enough to build in a few milliseconds: fuzzing must stay fast.
bool small(const stepsim::spec::JobSpec& job) {
  return job.cluster.num_gpus <= 64 && job.num_microbatches() * job.model.num_layers <= 4096;
}

struct P2PTotals {
  uint64_t send_prev = 0, send_next = 0, recv_prev = 0, recv_next = 0;
};

P2PTotals check_program(const Program& p) {
  // stream_ops lists every op exactly once, on its own stream, in issue order.
  size_t listed = 0;
  for (int s = 0; s < kNumStreams; ++s) {
    uint32_t prev = 0;
    bool first = true;
    for (uint32_t i : p.stream_ops[s]) {
      require(i < p.ops.size());
      require(static_cast<int>(p.ops[i].stream) == s);
      require(first || i > prev);
      prev = i;
      first = false;
    }
    listed += p.stream_ops[s].size();
  }
  require(listed == p.ops.size());

  P2PTotals t;
  uint32_t issued[kNumStreams] = {};  // ops issued so far per stream
  for (const Op& op : p.ops) {
    const int s = static_cast<int>(op.stream);
    require(s >= 0 && s < kNumStreams);
    require(op.name < p.names.size());
    require(uint64_t{op.wait_begin} + op.wait_count <= p.waits.size());
    for (uint32_t w = op.wait_begin; w < op.wait_begin + op.wait_count; ++w) {
      const int ws = static_cast<int>(p.waits[w].stream);
      require(ws >= 0 && ws < kNumStreams);
      require(p.waits[w].count >= 1);
      require(p.waits[w].count <= p.stream_ops[ws].size());
      // A wait on an op not yet issued would deadlock the engine.
      require(p.waits[w].count <= issued[ws]);
    }
    ++issued[s];
    require(op.mem_alloc_at_start >= 0 && op.mem_free_at_end >= 0);
    require(op.flops >= 0);
    if (op.kind == OpKind::P2P) {
      // Batched exchanges run on the pipeline stream; under overlap_p2p_comm the parts toward the previous stage
      // queue on a stream of their own (PyTorch's communicator per pair of ranks).
      require(op.stream == Stream::Pp ||
              (op.stream == Stream::PpPrev && op.send_next == 0 && op.recv_next == 0));
      require(op.bytes == op.send_prev + op.send_next);
      require(op.send_prev || op.send_next || op.recv_prev || op.recv_next);
      t.send_prev += op.send_prev;
      t.send_next += op.send_next;
      t.recv_prev += op.recv_prev;
      t.recv_next += op.recv_next;
    } else {
      require(op.send_prev == 0 && op.send_next == 0 && op.recv_prev == 0 && op.recv_next == 0);
    }
  }
  require(p.activation_peak >= 0);
  require(p.static_memory.total() >= 0);
  return t;
}

void check_workload(const stepsim::spec::JobSpec& job) {
  const auto w = stepsim::workload::build_megatron_workload(job);
  const int pp = job.parallelism.pipeline;
  require(static_cast<int>(w.programs.size()) == pp);
  require(static_cast<int>(w.role_of_stage.size()) == pp);
  require(w.layout.world() == job.cluster.num_gpus);
  std::vector<P2PTotals> t;
  for (const Program& p : w.programs) t.push_back(check_program(p));
  // What a stage sends to its ring neighbour, the neighbour receives (same bytes in total).
  for (int s = 0; s < pp; ++s) {
    const int next = (s + 1) % pp;
    require(t[s].send_next == t[next].recv_prev);
    require(t[next].send_prev == t[s].recv_next);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const YAML::Node root = stepsim::spec::parse_yaml(text, "fuzz.yaml");
    const stepsim::spec::JobSpec job = stepsim::spec::job_from_node(stepsim::catalog::shipped().gpus, root, "fuzz.yaml");
    if (small(job)) check_workload(job);
  } catch (const stepsim::InputError&) {
  }
  return 0;
}
