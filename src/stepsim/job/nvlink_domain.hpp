#pragma once
// An NVLink domain larger than a host (cluster.nvlink_domain; a GB200/GB300 NVL72 rack of 18 four-GPU trays): the
// communication models, the topology and the ranks' placement see one node per domain (the job's GPUs in it), the
// host-level figures (failures per node, a node's NICs) stay per host. docs/NETWORK.md, "NVLink domains".
#include "stepsim/job/job_spec.hpp"

namespace stepsim::spec {

// Spreads the job over the fewest domains that hold it, the same whole hosts in each (128 GPUs of 4-GPU trays on
// domains of 72: two domains of 64), and makes that the communication node: gpus_per_node becomes the GPUs per
// domain, host_gpus keeps the host's, network.nics_per_node (per host) is scaled to the domain's share. Nothing when
// nvlink_domain is 0 or the host's size. InputError naming the key when the domain is not whole hosts, when the job
// does not split evenly over the domains, or when the node is not an NVLink switch.
void apply_nvlink_domain(ClusterSpec& c, const std::string& source);

// The job's GPUs in each of the fewest domains of `domain` GPUs that hold `num_gpus` (evenly; the caller checks that
// it divides and is whole hosts).
inline int gpus_per_domain(int num_gpus, int domain) { return num_gpus / ((num_gpus + domain - 1) / domain); }

// The cluster with another GPU count (the planner's --gpus), its NVLink domains split again for it.
void set_num_gpus(ClusterSpec& c, int num_gpus);

}  // namespace stepsim::spec
