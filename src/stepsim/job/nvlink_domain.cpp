#include "stepsim/job/nvlink_domain.hpp"

#include "stepsim/io/input_error.hpp"

namespace stepsim::spec {

void apply_nvlink_domain(ClusterSpec& c, const std::string& source) {
  const int host = c.gpus_per_node, domain = c.nvlink_domain;
  if (domain == 0 || domain == host) {
    c.nvlink_domain = 0;
    return;
  }
  auto fail = [&](const std::string& key, const std::string& rule) {
    throw InputError(source + ": key cluster." + key + ": " + rule);
  };
  const std::string hosts = " whole nodes of cluster.gpus_per_node " + std::to_string(host);
  if (domain < host || domain % host != 0) {
    fail("nvlink_domain", std::to_string(domain) + " must be" + hosts + " (e.g. 72 for an NVL72 rack of 4-GPU trays)");
  }
  if (c.network.node != NodeFabric::NvSwitch) {
    fail("nvlink_domain", "a domain across nodes is an NVLink switch system: needs cluster.network.node nvswitch");
  }
  if (c.num_gpus % host != 0) {
    fail("num_gpus",
         std::to_string(c.num_gpus) + " must be a multiple of cluster.gpus_per_node " + std::to_string(host));
  }
  const int domains = (c.num_gpus + domain - 1) / domain;
  const int per_domain = gpus_per_domain(c.num_gpus, domain);
  if (c.num_gpus % domains != 0 || per_domain % host != 0) {
    fail("num_gpus", std::to_string(c.num_gpus) + " GPUs do not split evenly over the " + std::to_string(domains) +
                         " NVLink domains of " + std::to_string(domain) + " that hold them, in" + hosts +
                         " (uneven domains are not modelled)");
  }
  if (c.network.nics_per_node > 0) c.network.nics_per_node *= per_domain / host;
  c.host_gpus = host;
  c.gpus_per_node = per_domain;
}

void set_num_gpus(ClusterSpec& c, int num_gpus) {
  if (c.nvlink_domain > 0) {
    if (c.network.nics_per_node > 0) c.network.nics_per_node /= c.gpus_per_node / c.host_gpus;
    c.gpus_per_node = c.host_gpus;
    c.host_gpus = 0;
  }
  c.num_gpus = num_gpus;
  apply_nvlink_domain(c, "cluster");
}

}  // namespace stepsim::spec
