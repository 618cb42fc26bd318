// What a bound operator holds. Immutable once built, so calls need no lock.
#ifndef SWITCHYARD_CORE_OPERATOR_STATE_HPP
#define SWITCHYARD_CORE_OPERATOR_STATE_HPP

#include "plugin_library.hpp"

#include <switchyard/switchyard.hpp>

#include <cstdint>
#include <memory>

namespace switchyard {

struct CrossEntropy::State {
  BackendInfo backend;
  sy_ce_problem problem{};               // the bound problem, struct_size = sizeof
  const sy_cross_entropy* table = nullptr;  // the host-side copy inside `library`
  std::int64_t workspace_bytes = 0;
  std::shared_ptr<const detail::PluginLibrary> library;  // keeps the .so loaded
};

struct Norm::State {
  BackendInfo backend;
  sy_norm_problem problem{};
  const sy_norm* table = nullptr;
  std::int64_t workspace_bytes = 0;
  std::shared_ptr<const detail::PluginLibrary> library;
};

}  // namespace switchyard

#endif
