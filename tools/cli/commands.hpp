// The `switchyard` subcommands. Each parses its own arguments (everything after the command
// word), prints to stdout (errors to stderr) and returns the process exit code.
#ifndef SWITCHYARD_CLI_COMMANDS_HPP
#define SWITCHYARD_CLI_COMMANDS_HPP

#include <string>
#include <vector>

namespace switchyard::cli {

using Args = std::vector<std::string>;

int cmd_list(const Args& args);     // cmd_list.cpp
int cmd_inspect(const Args& args);  // cmd_inspect.cpp
int cmd_doctor(const Args& args);   // cmd_doctor.cpp
int cmd_select(const Args& args);   // cmd_select.cpp
int cmd_check(const Args& args);    // cmd_check.cpp   (conformance suite)
int cmd_train(const Args& args);    // cmd_train.cpp   (the demo)
int cmd_cache(const Args& args);    // cmd_cache.cpp   (the fused plugin's JIT kernel cache)
int cmd_bench(const Args& args);    // cmd_bench.cpp   (execs switchyard-bench)

}  // namespace switchyard::cli

#endif
