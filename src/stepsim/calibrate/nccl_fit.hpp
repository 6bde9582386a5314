#pragma once
// Fitting the NCCL model's parameters to measurements (Echo §5.3 profiles alpha, beta, gamma, delta per chunk
// size). The model is linear in theta = {alpha, beta, gamma, 1/intra_eff, 1/inter_eff, 1/reduce_GBps}
// (nccl_model.hpp), so a fit is a bounded linear least squares on the terms of every measured call, in relative
// error so that a 40 us and a 40 ms call weigh the same.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/cost/collective/nccl_model.hpp"
#include "stepsim/catalog/nccl_params.hpp"
#include "stepsim/calibrate/nccl_tests_reader.hpp"

namespace stepsim::cost {

// One measured call: what ran, over which group, how long it took.
struct CommPoint {
  BenchCollective collective = BenchCollective::AllReduce;
  uint64_t bytes = 0;                     // nccl-tests' size S (all-gather: the gathered output)
  GroupGeometry geometry;                 // ranks, nodes, ranks on the busiest node
  double time_us = 0;
  Algorithm algorithm = Algorithm::Auto;  // the algorithm that ran, when the source says (kernel records)
  std::optional<Protocol> protocol;       // the protocol that ran, when known: not forced (the tuner picks), compared
  std::string where;                      // "file:line", for messages
};

// The model's terms for a point. sendrecv: one send/recv (nccl_p2p_terms), across nodes when the group spans
// several. gather/scatter: the all-to-all terms of the same size, since NCCL runs them as grouped send/recv and
// the root moves what every all-to-all rank moves ((n-1)/n of S). `force` applies where the point says Auto, `proto`
// (NCCL_PROTO the measurements ran with) to the collectives that have a protocol choice.
NcclTerms comm_point_terms(const NcclHardware& hw, const CommPoint& p, Algorithm force = Algorithm::Auto,
                           std::optional<Protocol> proto = std::nullopt);

// Bounds of a fit: times in [0, 1e6] us, efficiencies in [0.05, 1.5], reduce_GBps in [1e-3, 1e6] (the ranges
// data/nccl.yaml accepts).
struct NcclFit {
  NcclParams params;
  std::array<bool, kNcclParamCount> fitted{};  // false: no point exercises this term, so the value is the base's
  int points = 0;
  double mean_abs_pct = 0, max_abs_pct = 0;    // in-sample error
  int fitted_count() const;
};
// Minimises sum ((terms[i] . theta - t_i) / t_i)^2 within the bounds; unexercised parameters keep `base`.
NcclFit fit_nccl_params(const std::vector<NcclTerms>& terms, const std::vector<double>& times_us,
                        const NcclParams& base);

struct ErrorStats {
  double mean_abs_pct = 0, max_abs_pct = 0;
};

struct PointResult {
  CommPoint point;
  NcclTerms terms;
  double before_us = 0;  // the model as it is (profile defaults and bands)
  double after_us = 0;   // the joint fit
  double cv_us = 0;      // fitted without this point (or its fold)
};

// The calibration of the points spanning one node count.
struct NcclCalibration {
  int nodes = 1;
  NcclParams base;  // the model's current parameters for this node count: the start and the unfitted values
  NcclFit joint;    // all points
  std::vector<PointResult> points;
  ErrorStats before, after, cv;
  std::string cv_kind;  // "leave-one-out", or "10-fold" above 2000 points
  // Per chunk_bytes of the terms (Echo's per-chunk parameters), where a chunk size has more points than
  // exercised parameters and is not the only one.
  std::vector<std::pair<uint64_t, NcclFit>> by_chunk;
  // Per collective, where several were measured and one has more points than exercised parameters.
  std::vector<std::pair<BenchCollective, NcclFit>> by_collective;
};

struct SkippedPoint {
  std::string where;
  std::string why;
};

struct NcclCalibrationResult {
  std::vector<NcclCalibration> groups;  // ascending node count
  std::vector<SkippedPoint> skipped;    // zero time, zero bytes, one rank: nothing to fit
};

// Groups the points by node count and fits each group; `current` is the model's parameter table today.
NcclCalibrationResult calibrate_nccl(const std::vector<CommPoint>& points, const NcclHardware& hw,
                                     const NcclParamTable& current, Algorithm force = Algorithm::Auto,
                                     std::optional<Protocol> proto = std::nullopt);

}  // namespace stepsim::cost
