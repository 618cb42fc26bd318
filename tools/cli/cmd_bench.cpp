// `switchyard bench [args]`: runs switchyard-bench, which is installed next to this binary, with
// the arguments as given. The bench parses them itself, so `switchyard bench --help` is its help.
#include "commands.hpp"
#include "output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

namespace switchyard::cli {

namespace fs = std::filesystem;

namespace {

// The folder of the running executable, from /proc/self/exe (symlinks resolved), so that a
// build tree and an installed prefix both find their own switchyard-bench.
fs::path own_folder(std::string& error) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    error = "cannot read /proc/self/exe to find the folder of the switchyard binary: " +
            ec.message();
    return {};
  }
  return self.parent_path();
}

}  // namespace

int cmd_bench(const Args& args) {
  std::string error;
  const fs::path folder = own_folder(error);
  if (folder.empty()) return report_error("bench", error);
  const fs::path bench = folder / "switchyard-bench";
  if (::access(bench.c_str(), X_OK) != 0) {
    const int why = errno;
    return report_error(
        "bench",
        "cannot run switchyard-bench: '" + bench.string() + "' " +
            (why == ENOENT ? std::string("does not exist") : std::strerror(why)) +
            ". It is looked for next to this switchyard binary. bench/ builds it (CMake target "
            "switchyard_bench) only when the conformance suite Switchyard::conformance is part "
            "of the build (sdk/conformance); build it with 'cmake --build <build> --target "
            "switchyard_bench' or install a Switchyard package that includes it");
  }

  std::vector<std::string> argv_strings{bench.string()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  // Anything this process buffered must not be lost with its image.
  std::cout.flush();
  std::cerr.flush();
  ::execv(bench.c_str(), argv.data());
  const int why = errno;  // execv returns only on failure
  return report_error("bench", "cannot run '" + bench.string() + "': " + std::strerror(why));
}

}  // namespace switchyard::cli
