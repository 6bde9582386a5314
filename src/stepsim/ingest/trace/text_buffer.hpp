#pragma once
// TextBuffer: a whole trace file in memory, gzip inflated, with the zero padding simdjson reads past the end.
// Memory: the decompressed text plus 64 bytes; a .gz is inflated once, into a buffer sized from its trailer
// (ISIZE), so no doubling copy happens for files under 4 GiB.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace stepsim::trace {

// Largest decompressed trace read: 512 MiB (a real one-step Kineto trace of a rank is tens to a few hundred MB). With
// kMaxTracePunctuation and kMaxTraceEvents it keeps an import under 2 GB of memory whatever the input: the text, plus
// simdjson's index (4 bytes per structural character and value start: at most 2 per punctuation character, so at most
// 768 MiB), plus the events kept (80 bytes a kernel, 56 a CPU op), read with no copy of their keys and strings.
constexpr size_t kMaxTraceBytes = size_t{512} << 20;
// JSON punctuation ({}[]:,) in one trace: 96 Mi, 18.75 % of the largest text (real traces: 12-13 %; a synthetic
// trace of bare kernel events with a grid array is 21 %).
constexpr size_t kMaxTracePunctuation = size_t{96} << 20;
// Most events (kernels, CPU ops, runtime calls, memory events; execution-trace nodes) kept from one trace file:
// ~100 bytes each, 400 MB (a real step of a large model is well under a million kernels per rank).
constexpr size_t kMaxTraceEvents = 4'000'000;

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
