#pragma once
// A CSV file as measurement readers need it: a header of column names and rows that keep their line numbers, so
// that a bad row can be skipped, counted and named instead of failing the whole file.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::cost {

struct CsvTable {
  struct Row {
    int line = 0;  // 1-based line in the text
    std::vector<std::string> fields;
  };
  int header_line = 0;              // 0: the text has no header line
  std::vector<std::string> header;  // trimmed, lower case
  std::vector<Row> rows;            // rows with as many fields as the header
  std::vector<int> bad_lines;       // rows with another field count or an unterminated quote

  // Index of a column (names compared in lower case), -1 when absent.
  int column(std::string_view name) const;
};

// One line split at commas with RFC 4180 quoting ("a,b" and "" inside quotes); fields are trimmed of spaces
// outside quotes. nullopt for an unterminated quote (records spanning lines are not supported).
std::optional<std::vector<std::string>> split_csv_line(std::string_view line);

// Blank lines and lines starting with '#' are skipped; the first other line is the header. A header naming a column
// twice (compared in lower case) is refused (InputError naming `source`, the line and the column): a reader would
// silently take one of the two.
CsvTable parse_csv(std::string_view text, const std::string& source);

}  // namespace stepsim::cost
