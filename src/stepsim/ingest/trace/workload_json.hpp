#pragma once
// JsonField: a value of a workload file with its place in the file ("rank0.json: ops[12].bytes"), so that every
// reading error names the file, the key and the rule (exit 2), and absent, null and wrongly typed values are told
// apart without exceptions from the JSON library leaking out.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::trace {

template <typename E>
constexpr int enum_count();
template <>
constexpr int enum_count<workload::ComputeCategory>() { return static_cast<int>(workload::ComputeCategory::Host) + 1; }
template <>
constexpr int enum_count<workload::Phase>() { return static_cast<int>(workload::Phase::Optimizer) + 1; }
template <>
constexpr int enum_count<workload::GroupKind>() { return workload::kNumGroupKinds; }
template <>
constexpr int enum_count<workload::CollType>() { return static_cast<int>(workload::CollType::SendRecv) + 1; }

class JsonField {
 public:
  JsonField(const nlohmann::json& j, const std::string& file, std::string key) : j_(&j), file_(&file), key_(std::move(key)) {}

  [[noreturn]] void fail(const std::string& rule) const {
    throw InputError(*file_ + ": " + (key_.empty() ? std::string("the document") : key_) + ": " + rule);
  }

  JsonField operator[](const char* key) const {
    const std::string k = key_.empty() ? key : key_ + "." + key;
    if (j_ && j_->is_object()) {
      if (auto it = j_->find(key); it != j_->end()) return JsonField(&*it, file_, k);
    }
    return JsonField(nullptr, file_, k);
  }
  JsonField at(size_t i) const { return JsonField(&(*j_)[i], file_, key_ + "[" + std::to_string(i) + "]"); }

  bool absent() const { return j_ == nullptr; }
  bool is_null() const { return j_ && j_->is_null(); }
  bool is_string() const { return j_ && j_->is_string(); }

  size_t size() const {
    if (!j_) fail("is required");
    if (!j_->is_array()) fail("must be an array");
    return j_->size();
  }
  std::string string() const {
    if (!j_) fail("is required");
    if (!j_->is_string()) fail("must be a string");
    return j_->get<std::string>();
  }
  int64_t integer(int64_t min) const {
    if (!j_) fail("is required");
    if (!j_->is_number_integer()) fail("must be an integer");
    const int64_t v = j_->is_number_unsigned() && j_->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                          ? INT64_MAX
                          : j_->get<int64_t>();
    if (v < min) fail("must be at least " + std::to_string(min) + ", not " + std::to_string(v));
    return v;
  }
  // A message's size in bytes: at most 2^50 (1 PiB, as the Chakra importer bounds comm_size); a larger one is a
  // corrupted file, not a collective (2^63 bytes would time a 237-day step).
  uint64_t message_bytes() const {
    const int64_t v = integer(0);
    if (v > (int64_t{1} << 50)) fail("must be at most 2^50 bytes (1 PiB), not " + std::to_string(v));
    return static_cast<uint64_t>(v);
  }
  bool boolean_or(bool fallback) const {
    if (absent() || is_null()) return fallback;
    if (!j_->is_boolean()) fail("must be true or false");
    return j_->get<bool>();
  }
  int64_t integer_or(int64_t fallback, int64_t min) const { return absent() || is_null() ? fallback : integer(min); }
  double number_or(double fallback, double min) const {
    if (absent() || is_null()) return fallback;
    if (!j_->is_number()) fail("must be a number");
    const double v = j_->get<double>();
    if (!(v >= min)) fail("must be at least " + std::to_string(min));
    return v;
  }
  std::vector<int64_t> int_list_or_empty(int64_t min) const {
    std::vector<int64_t> out;
    if (absent() || is_null()) return out;
    for (size_t i = 0; i < size(); ++i) out.push_back(at(i).integer(min));
    return out;
  }
  template <typename E>
  E enumeration() const {
    const std::string s = string();
    std::string known;
    for (int i = 0; i < enum_count<E>(); ++i) {
      const std::string n = workload::name_of(static_cast<E>(i));
      if (n == s) return static_cast<E>(i);
      known += (i ? ", " : "") + n;
    }
    fail("'" + s + "' is not one of " + known);
  }
  template <typename E>
  E enum_or(E fallback) const {
    return absent() || is_null() ? fallback : enumeration<E>();
  }

 private:
  JsonField(const nlohmann::json* j, const std::string* file, std::string key) : j_(j), file_(file), key_(std::move(key)) {}
  const nlohmann::json* j_;
  const std::string* file_;
  std::string key_;
};

}  // namespace stepsim::trace
