#pragma once
// The inter-node rate a transport really gives (docs/NETWORK.md, "Transports"): the NICs' line rate, as the cluster
// states it, times the fraction of it NCCL reaches over the transport (GPUDirect-TCPX about half of what InfiniBand
// verbs reach). Every communication model is built on the cluster this returns, so they all agree.
#include <string>
#include <vector>

#include "stepsim/catalog/nccl_params.hpp"
#include "stepsim/job/job_spec.hpp"

namespace stepsim::cost {

// cluster.inter_node.bandwidth_efficiency where the user gives it, else the transport's (data/nccl.yaml).
double transport_bandwidth_efficiency(const NcclProfiles& nccl, const spec::ClusterSpec& c);

// The cluster with its inter-node rates (inter_node.bandwidth, network.nic_GBps) at what the transport reaches.
spec::ClusterSpec at_transport_rates(const NcclProfiles& nccl, const spec::ClusterSpec& c);

// The cluster with the rates NCCL reaches on large transfers, for a model that moves bytes over links without NCCL's
// efficiency terms (the flow model): at_transport_rates, then the NVLink rate times the GPU's NCCL profile's
// intra_efficiency (NCCL counts 20.6 of an NVLink4 link's 25 GB/s) and the NICs' times its inter_efficiency
// (data/nccl.yaml). A GPU without a profile keeps the nominal rates.
spec::ClusterSpec at_achievable_rates(const NcclProfiles& nccl, const hw::GpuSpec& gpu, const spec::ClusterSpec& c);

// What the user should know of the transport's numbers: its data/nccl.yaml note where one of them is assumed and
// the user did not state the fraction; empty on one node, where no NIC is used.
std::vector<std::string> transport_notes(const NcclProfiles& nccl, const spec::ClusterSpec& c);

}  // namespace stepsim::cost
