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
// The NICs of a node (cluster.network.nics_per_node, else one per GPU) and one NIC's rate, GB/s (network.nic_GBps,
// else the per-GPU rate spread over them).
int nics_per_node(const ClusterSpec& c);
double one_nic_GBps(const ClusterSpec& c);

// "400 Gb/s per GPU over ib" and, where the transport reaches a fraction
// `efficiency` of the line rate, " at 0.5 of line rate (200 Gb/s)": the inter-node link as the user should read it.
std::string inter_node_text(const ClusterSpec& c, double efficiency);

// The keys of cluster.network (and inter_node.topology) set away from their defaults that describe the fabric's
// graph, which only the flow model builds: routing, switch ports and oversubscription, node and fabric shapes, slow
// links. Empty when none is set.
std::vector<std::string> flow_only_network_keys(const ClusterSpec& c);

// What the communication model `m` leaves unused of the cluster, one note each, for the job's summary or `comm` to
// print: the keys of the fabric's graph under a model other than flow; under nccl, the intra/inter-node latency_us set
// away from their defaults (it times latency with NCCL's own constants, data/nccl.yaml scaled by the transport).
std::vector<std::string> unused_network_notes(const ClusterSpec& c, CommModel m);

}  // namespace stepsim::spec
