// libFuzzer target for the Nsight Systems SQLite reader: the input bytes are opened as a database image
// (sqlite3_deserialize). InputError is the expected outcome for anything that is not a readable export; any
// other exception, a crash or a hang, or kernels that break the invariants below, is a bug.
#include <cstdint>
#include <string_view>

#include "stepsim/ingest/profile/nsys_db.hpp"
#include "stepsim/io/input_error.hpp"

#include "fuzz_support.hpp"

using fuzz_support::require;
using namespace stepsim::profile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const NsysDb db = read_nsys_db_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.sqlite",
                                         {.all_kernels = true, .nvtx = true});
    require(db.kernel_rows >= static_cast<int64_t>(db.kernels.size()));
    for (size_t i = 0; i < db.kernels.size(); ++i) {
      const auto& k = db.kernels[i];
      require(k.end_ns >= k.start_ns && k.name.size() <= kMaxNsysString);
      require(k.pid == -1 || (k.pid >= 0 && k.pid <= 0xFFFFFF));
      if (i) require(db.kernels[i - 1].start_ns <= k.start_ns);
    }
    for (const auto& r : db.nvtx) require(r.text.size() <= kMaxNsysString);
  } catch (const stepsim::InputError&) {
  }
  return 0;
}
