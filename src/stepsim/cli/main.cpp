// stepsim command line. Exit codes: 0 ok, 2 bad input (one message naming the key and the rule),
// 1 internal error.
#include <iostream>

#include "stepsim/cli/cmd_plan.hpp"
#include "stepsim/cli/cmd_profile.hpp"
#include "stepsim/cli/cmd_slowdown.hpp"
#include "stepsim/cli/cmd_trace.hpp"
#include "stepsim/cli/commands.hpp"
#include "stepsim/io/input_error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"stepsim: predict the step time, memory and communication of distributed LLM training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stepsim 0.1.0");
  std::vector<stepsim::cli::Action> actions{stepsim::cli::add_simulate(app), stepsim::cli::add_memory(app),
                                           stepsim::cli::add_comm(app), stepsim::cli::add_calibrate(app)};
  actions.push_back(stepsim::cli::add_reliability(app));
  actions.push_back(stepsim::cli::add_whatif(app));
  actions.push_back(stepsim::cli::add_slowdown(app));
  actions.push_back(stepsim::cli::add_plan(app));
  actions.push_back(stepsim::cli::add_profile(app));
  actions.push_back(stepsim::cli::add_trace(app));
  actions.push_back(stepsim::cli::add_compare(app));
  actions.push_back(stepsim::cli::add_validate(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "stepsim: " << e.what() << " (see stepsim --help)\n";
    return 2;
  }
  try {
    for (const auto& act : actions) {
      const int rc = act();
      if (rc >= 0) return rc;
    }
    return 2;
  } catch (const stepsim::InputError& e) {
    std::cerr << "stepsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "stepsim: internal error: " << e.what() << "\n";
    return 1;
  }
}
