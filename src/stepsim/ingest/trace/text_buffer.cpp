#include "stepsim/ingest/trace/text_buffer.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <simdjson.h>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"

namespace stepsim::trace {
namespace {

constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;

void allocate(TextBuffer& b, size_t text_capacity) {
  // Not zeroed: pages the text never reaches are never touched (a bogus gzip size hint costs no memory).
  std::unique_ptr<char[]> fresh(new char[text_capacity + kPadding]);
  if (b.size) std::memcpy(fresh.get(), b.data.get(), b.size);
  b.data = std::move(fresh);
  b.capacity = text_capacity + kPadding;
}

// Bytes the text will have: the file size, or a gzip member's ISIZE trailer (size mod 2^32, exact below 4 GiB).
size_t expected_size(const std::string& path, bool& gz) {
  std::error_code ec;
  // A device, FIFO or other stream has no size to read ahead: the caller reserves the whole limit (address space
  // only; the pages the text never reaches are never touched) rather than growing and copying.
  if (!std::filesystem::is_regular_file(path, ec)) return SIZE_MAX;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path + ": cannot open the trace file");
  const auto file_size = static_cast<size_t>(in.tellg());
  unsigned char magic[2] = {0, 0};
  in.seekg(0);
  in.read(reinterpret_cast<char*>(magic), 2);
  gz = in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!gz) return file_size;
  if (file_size < 18) return 1 << 16;  // too short to hold a trailer; gzread will report the truncation
  unsigned char t[4];
  in.seekg(static_cast<std::streamoff>(file_size - 4));
  in.read(reinterpret_cast<char*>(t), 4);
  const size_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (size_t{t[3]} << 24);
  // Deflate expands at most ~1032:1; a larger claim is a damaged or hostile trailer.
  return std::clamp<size_t>(isize, 1 << 16, file_size * 1100 + (1 << 20));
}

}  // namespace

TextBuffer TextBuffer::copy_of(const char* text, size_t n) {
  TextBuffer b;
  allocate(b, n);
  if (n) std::memcpy(b.data.get(), text, n);
  b.size = n;
  std::memset(b.data.get() + n, 0, b.capacity - n);
  return b;
}

TextBuffer read_text_file(const std::string& path, size_t max_bytes) {
  spec::require_existing_file(path, "the trace");
  bool gz = false;
  const size_t hint = expected_size(path, gz);
  if (hint > max_bytes && hint != SIZE_MAX && !gz)
    throw InputError(path + ": the trace is " + std::to_string(hint) + " bytes, above the limit of " +
                     std::to_string(max_bytes));
  TextBuffer b;
  allocate(b, std::min(hint, max_bytes) + 1);  // +1: reaching the end needs one read that returns 0
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (!f) throw InputError(path + ": cannot open the trace file");
  gzbuffer(f, 1 << 18);
  for (;;) {
    size_t room = b.capacity - kPadding - b.size;
    if (room == 0) {
      if (b.size >= max_bytes) {
        gzclose(f);
        throw InputError(path + ": the decompressed trace is larger than the limit of " + std::to_string(max_bytes) +
                         " bytes");
      }
      // The size hint was short (a gzip trailer lies, or the input is a stream): one move to the whole limit, whose
      // untouched pages cost nothing, instead of growing by steps with a copy each (peak: twice the text).
      allocate(b, max_bytes + 1);
      room = b.capacity - kPadding - b.size;
    }
    const int n = gzread(f, b.data.get() + b.size, static_cast<unsigned>(std::min<size_t>(room, 1 << 30)));
    if (n < 0) break;
    if (n == 0) break;
    b.size += static_cast<size_t>(n);
  }
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  const std::string what = msg ? msg : "";
  gzclose(f);
  if (err != Z_OK && err != Z_STREAM_END)
    throw InputError(path + ": truncated or corrupt gzip stream (zlib: " + what + ")");
  if (b.size > max_bytes)
    throw InputError(path + ": the decompressed trace is larger than the limit of " + std::to_string(max_bytes) +
                     " bytes");
  std::memset(b.data.get() + b.size, 0, b.capacity - b.size);
  return b;
}

}  // namespace stepsim::trace
