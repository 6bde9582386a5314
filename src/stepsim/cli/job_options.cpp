#include "stepsim/cli/commands.hpp"

#include <ctime>
#include <filesystem>
#include <string>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "stepsim/api/output_file.hpp"

namespace stepsim::cli {

void add_job_options(CLI::App& cmd, JobOptions& o) {
  cmd.add_option("job", o.job_path, "job file (YAML)");
  cmd.add_option("--megatron-args", o.megatron_args, "the job as a Megatron-LM argument string (with --cluster)");
  cmd.add_option("--torchtitan-config", o.torchtitan_config,
                 "the job as a torchtitan config (TOML, with --cluster; docs/USAGE.md)");
  cmd.add_option("--deepspeed-config", o.deepspeed_config,
                 "the job as a DeepSpeed config (JSON, ZeRO-3), with --hf-config and --cluster (docs/USAGE.md)");
  cmd.add_option("--hf-config", o.hf_config_path,
                 "a Hugging Face config.json as the model: of a job file (its model keys written over it) or of a "
                 "--deepspeed-config");
  cmd.add_option("--cluster", o.cluster_path,
                 "cluster YAML, for --megatron-args, --torchtitan-config or --deepspeed-config");
  cmd.add_option("--set", o.overrides, "override a job key: --set model.num_layers=80 (repeatable)");
}

CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        namespace fs = std::filesystem;
        std::error_code ec;
        const fs::file_status st = fs::status(path, ec);
        if (fs::is_directory(st)) return path + " is a directory; give a file to write";
        if (fs::exists(st)) {
          if (fs::is_regular_file(st) && ::access(path.c_str(), W_OK) != 0) return path + " exists and cannot be written";
          // Linux's "full" device (character device 1:7) accepts the open and fails every write (ENOSPC).
          struct stat raw {};
          if (fs::is_character_file(st) && ::stat(path.c_str(), &raw) == 0 && major(raw.st_rdev) == 1 &&
              minor(raw.st_rdev) == 7) {
            return path + " is the always-full device (every write fails with 'no space left'); give a file to write";
          }
          return "";
        }
        const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
        if (!fs::is_directory(parent, ec)) return path + ": its folder " + parent.string() + " does not exist";
        if (::access(parent.c_str(), W_OK) != 0) return path + ": its folder " + parent.string() + " cannot be written";
        return "";
      },
      "FILE", "output file");
}

CLI::Validator output_folder() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        namespace fs = std::filesystem;
        std::error_code ec;
        if (fs::exists(path, ec)) {
          if (!fs::is_directory(path, ec)) return path + " exists and is not a folder; give a folder to write into";
          if (::access(path.c_str(), W_OK) != 0) return path + " is a folder that cannot be written";
          return "";
        }
        // The nearest existing ancestor is where the missing folders would be created.
        fs::path up = fs::absolute(path, ec).parent_path();
        while (!up.empty() && !fs::exists(up, ec) && up != up.root_path()) up = up.parent_path();
        if (!fs::is_directory(up, ec)) return path + ": " + up.string() + " is not a folder, so the folder cannot be created";
        if (::access(up.c_str(), W_OK) != 0) return path + ": " + up.string() + " cannot be written, so the folder cannot be created";
        return "";
      },
      "DIR", "output folder");
}

CLI::Validator whole_number_at_least(long long min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        long long v = 0;
        size_t used = 0;
        try {
          v = std::stoll(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != value.size()) return "must be a whole number, got '" + value + "'";
        if (v < min) return "must be at least " + std::to_string(min) + ", got " + value;
        return "";
      },
      "INT", "whole number");
}

void write_output_file(const std::string& path, const std::string& text, const std::string& what) {
  api::write_output_file(path, text, what);
}

}  // namespace stepsim::cli

namespace stepsim::cli {

std::string utc_now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace stepsim::cli
