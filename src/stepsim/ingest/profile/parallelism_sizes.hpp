#pragma once
// The parallel sizes a user gives with --parallelism (tp=4,pp=2,dp=8,ep=..,cp=..); 0 = not given.
#include <string>

namespace stepsim::profile {

struct ParallelismSizes {
  int tp = 0, pp = 0, dp = 0, ep = 0, cp = 0;
  bool any() const { return tp || pp || dp || ep || cp; }
};
// "tp=4,pp=2,dp=8" → sizes; InputError naming the flag and the rule for anything else.
ParallelismSizes parse_parallelism(const std::string& text);

}  // namespace stepsim::profile
