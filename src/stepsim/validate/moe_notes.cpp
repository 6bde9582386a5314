#include "stepsim/validate/moe_notes.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "stepsim/validate/published_run.hpp"

namespace stepsim::validate {
namespace {

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// The position of the first `word` in `text` that no letter or digit precedes, or npos.
size_t find_word_start(const std::string& text, const std::string& word, size_t from = 0) {
  for (size_t at = text.find(word, from); at != std::string::npos; at = text.find(word, at + 1)) {
    if (at == 0 || !is_identifier_char(text[at - 1])) return at;
  }
  return std::string::npos;
}

// The token-drop phrase: where "token-drop" / "token drop" starts, skipping "token-dropless".
size_t find_token_drop(const std::string& notes) {
  for (const char* spelling : {"token-drop", "token drop"}) {
    const std::string word(spelling);
    for (size_t at = notes.find(word); at != std::string::npos; at = notes.find(word, at + 1)) {
      if (notes.compare(at + word.size(), 4, "less") != 0) return at;
    }
  }
  return std::string::npos;
}

}  // namespace

std::optional<int> stated_expert_tensor(const std::string& notes) {
  const std::string l = lower_case(notes);
  for (size_t at = find_word_start(l, "etp"); at != std::string::npos; at = find_word_start(l, "etp", at + 1)) {
    size_t p = at + 3;
    if (p < l.size() && l[p] == ' ') ++p;
    size_t e = p;
    while (e < l.size() && std::isdigit(static_cast<unsigned char>(l[e])) != 0 && e - p < 4) ++e;
    if (e == p || (e < l.size() && is_identifier_char(l[e]))) continue;
    const int n = std::atoi(l.substr(p, e - p).c_str());
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
  for (const char* key : {"capacity factor ", "capacity "}) {
    const size_t c = phrase.find(key);
    if (c == std::string::npos) continue;
    char* stop = nullptr;
    const double v = std::strtod(phrase.c_str() + c + std::char_traits<char>::length(key), &stop);
    if (stop != phrase.c_str() + c + std::char_traits<char>::length(key) && v > 0) d.capacity_factor = v;
    break;
  }
  if (phrase.find("no pad") != std::string::npos || phrase.find("unpadded") != std::string::npos) {
    d.pad_to_capacity = false;
  }
  return d;
}

}  // namespace stepsim::validate
