// Which backends run, per family: the ones asked for with --backends, or every plugin that
// discovery found usable here and that declares the family and the device.
#ifndef SWITCHYARD_BENCH_BACKENDS_HPP
#define SWITCHYARD_BENCH_BACKENDS_HPP

#include <switchyard/switchyard.hpp>

#include <dlpack/dlpack.h>

#include <string>
#include <vector>

namespace switchyard::bench {

struct NotRun {
  std::string family;  // "ce" | "norm"
  std::string name;
  std::string reason;
};

struct BackendPlan {
  std::vector<std::string> names;  // in search-path order (or as requested)
  std::vector<NotRun> not_run;     // plugins found or requested that will not run, and why
};

BackendPlan plan_backends(const std::vector<SearchLocation>& found, Family family,
                          DLDeviceType device, const std::vector<std::string>& requested);

}  // namespace switchyard::bench

#endif
