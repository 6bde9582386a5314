#pragma once
// Pipeline schedules: the sequence of forward/backward steps of (micro-batch, model chunk) and of
// point-to-point exchanges that one pipeline stage runs, exactly as Megatron-LM's schedules.py issues
// them (forward_backward_pipelining_without_interleaving / _with_interleaving, non-overlapped p2p).
// Each exchange is one batched send/recv that the stage waits for before its next compute step.
#include <vector>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::workload {

struct PipelineAction {
  // Combined: Megatron-Core's combined 1F1B step (training.overlap_moe_expert_parallel_comm), the forward of
  // (microbatch, chunk) and the backward of (b_microbatch, b_chunk) run layer by layer together.
  enum Kind { Forward, Backward, Exchange, Combined } kind = Forward;
  int microbatch = 0;
  int chunk = 0;  // model chunk on this stage (0 .. virtual_stages-1)
  int b_microbatch = 0, b_chunk = 0;  // Combined only: the backward half
  // Exchange: activation to the next stage / gradient to the previous stage; receive from them.
  bool send_next = false, send_prev = false, recv_prev = false, recv_next = false;
  // Who waits for an exchange: Blocking = the next compute step; ForwardAsync / BackwardAsync = the next
  // forward / backward step (Megatron's fwd_wait_handles / bwd_wait_handles under overlap_p2p_comm).
  enum Wait { Blocking, ForwardAsync, BackwardAsync } wait = Blocking;
  bool empty_exchange() const { return !(send_next || send_prev || recv_prev || recv_next); }
};

// combined_1f1b: Megatron-Core's combined 1F1B schedules (combined_1f1b.py): without pipelining the first forward runs
// alone, then each forward is paired with the previous micro-batch's backward; interleaved, one more warm-up forward
// (so that the paired steps are independent) and every steady-state forward/backward pair is one Combined action.
// Needs the interleaved schedule when stages > 1 (spec::validate refuses the rest).
// all_forwards_first: Megatron's interleaved schedule runs every forward before any backward when the micro-batches
// equal the stages; PyTorch's ScheduleInterleaved1F1B (torchtitan) keeps its warm-up of (v - 1) m + 2 (p - 1 - r).
std::vector<PipelineAction> pipeline_actions(spec::PipelineSchedule schedule, int stage, int stages, int chunks,
                                             int num_microbatches, bool overlap_p2p_comm = false,
                                             bool combined_1f1b = false, bool all_forwards_first = true);

// Warm-up forward steps of a stage (before its first backward).
int warmup_steps(spec::PipelineSchedule schedule, int stage, int stages, int chunks, int num_microbatches,
                 bool combined_1f1b = false, bool all_forwards_first = true);

// Whether the job's framework runs all forwards first when micro-batches == stages (see pipeline_actions).
inline bool all_forwards_first(const spec::TrainingSpec& t) { return t.framework != spec::Framework::Torchtitan; }

}  // namespace stepsim::workload
