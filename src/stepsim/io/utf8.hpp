#pragma once
// Text stepsim writes (JSON, traces, reports) is valid UTF-8 whatever bytes a user's file carried in a name (a model,
// an NCCL host, a CSV id, a kernel): each byte that does not belong to a well-formed UTF-8 sequence becomes U+FFFD.
// One rule at the edge, so no writer fails on a user's bytes and every file stepsim writes, it can read back.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace stepsim::io {

std::string valid_utf8(std::string_view s);
// j as JSON text (indent as nlohmann's dump; -1 = compact), ill-formed UTF-8 in its strings replaced, never thrown on.
std::string json_text(const nlohmann::json& j, int indent = -1);

}  // namespace stepsim::io
