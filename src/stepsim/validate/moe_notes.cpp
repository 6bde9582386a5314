#include "stepsim/validate/moe_notes.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <system_error>

#include "stepsim/validate/published_run.hpp"

namespace stepsim::validate {
namespace {

bool preceded_by(const std::string& text, size_t at, const std::string& word) {
  return at >= word.size() && text.compare(at - word.size(), word.size(), word) == 0;
}

// The token-drop phrase: where "token-drop" / "token drop" starts, skipping "token-dropless" and a negated one ("no
// token drop", "without token-drop").
size_t find_token_drop(const std::string& notes) {
  for (const char* spelling : {"token-drop", "token drop"}) {
    const std::string word(spelling);
    for (size_t at = notes.find(word); at != std::string::npos; at = notes.find(word, at + 1)) {
      if (notes.compare(at + word.size(), 4, "less") == 0) continue;
      if (preceded_by(notes, at, "no ") || preceded_by(notes, at, "without ")) continue;
      return at;
    }
  }
  return std::string::npos;
}

// A capacity factor written as digits and one point ("1.0", "2"), in Megatron's accepted range; none otherwise.
std::optional<double> capacity_number(const std::string& text, size_t at) {
  size_t e = at;
  while (e < text.size() && e - at < 12 &&
         (std::isdigit(static_cast<unsigned char>(text[e])) != 0 || text[e] == '.')) {
    ++e;
  }
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data() + at, text.data() + e, v, std::chars_format::fixed);
  if (ec != std::errc() || p == text.data() + at || !(v >= 0.01 && v <= 1000)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int> stated_expert_tensor(const std::string& notes) {
  const std::string l = lower_case(notes);
  for (size_t at = find_word(l, "etp", 0); at != std::string::npos; at = find_word(l, "etp", at + 1)) {
    size_t p = at + 3;
    if (p < l.size() && l[p] == ' ') ++p;
    size_t e = p;
    while (e < l.size() && std::isdigit(static_cast<unsigned char>(l[e])) != 0 && e - p < 4) ++e;
    if (e == p || (e < l.size() && is_word_char(l[e]))) continue;
    int n = 0;
    std::from_chars(l.data() + p, l.data() + e, n);
    if (n >= 1) return n;
  }
  return std::nullopt;
}

std::optional<TokenDrop> stated_token_drop(const std::string& notes) {
  const std::string l = lower_case(notes);
  const size_t at = find_token_drop(l);
  if (at == std::string::npos) return std::nullopt;
  TokenDrop d;
  // The phrase runs to the end of its parenthesis or sentence (a period and a space: "1.0" is a number):
  // "TOKEN-DROP routing (... capacity 1.0, padded)".
  size_t end = l.size();
  for (const char* stop : {")", ";", ". "}) end = std::min(end, l.find(stop, at));
  const std::string phrase = l.substr(at, end - at);
  for (const std::string key : {"capacity factor ", "capacity "}) {
    const size_t c = phrase.find(key);
    if (c == std::string::npos) continue;
    if (const auto v = capacity_number(phrase, c + key.size())) d.capacity_factor = *v;
    break;
  }
  for (const char* off : {"no pad", "not pad", "without pad", "unpadded", "padding off"}) {
    if (phrase.find(off) != std::string::npos) d.pad_to_capacity = false;
  }
  return d;
}

}  // namespace stepsim::validate
