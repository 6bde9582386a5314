#pragma once
// PyTorch DistributedDataParallel's gradient buckets: gradients in the order the backward pass makes them ready
// go into the current bucket until it holds at least its cap; the first bucket's cap is 1 MiB
// (dist._DEFAULT_FIRST_BUCKET_BYTES), the others' `bucket_bytes` (bucket_cap_mb, 25 MiB by default). A bucket's
// all-reduce can start when its last gradient is ready.
#include <cstdint>
#include <vector>

#include "stepsim/ingest/extrapolate/source_step.hpp"

namespace stepsim::extrapolate {

struct Bucket {
  uint64_t bytes = 0;
  int ready_op = -1;   // SourceStep op after which the bucket's last gradient is ready
  int gradients = 0;
};

constexpr uint64_t kFirstBucketBytes = 1ull << 20;

// `grads` in ready order. With `already_buckets` (sizes taken from a trace's own all-reduces) every gradient is
// one bucket.
std::vector<Bucket> ddp_buckets(const std::vector<Gradient>& grads, uint64_t bucket_bytes, bool already_buckets);

}  // namespace stepsim::extrapolate
