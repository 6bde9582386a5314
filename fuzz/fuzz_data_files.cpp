// libFuzzer target for the catalog's data files (data/gpus.yaml, efficiency.yaml, nccl-tuner.yaml, nccl.yaml), which a
// user's STEPSIM_DATA_DIR copy replaces: each input is read by the readers whose top-level keys it has (all four
// when it has none). A reader either returns a table or throws an InputError whose message starts with the file's
// path; any other exception, a crash or a hang is a bug. A GPU catalog that loads must give every GPU a name and
// memory, and find it by that name.
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/io/input_error.hpp"

#include "fuzz_support.hpp"

using fuzz_support::require;
using namespace stepsim;

namespace {

// The readers take a path: one file per fuzzing process, rewritten for each input.
const std::string& input_path() {
  static const std::string path = fuzz_support::scratch_path("data", ".yaml");
  return path;
}

template <class Read>
void expect_table_or_input_error(const Read& read) {
  try {
    read(input_path());
  } catch (const InputError& e) {
    require(std::string(e.what()).rfind(input_path(), 0) == 0);
  }
}

// Whether the text has `key:` at the start of a line: the top-level keys tell the four files apart.
bool has_top_key(std::string_view text, std::string_view key) {
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    if ((at == 0 || text[at - 1] == '\n') && text.substr(at + key.size(), 1) == ":") return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  {
    std::ofstream out(input_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  // Each reader parses the whole file: an input goes to the readers whose top-level keys it has (all four when it has
  // none), so that a campaign's executions are not four parses each.
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool efficiency = has_top_key(text, "defaults") || has_top_key(text, "archs");
  const bool gpus = has_top_key(text, "gpus") && !efficiency;
  const bool nccl = has_top_key(text, "profiles") || has_top_key(text, "transports");
  const bool tuner = has_top_key(text, "base_latency_us") || has_top_key(text, "refinements") ||
                     has_top_key(text, "hw_latency_us") || has_top_key(text, "nvls_efficiency");
  const bool all = !efficiency && !gpus && !nccl && !tuner;
  if (all || gpus) expect_table_or_input_error([](const std::string& p) {
    const hw::GpuCatalog gpus = hw::GpuCatalog::load(p);
    for (const hw::GpuSpec& g : gpus.gpus()) {
      require(!g.name.empty() && g.memory_bytes > 0 && g.bf16_flops >= 0);
      require(&gpus.find(g.name) == &g || gpus.find(g.name).name == g.name);
    }
  });
  if (all || efficiency) expect_table_or_input_error([](const std::string& p) { (void)cost::EfficiencyCatalog::load(p); });
  if (all || tuner) expect_table_or_input_error([](const std::string& p) { (void)cost::NcclTunerTable::load(p); });
  if (all || nccl) {
    expect_table_or_input_error([](const std::string& p) { (void)cost::NcclProfiles::load(p, catalog::shipped().gpus); });
  }
  return 0;
}
