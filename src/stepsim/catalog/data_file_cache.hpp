#pragma once
// One parsed data file per path, kept for the process: the builtin() accessors of the catalogs read from data/
// (STEPSIM_DATA_DIR may point elsewhere, as tests do, so the cache is keyed by the full path). T::load(path) parses.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "stepsim/catalog/gpu_catalog.hpp"

namespace stepsim::hw {

template <class T>
const T& cached_data_file(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<T>> cache;
  const std::string path = data_dir() + "/" + name;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, std::make_unique<T>(T::load(path))).first;
  return *it->second;
}

}  // namespace stepsim::hw
