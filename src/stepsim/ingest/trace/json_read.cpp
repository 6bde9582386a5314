#include "stepsim/ingest/trace/json_read.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "stepsim/io/input_error.hpp"

namespace stepsim::trace::json {

void for_each_event(od::array events, const std::function<void(od::object)>& each) {
  for (auto e : events) {
    od::value ev;
    if (const auto err = e.get(ev)) throw simdjson::simdjson_error(err);
    od::object o;
    const auto err = ev.get_object().get(o);
    if (err == simdjson::INCORRECT_TYPE) continue;  // not an event
    if (err) throw simdjson::simdjson_error(err);
    each(o);
  }
}

void for_each_root_field(const TextBuffer& text, const std::string& name,
                         const std::function<void(std::string_view key, od::value v)>& field) {
  if (text.size > kMaxTraceBytes)
    throw InputError(name + ": the trace is larger than the limit of " + std::to_string(kMaxTraceBytes) + " bytes");
  // simdjson indexes every structural character and every value's start, 4 bytes each, before it parses: at most
  // two per punctuation character. Real Kineto traces are 12-13 % punctuation; text built to be all punctuation
  // would take four times its size.
  size_t punctuation = 0;
  for (size_t i = 0; i < text.size; ++i) {
    const char c = text.data[i];
    punctuation += c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']';
  }
  if (punctuation > kMaxTracePunctuation) {
    throw InputError(name + ": " + std::to_string(punctuation) + " JSON punctuation characters, over the limit of " +
                     std::to_string(kMaxTracePunctuation) + " (simdjson's index of them would exceed 768 MiB)");
  }
  try {
    od::parser parser(std::max<size_t>(text.size, 64));
    od::document doc = parser.iterate(text.data.get(), text.size, text.capacity);
    od::object root;
    const auto err = doc.get_object().get(root);
    if (err == simdjson::INCORRECT_TYPE) throw InputError(name + ": a trace must be a JSON object");
    if (err) throw simdjson::simdjson_error(err);
    for (auto f : root) {
      const std::string_view key = f.unescaped_key();
      field(key, f.value());
    }
  } catch (const simdjson::simdjson_error& e) {
    throw InputError(name + ": not valid JSON (simdjson: " + e.what() + ")");
  }
}

namespace {
// The characters of a JSON string starting just after its opening quote, up to the closing quote, when none of them is
// an escape; nullopt when one is. The text is padded (simdjson's padding) and valid JSON, so the closing quote comes
// before the end.
std::optional<std::string_view> unescaped_run(const char* p) {
  for (const char* q = p;; ++q) {
    if (*q == '"') return std::string_view(p, static_cast<size_t>(q - p));
    if (*q == '\\' || *q == '\0') return std::nullopt;
  }
}
}  // namespace

std::string_view key_of(od::field& f) {
  if (const auto run = unescaped_run(reinterpret_cast<const char*>(f.key().raw()))) return *run;
  std::string_view k;
  throw_if(f.unescaped_key().get(k));
  return k;
}

bool string_view_of(od::value v, std::string_view& out) {
  const std::string_view token = v.raw_json_token();
  if (token.empty() || token.front() != '"') return false;
  if (const auto run = unescaped_run(token.data() + 1)) {
    out = *run;
    return true;
  }
  return !v.get_string().get(out);
}

std::optional<int64_t> int_of(od::value v) {
  od::json_type t;
  if (v.type().get(t) || t != od::json_type::number) return std::nullopt;
  od::number_type nt;
  if (v.get_number_type().get(nt)) return std::nullopt;
  if (nt == od::number_type::signed_integer) {
    int64_t i;
    if (v.get_int64().get(i)) return std::nullopt;
    return i;
  }
  double d;
  if (v.get_double().get(d)) return std::nullopt;
  if (!(std::fabs(d) < 9.2e18) || d != std::floor(d)) return std::nullopt;
  return static_cast<int64_t>(d);
}

std::optional<int64_t> int_or_string_of(od::value v) {
  od::json_type t;
  if (v.type().get(t)) return std::nullopt;
  if (t == od::json_type::number) return int_of(v);
  if (t != od::json_type::string) return std::nullopt;
  std::string_view s;
  if (v.get_string().get(s)) return std::nullopt;
  int64_t i = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), i);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return i;
}

std::optional<std::string> string_of(od::value v) {
  od::json_type t;
  if (v.type().get(t) || t != od::json_type::string) return std::nullopt;
  std::string_view s;
  if (v.get_string().get(s)) return std::nullopt;
  return std::string(s);
}

std::optional<int64_t> micros_to_ns(od::value v) {
  od::json_type t;
  if (v.type().get(t) || t != od::json_type::number) return std::nullopt;
  // Parse the token itself: a double holds epoch microseconds exactly but not epoch nanoseconds.
  std::string_view tok = v.raw_json_token();
  while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t'))
    tok.remove_suffix(1);
  const bool neg = !tok.empty() && tok.front() == '-';
  if (neg) tok.remove_prefix(1);
  const size_t dot = tok.find('.');
  const bool plain = tok.find_first_of("eE") == std::string_view::npos;
  if (plain) {
    const std::string_view ip = tok.substr(0, dot);
    if (ip.empty() || ip.size() > 18) return std::nullopt;
    int64_t us = 0;
    const auto r = std::from_chars(ip.data(), ip.data() + ip.size(), us);
    if (r.ec != std::errc() || r.ptr != ip.data() + ip.size()) return std::nullopt;
    if (us >= int64_t{9'000'000'000'000'000}) return std::nullopt;  // x1000 + 999 must fit in int64
    int64_t frac = 0;
    if (dot != std::string_view::npos) {
      const std::string_view fp = tok.substr(dot + 1);
      for (char c : fp)
        if (c < '0' || c > '9') return std::nullopt;
      for (size_t i = 0; i < 3; ++i) frac = frac * 10 + (i < fp.size() ? fp[i] - '0' : 0);
    }
    const int64_t ns = us * 1000 + frac;
    return neg ? -ns : ns;
  }
  double d;
  if (v.get_double().get(d)) return std::nullopt;
  const double ns = d * 1000.0;
  if (!(std::fabs(ns) < 4.6e18)) return std::nullopt;
  return static_cast<int64_t>(ns);
}

std::vector<int> int_list_of(od::value v, size_t limit) {
  std::vector<int> out;
  od::json_type t;
  if (v.type().get(t)) return out;
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return out;
    size_t i = 0;
    while (i < s.size() && out.size() < limit) {
      if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
        int x = 0;
        const auto r = std::from_chars(s.data() + i, s.data() + s.size(), x);
        if (r.ec != std::errc()) return {};
        out.push_back(x);
        i = static_cast<size_t>(r.ptr - s.data());
      } else {
        ++i;
      }
    }
  } else if (t == od::json_type::array) {
    od::array a;
    if (v.get_array().get(a)) return out;
    for (auto e : a) {
      od::value ev;
      if (e.get(ev)) throw simdjson::simdjson_error(e.error());
      if (auto x = int_of(ev); x && *x >= INT32_MIN && *x <= INT32_MAX && out.size() < limit)
        out.push_back(static_cast<int>(*x));
    }
  }
  return out;
}

}  // namespace stepsim::trace::json
