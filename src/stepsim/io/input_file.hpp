#pragma once
// What a path given as an input file is, said before it is read: every reader names a missing file and a directory
// the same way.
#include <cstddef>
#include <string>

namespace stepsim::spec {

// InputError "<path>: cannot read <what>: no such file" or "...: it is a directory, not a file". Devices and pipes
// pass (a log may come from /dev/stdin); readers that need a regular file check that themselves.
void require_existing_file(const std::string& path, const std::string& what);

// The whole text of a regular file of at most `max_bytes`, its size known before reading: InputError naming the path,
// `what` it should be and the rule when it is missing, a directory, a device, pipe or socket, larger, or unreadable.
std::string read_whole_file(const std::string& path, const std::string& what, size_t max_bytes);

// Limit on any input file we read (job, cluster, config.json): bigger is refused, not parsed.
constexpr size_t kMaxInputFileBytes = 16u << 20;

// Reads a whole file (<= kMaxInputFileBytes). Throws InputError naming the file when unreadable.
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace stepsim::spec
