// libFuzzer target for Chakra execution traces (`stepsim trace import` of .et files and Chakra JSON): the bytes are
// read as a .et protobuf stream or, when they look like one, as Chakra JSON, then turned into a rank's program against
// a fixed communicator-group file. Bad input must end in InputError; a crash, hang or other exception is a bug, and so
// is a program whose dependencies point forward (the importer orders ops so that each waits only for earlier ones).
#include <cstdint>
#include <string>

#include "stepsim/ingest/chakra/et_file.hpp"
#include "stepsim/ingest/chakra/et_import.hpp"
#include "stepsim/io/input_error.hpp"

#include "fuzz_support.hpp"

using fuzz_support::require;
using namespace stepsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 20)) return 0;
  static const chakra::CommGroups groups = chakra::parse_comm_groups("{\"1\": [0, 1], \"2\": [0, 2], \"3\": [1, 3], \"4\": [2, 3]}", "groups.json");
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const chakra::EtGraph g = chakra::is_chakra_json(text) ? chakra::parse_chakra_json(text, "fuzz.0.json")
                                                           : chakra::parse_et(text, "fuzz.0.et");
    const chakra::ImportedRank r = chakra::import_graph(g, "fuzz.0.et", 0, &groups);
    for (size_t i = 0; i < r.rank.ops.size(); ++i) {
      for (int d : r.rank.ops[i].after) require(d >= 0 && static_cast<size_t>(d) < i);
    }
    require(r.nodes == static_cast<int64_t>(g.nodes.size()));
  } catch (const InputError&) {
  }
  return 0;
}
