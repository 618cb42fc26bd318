// Prints the level the core's logger took from SWITCHYARD_LOG_LEVEL ("level=<name>").
#include "log.hpp"

#include <cstdio>
#include <string>

int main() {
  const auto name = spdlog::level::to_string_view(switchyard::detail::logger().level());
  std::printf("level=%s\n", std::string(name.data(), name.size()).c_str());
  return 0;
}
