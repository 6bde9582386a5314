#pragma once
// HTML reports of `plan`, `reliability` and `validate` (`--report OUT.html`, docs/REPORTS.md), each built from what
// the command's --json writes plus the series only the report draws, so that every chart can be checked against the
// command's own JSON.
#include <string>

#include <nlohmann/json.hpp>

namespace stepsim::report {

// plan_json: `plan --json`; memory_map: {"capacity_gib", "settings", "tensors": [..], "pipelines": [..],
// "cells": [{"tensor", "pipeline", "data", "status": fits|tight|over|invalid, "peak_gib", "headroom_gib", "reason"}]}.
std::string plan_report_html(const nlohmann::json& plan_json, const nlohmann::json& memory_map);
// rel_json: `reliability --json`; curve: [{"interval", "ettr"}] over checkpoint intervals.
std::string reliability_report_html(const nlohmann::json& rel_json, const nlohmann::json& curve);
// validate_json: `validate --json`.
std::string validate_report_html(const nlohmann::json& validate_json, const std::string& csv);

}  // namespace stepsim::report
