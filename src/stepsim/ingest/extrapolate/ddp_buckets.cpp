#include "stepsim/ingest/extrapolate/ddp_buckets.hpp"

#include <algorithm>

namespace stepsim::extrapolate {

std::vector<Bucket> ddp_buckets(const std::vector<Gradient>& grads, uint64_t bucket_bytes, bool already_buckets) {
  std::vector<Bucket> out;
  Bucket cur;
  for (const Gradient& g : grads) {
    cur.bytes += static_cast<uint64_t>(g.bytes);
    cur.ready_op = std::max(cur.ready_op, g.ready_op);
    ++cur.gradients;
    const uint64_t cap = out.empty() ? std::min(kFirstBucketBytes, bucket_bytes) : bucket_bytes;
    if (already_buckets || cur.bytes >= cap) {
      out.push_back(cur);
      cur = Bucket{};
    }
  }
  if (cur.gradients) out.push_back(cur);
  return out;
}

}  // namespace stepsim::extrapolate
