#include "stepsim/io/csv_table.hpp"

#include <algorithm>
#include <cctype>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/printable.hpp"

namespace stepsim::cost {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void require_unique_columns(const std::vector<std::string>& header, const std::string& source, int line) {
  std::vector<std::string> seen;
  for (const std::string& name : header) {
    const std::string key = lower(name);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      throw InputError(source + ":" + std::to_string(line) + ": column '" + spec::printable(name) +
                       "' appears twice in the header (one copy would be read and the other ignored)");
    }
    seen.push_back(key);
  }
}

}  // namespace

int CsvTable::column(std::string_view name) const {
  // The header is stored lower-case; compared in place (readers look a column up for every cell).
  const auto same = [&](const std::string& h) {
    if (h.size() != name.size()) return false;
    for (size_t i = 0; i < h.size(); ++i) {
      if (h[i] != static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])))) return false;
    }
    return true;
  };
  const auto it = std::find_if(header.begin(), header.end(), same);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::optional<std::vector<std::string>> split_csv_line(std::string_view line) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::string field;
    if (i < line.size() && line[i] == '"') {
      ++i;
      // Whole runs between quotes at once: a notes cell is hundreds of characters.
      while (true) {
        const size_t quote = line.find('"', i);
        if (quote == std::string_view::npos) return std::nullopt;  // not closed
        field.append(line.substr(i, quote - i));
        i = quote + 1;
        if (i < line.size() && line[i] == '"') {  // "" inside quotes is one quote
          field += '"';
          ++i;
          continue;
        }
        break;
      }
      // Text after the closing quote up to the comma is kept, as spreadsheet programs do.
      const size_t comma = line.find(',', i);
      field += std::string(trim(line.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i)));
      i = comma;
    } else {
      const size_t comma = line.find(',', i);
      field = std::string(trim(line.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i)));
      i = comma;
    }
    fields.push_back(std::move(field));
    if (i == std::string_view::npos) break;
    ++i;  // past the comma
  }
  return fields;
}

CsvTable parse_csv(std::string_view text, const std::string& source) {
  CsvTable t;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    auto fields = split_csv_line(line);
    if (t.header_line == 0) {
      if (!fields) {
        t.bad_lines.push_back(line_no);
        continue;
      }
      t.header_line = line_no;
      require_unique_columns(*fields, source, line_no);
      for (const auto& f : *fields) t.header.push_back(lower(f));
      continue;
    }
    if (!fields || fields->size() != t.header.size()) {
      t.bad_lines.push_back(line_no);
      continue;
    }
    t.rows.push_back({line_no, std::move(*fields)});
  }
  return t;
}

}  // namespace stepsim::cost
