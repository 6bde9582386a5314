#pragma once
// Chakra .et files: one GlobalMetadata message, then one Node message per node, each preceded by its byte length as a
// varint (Chakra's protolib, ASTRA-sim's ETFeeder). Reading is bounded: a file of at most 512 MiB, messages of at
// most 64 MiB, at most 4 million nodes; anything else is an InputError naming the file and the rule.
#include <cstddef>
#include <string>
#include <string_view>

#include "stepsim/ingest/chakra/et_node.hpp"

namespace stepsim::chakra {

constexpr size_t kMaxEtFileBytes = size_t{512} << 20;
constexpr size_t kMaxEtMessageBytes = size_t{64} << 20;
constexpr size_t kMaxEtNodes = 4'000'000;

// Appends one graph as a stream of length-delimited messages; returns the bytes written.
size_t write_et(const EtGraph& g, std::string& out);
void write_et_file(const EtGraph& g, const std::string& path);

// Parses a whole file's bytes; `path` labels errors (fuzz target entry point).
EtGraph parse_et(std::string_view bytes, const std::string& path);
EtGraph read_et_file(const std::string& path);

}  // namespace stepsim::chakra
