#include "stepsim/spec/input_file.hpp"

#include <filesystem>

#include "stepsim/spec/input_error.hpp"

namespace stepsim::spec {

void require_existing_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) throw InputError(path + ": cannot read " + what + ": no such file");
  if (std::filesystem::is_directory(st)) throw InputError(path + ": cannot read " + what + ": it is a directory, not a file");
}

}  // namespace stepsim::spec
