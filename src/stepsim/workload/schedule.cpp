#include "stepsim/workload/schedule.hpp"

#include <algorithm>

namespace stepsim::workload {

int warmup_steps(spec::PipelineSchedule schedule, int stage, int stages, int chunks, int m, bool combined,
                 bool all_forwards_first) {
  switch (schedule) {
    case spec::PipelineSchedule::GPipe: return m;
    case spec::PipelineSchedule::OneFOneB: return std::min(stages - stage - 1 + (combined && stages == 1 ? 1 : 0), m);
    case spec::PipelineSchedule::Interleaved1F1B: {
      const int total = m * chunks;
      if (all_forwards_first && m == stages) return total;  // Megatron: all forwards first when micro-batches == stages
      return std::min((stages - stage - 1) * 2 + (chunks - 1) * stages + (combined ? 1 : 0), total);
    }
  }
  return 0;
}

namespace {

class Emitter {
 public:
  Emitter(int stage, int stages) : s_(stage), p_(stages) {}
  bool first_stage() const { return s_ == 0; }
  bool last_stage() const { return s_ == p_ - 1; }
  void forward(int mb, int chunk) { out.push_back({PipelineAction::Forward, mb, chunk}); }
  void backward(int mb, int chunk) { out.push_back({PipelineAction::Backward, mb, chunk}); }
  // The forward of (mb, chunk) and the backward of (b_mb, b_chunk), combined when `combined`, else one after the other.
  void forward_backward(int mb, int chunk, int b_mb, int b_chunk, bool combined) {
    if (!combined) {
      forward(mb, chunk);
      backward(b_mb, b_chunk);
      return;
    }
    PipelineAction a{PipelineAction::Combined, mb, chunk};
    a.b_microbatch = b_mb;
    a.b_chunk = b_chunk;
    out.push_back(a);
  }
  void exchange(bool send_next, bool send_prev, bool recv_prev, bool recv_next,
                PipelineAction::Wait wait = PipelineAction::Blocking) {
    PipelineAction a{PipelineAction::Exchange};
    a.wait = wait;
    a.send_next = send_next;
    a.send_prev = send_prev;
    a.recv_prev = recv_prev;
    a.recv_next = recv_next;
    if (!a.empty_exchange()) out.push_back(a);
  }
  std::vector<PipelineAction> out;

 private:
  int s_, p_;
};

void gpipe(Emitter& e, int m) {
  for (int i = 0; i < m; ++i) {
    e.exchange(false, false, !e.first_stage(), false);
    e.forward(i, 0);
    e.exchange(!e.last_stage(), false, false, false);
  }
  for (int i = 0; i < m; ++i) {
    e.exchange(false, false, false, !e.last_stage());
    e.backward(i, 0);
    e.exchange(false, !e.first_stage(), false, false);
  }
}

// Megatron-Core's combined_1f1b_schedule_for_no_pipelining: micro-batch 0's forward alone, then the forward of i
// with the backward of i - 1, then the last backward alone.
void combined_no_pipelining(Emitter& e, int m) {
  e.forward(0, 0);
  for (int i = 1; i < m; ++i) e.forward_backward(i, 0, i - 1, 0, true);
  e.backward(m - 1, 0);
}

void one_f_one_b(Emitter& e, int stage, int stages, int m) {
  const int warm = std::min(stages - stage - 1, m), remaining = m - warm;
  const bool up = !e.first_stage(), down = !e.last_stage();
  for (int i = 0; i < warm; ++i) {
    e.exchange(false, false, up, false);  // recv_forward
    e.forward(i, 0);
    e.exchange(down, false, false, false);  // send_forward
  }
  if (remaining > 0) e.exchange(false, false, up, false);
  for (int i = 0; i < remaining; ++i) {
    e.forward(warm + i, 0);
    e.exchange(down, false, false, down);  // send_forward_recv_backward
    e.backward(i, 0);
    const bool last = i == remaining - 1;
    e.exchange(false, up, up && !last, false);  // send_backward(_recv_forward)
  }
  for (int i = 0; i < warm; ++i) {
    e.exchange(false, false, false, down);  // recv_backward
    e.backward(remaining + i, 0);
    e.exchange(false, up, false, false);  // send_backward
  }
}

// overlap: Megatron's overlap_p2p_comm path — in warm-up and steady state the forward-direction and the
// backward-direction exchanges are separate and asynchronous, waited for just before the next forward /
// backward step; the cool-down stays blocking.
void interleaved(Emitter& e, int stage, int p, int v, int m, bool overlap, bool combined, bool forwards_first) {
  using W = PipelineAction;
  const int total = m * v, group = p * v;
  auto chunk_of = [&](int k, bool forward) {
    const int c = (((k % group) + group) % group) / p;
    return forward ? c : v - 1 - c;
  };
  auto mb_of = [&](int k) { return (k / group) * p + k % p; };
  auto first_model_chunk = [&](int c) { return stage == 0 && c == 0; };
  auto last_model_chunk = [&](int c) { return stage == p - 1 && c == v - 1; };
  const bool all_warmup = forwards_first && m == p;
  const int warm = warmup_steps(spec::PipelineSchedule::Interleaved1F1B, stage, p, v, m, combined, forwards_first);
  const int remaining = total - warm;

  e.exchange(false, false, !e.first_stage(), false);  // recv_forward for chunk 0
  for (int k = 0; k < warm; ++k) {
    e.forward(mb_of(k), chunk_of(k, true));
    bool recv_prev = !(e.first_stage() && chunk_of(k + 1, true) == 0) && k != total - 1;
    const bool send_next = !last_model_chunk(chunk_of(k, true));
    const bool recv_next = k == warm - 1 && !all_warmup && !e.last_stage();
    if (overlap) {
      e.exchange(send_next, false, recv_prev, false, W::ForwardAsync);
      e.exchange(false, false, false, recv_next, W::BackwardAsync);
    } else {
      e.exchange(send_next, false, recv_prev, recv_next);
    }
  }
  for (int k = 0; k < remaining; ++k) {
    const int fk = k + warm;
    const bool send_next = !last_model_chunk(chunk_of(fk, true));
    const bool send_prev = !first_model_chunk(chunk_of(k, false));
    // Megatron: the first stage is ahead of the last by p - 1 virtual micro-batches (and vice versa).
    bool recv_prev = e.first_stage() ? chunk_of(fk - (p - 1), true) != v - 1 : true;
    const bool recv_next = e.last_stage() ? chunk_of(k - (p - 1), false) != 0 : true;
    if (k == remaining - 1) recv_prev = false;
    if (combined) {
      // Both halves run before either exchange (Megatron's post_forward / post_backward after the combined step).
      e.forward_backward(mb_of(fk), chunk_of(fk, true), mb_of(k), chunk_of(k, false), true);
      if (overlap) {
        e.exchange(send_next, false, recv_prev, false, W::ForwardAsync);
        e.exchange(false, send_prev, false, recv_next, W::BackwardAsync);
      } else {
        e.exchange(send_next, send_prev, recv_prev, recv_next);
      }
      continue;
    }
    e.forward(mb_of(fk), chunk_of(fk, true));
    if (overlap) e.exchange(send_next, false, recv_prev, false, W::ForwardAsync);
    e.backward(mb_of(k), chunk_of(k, false));
    if (overlap) e.exchange(false, send_prev, false, recv_next, W::BackwardAsync);
    else e.exchange(send_next, send_prev, recv_prev, recv_next);
  }
  if (all_warmup) e.exchange(false, false, false, !e.last_stage());  // recv_backward
  for (int k = remaining; k < total; ++k) {
    e.backward(mb_of(k), chunk_of(k, false));
    const bool recv_next = !(e.last_stage() && chunk_of(k + 1, false) == v - 1) && k != total - 1;
    e.exchange(false, !first_model_chunk(chunk_of(k, false)), false, recv_next);
  }
}

}  // namespace

std::vector<PipelineAction> pipeline_actions(spec::PipelineSchedule schedule, int stage, int stages, int chunks, int m,
                                             bool overlap_p2p_comm, bool combined_1f1b, bool all_forwards_first) {
  Emitter e(stage, stages);
  switch (schedule) {
    case spec::PipelineSchedule::GPipe: gpipe(e, m); break;
    case spec::PipelineSchedule::OneFOneB:
      if (combined_1f1b && stages == 1) combined_no_pipelining(e, m);
      else one_f_one_b(e, stage, stages, m);
      break;
    case spec::PipelineSchedule::Interleaved1F1B:
      interleaved(e, stage, stages, chunks, m, overlap_p2p_comm, combined_1f1b, all_forwards_first);
      break;
  }
  return std::move(e.out);
}

}  // namespace stepsim::workload
