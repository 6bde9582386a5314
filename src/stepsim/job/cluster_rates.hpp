#pragma once
// What every communication model reads of the cluster's network the same way (docs/NETWORK.md, "One description"):
// the inter-node rate one GPU gets, and which keys of cluster.network only the flow model can use.
#include <string>
#include <vector>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::spec {

// Inter-node bandwidth per GPU, GB/s one direction, with every GPU of a node sending at once: the node's NICs
// (cluster.network.nics_per_node x nic rate) shared by its GPUs where the network section gives a NIC rate, else
// cluster.inter_node.bandwidth (which is per GPU). The flow model's NIC links carry the same rate.
double inter_node_GBps_per_gpu(const ClusterSpec& c);

// The keys of cluster.network (and inter_node.topology) set away from their defaults that describe the fabric's
// graph, which only the flow model builds: routing, switch ports and oversubscription, node and fabric shapes, slow
// links. Empty when none is set.
std::vector<std::string> flow_only_network_keys(const ClusterSpec& c);

// One note naming those keys for a job or command that does not use the flow model; "" when there are none.
std::string flow_only_network_note(const ClusterSpec& c, const std::string& model);

// The nccl model times latency with NCCL's own constants (data/nccl.yaml, the transport's scale): a note naming
// cluster.intra_node / inter_node latency_us when set away from their defaults; "" otherwise.
std::string nccl_latency_note(const ClusterSpec& c);

}  // namespace stepsim::spec
