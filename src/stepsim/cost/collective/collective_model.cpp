#include "stepsim/cost/collective/collective_model.hpp"

#include <algorithm>

#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {

CollectiveEstimate CollectiveModel::estimate(workload::CollType coll, uint64_t bytes, const GroupGeometry& g,
                                             Algorithm algo, std::optional<Protocol> proto) const {
  require_simple_protocol(proto, "chosen");
  if (algo != Algorithm::Auto && algo != Algorithm::Ring) {
    throw InputError(std::string("--algo ") + name_of(algo) + ": this collective model times ring collectives only");
  }
  return {collective_ns(coll, bytes, g), coll == workload::CollType::AllToAll ? Algorithm::Direct : Algorithm::Ring,
          Protocol::Simple, 0};
}

}  // namespace stepsim::cost
