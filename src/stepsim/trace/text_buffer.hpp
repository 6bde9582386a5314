#pragma once
// TextBuffer: a whole trace file in memory, gzip inflated, with the zero padding simdjson reads past the end.
// Memory: the decompressed text plus 64 bytes; a .gz is inflated once, into a buffer sized from its trailer
// (ISIZE), so no doubling copy happens for files under 4 GiB.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace stepsim::trace {

// Largest decompressed trace read (simdjson's documents are limited to 4 GiB).
constexpr size_t kMaxTraceBytes = size_t{3} << 30;

struct TextBuffer {
  std::unique_ptr<char[]> data;
  size_t size = 0;      // bytes of text
  size_t capacity = 0;  // allocated bytes, >= size + padding

  // A copy of `n` bytes with padding (fuzz targets and tests).
  static TextBuffer copy_of(const char* text, size_t n);
};

// Reads `path`, plain or gzip (by its magic bytes). InputError naming the file when it cannot be read,
// is a truncated or corrupt gzip stream, or inflates to more than max_bytes.
TextBuffer read_text_file(const std::string& path, size_t max_bytes = kMaxTraceBytes);

}  // namespace stepsim::trace
