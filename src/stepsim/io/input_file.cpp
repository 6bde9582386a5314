#include "stepsim/io/input_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "stepsim/io/input_error.hpp"

namespace stepsim::spec {

void require_existing_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) throw InputError(path + ": cannot read " + what + ": no such file");
  if (std::filesystem::is_directory(st)) throw InputError(path + ": cannot read " + what + ": it is a directory, not a file");
}

std::string read_whole_file(const std::string& path, const std::string& what, size_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  require_existing_file(path, what);
  if (!fs::is_regular_file(path, ec)) {
    throw InputError(path + ": cannot read " + what + ": not a regular file (a device, pipe or socket)");
  }
  const auto size = fs::file_size(path, ec);
  if (ec) throw InputError(path + ": cannot read " + what + ": " + ec.message());
  if (size > max_bytes) {
    throw InputError(path + ": " + what + " is " + std::to_string(size) + " bytes, more than the limit of " +
                     std::to_string(max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open " + what);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_text_file(const std::string& path, const std::string& what) {
  return read_whole_file(path, what, kMaxInputFileBytes);
}

}  // namespace stepsim::spec
