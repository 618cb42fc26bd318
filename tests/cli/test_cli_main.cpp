// The command word, --help, --version, and errors for unknown commands and flags.
#include "cli_runner.hpp"

#include <doctest/doctest.h>

using namespace switchyard::test;

TEST_CASE("--version prints the core version and the plugin ABI") {
  const auto result = run_cli({"--version"});
  CHECK(result.exit_code == 0);
  CHECK(result.out.rfind("switchyard ", 0) == 0);
  CHECK(result.out.find("plugin ABI 1.") != std::string::npos);
  CHECK(result.err.empty());
}

TEST_CASE("--help lists every command; no command at all is a usage error on stderr") {
  const auto help = run_cli({"--help"});
  CHECK(help.exit_code == 0);
  for (const char* command : {"list", "inspect", "doctor", "select", "check", "train"})
    CHECK_MESSAGE(help.out.find(std::string("\n  ") + command + " ") != std::string::npos, command);

  const auto bare = run_cli({});
  CHECK(bare.exit_code == 2);
  CHECK(bare.out.empty());
  CHECK(bare.err.find("usage: switchyard <command>") != std::string::npos);
}

TEST_CASE("an unknown command exits 2 with a did-you-mean on stderr") {
  const auto result = run_cli({"lsit"});
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
  CHECK(result.err.find("unknown command 'lsit'") != std::string::npos);
  CHECK(result.err.find("did you mean 'list'?") != std::string::npos);

  const auto far = run_cli({"frobnicate"});
  CHECK(far.exit_code == 2);
  CHECK(far.err.find("unknown command 'frobnicate'") != std::string::npos);
  CHECK(far.err.find("did you mean") == std::string::npos);  // nothing is close
  CHECK(far.err.find("list, inspect, doctor, select") != std::string::npos);

  const auto option_first = run_cli({"--verison"});
  CHECK(option_first.exit_code == 2);
  CHECK(option_first.err.find("did you mean '--version'?") != std::string::npos);
}

TEST_CASE("an unknown flag exits 2 and names the flag with a did-you-mean") {
  const auto list = run_cli({"list", "--jsno"});
  CHECK(list.exit_code == 2);
  CHECK(list.out.empty());
  CHECK(list.err.find("switchyard list: error: unknown option '--jsno'") != std::string::npos);
  CHECK(list.err.find("did you mean '--json'?") != std::string::npos);

  // Megatron's flag, misspelt; the value after '=' is not part of the suggestion.
  const auto select = run_cli({"select", "--cross-entropy-fusion-iml=te"});
  CHECK(select.exit_code == 2);
  CHECK(select.err.find("unknown option '--cross-entropy-fusion-iml'") != std::string::npos);
  CHECK(select.err.find("did you mean '--cross-entropy-fusion-impl'?") != std::string::npos);

  // Abbreviations are not guessed: strict parsing.
  const auto abbreviated = run_cli({"select", "--cross-entropy-loss"});
  CHECK(abbreviated.exit_code == 2);
  CHECK(abbreviated.err.find("'--cross-entropy-loss'") != std::string::npos);

  const auto extra = run_cli({"doctor", "stray"});
  CHECK(extra.exit_code == 2);
  CHECK(extra.err.find("unexpected argument 'stray'") != std::string::npos);
  const auto one_too_many = run_cli({"inspect", "first", "second"});
  CHECK(one_too_many.exit_code == 2);
  CHECK(one_too_many.err.find("unexpected argument 'second';") != std::string::npos);
}

TEST_CASE("every command has --help and -h naming its own and the selection flags") {
  for (const char* command : {"list", "inspect", "doctor", "select"}) {
    for (const char* flag : {"--help", "-h"}) {
      const auto result = run_cli({command, flag});
      CHECK_MESSAGE(result.exit_code == 0, command << ' ' << flag);
      CHECK(result.out.find(std::string("usage: switchyard ") + command) != std::string::npos);
      CHECK(result.out.find("--cross-entropy-fusion-impl") != std::string::npos);
      CHECK(result.out.find("--json") != std::string::npos);
    }
  }
  CHECK(run_cli({"select", "--help"}).out.find("--family") != std::string::npos);
  CHECK(run_cli({"help", "inspect"}).out.find("usage: switchyard inspect <name|path>") !=
        std::string::npos);
}

TEST_CASE("a selection value the core rejects is an error on stderr, not a crash") {
  const auto result = run_cli({"select", "--normalization", "BatchNorm"});
  CHECK(result.exit_code == 1);
  CHECK(result.signal == 0);
  CHECK(result.err.find("switchyard select: error:") != std::string::npos);
  CHECK(result.err.find("BatchNorm") != std::string::npos);
}
