#pragma once
// The JSON files users hand in (a Hugging Face config.json, a DeepSpeed config) read one way: at most 16 MiB and 64
// levels of nesting, and a key written twice in one object refused, as a job file's duplicate YAML keys are.
#include <string>

#include <nlohmann/json.hpp>

namespace stepsim::spec {

// Parses `text`; InputError "<source>: ..." naming the byte or the key for malformed JSON, a repeated key, nesting
// deeper than 64 levels or a text above 16 MiB.
nlohmann::json parse_strict_json(const std::string& text, const std::string& source);

}  // namespace stepsim::spec
