#include "stepsim/api/output_file.hpp"
#include "stepsim/io/utf8.hpp"

#include <fstream>
#include <iostream>

#include "stepsim/io/input_error.hpp"

namespace stepsim::api {

void write_output_file(const std::string& path, const std::string& text, const std::string& what) {
  if (path == "-") {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream out(path);
  if (!out) throw InputError(path + ": cannot write " + what);
  // The edge every text file passes: a user's bytes in a name (a model, a CSV id) end up valid UTF-8 in HTML,
  // Markdown, CSV and YAML as they already do in JSON.
  out << io::valid_utf8(text);
  if (!out) throw InputError(path + ": error while writing " + what);
}

void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write, const std::string& what) {
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    return;
  }
  std::ofstream out(path);
  if (!out) throw InputError(path + ": cannot write " + what);
  write(out);
  if (!out) throw InputError(path + ": error while writing " + what);
}

}  // namespace stepsim::api
