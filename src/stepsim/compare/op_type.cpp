#include "stepsim/compare/op_type.hpp"

#include <tuple>

namespace stepsim::compare {
namespace {

int order_of(const std::string& t) {
  using workload::CollType;
  using workload::ComputeCategory;
  for (int c = 0; c <= static_cast<int>(ComputeCategory::Host); ++c)
    if (t == workload::name_of(static_cast<ComputeCategory>(c))) return c;
  for (int c = 0; c <= static_cast<int>(CollType::SendRecv); ++c)
    if (t == workload::name_of(static_cast<CollType>(c))) return 100 + c;
  if (t == kSendRecv) return 200;
  if (t == kIdle) return 400;
  return 300;
}

}  // namespace

std::string type_of(workload::OpKind kind, workload::ComputeCategory category, workload::CollType coll) {
  switch (kind) {
    case workload::OpKind::Compute: return workload::name_of(category);
    case workload::OpKind::Collective: return workload::name_of(coll);
    case workload::OpKind::P2P: break;
  }
  return kSendRecv;
}

bool type_before(const std::string& a, const std::string& b) {
  return std::make_tuple(order_of(a), std::cref(a)) < std::make_tuple(order_of(b), std::cref(b));
}

}  // namespace stepsim::compare
