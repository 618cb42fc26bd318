// CrossEntropy and Norm: bound operators that pass calls straight to their plugin.
#include "host_services.hpp"
#include "operator_state.hpp"

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/switchyard.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <utility>

namespace switchyard {
namespace {

bool has_message(const sy_error* err) {
  return err != nullptr && SY_HAS_FIELD(sy_error, message, err->struct_size);
}

// Runs one plugin call. Args whose `problem` is NULL get the bound problem, through a local
// copy (the caller's struct is never written). Nothing escapes: a plugin that lets an
// exception out is reported as SY_ERR_INTERNAL.
template <class Args, class Problem, class Call>
sy_status call_plugin(const char* what, const BackendInfo& backend,
                      const detail::PluginLibrary& library, const Problem& bound,
                      const Args& args, sy_error* err, Call call) noexcept {
  try {
    if (!SY_HAS_FIELD(Args, problem, args.struct_size)) {
      return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                           "%s: args.struct_size is %zu, too small to hold its fields; set it "
                           "to sizeof the args struct (%zu)",
                           what, args.struct_size, sizeof(Args));
    }
    detail::HostCallScope scope(&library.host(), nullptr);
    sy_status status = SY_OK;
    if (args.problem != nullptr) {
      status = call(&args, err);
    } else {
      // Only the bytes the caller's struct_size covers exist; a larger struct (newer header)
      // is cut to what this host knows.
      Args with_problem{};
      const std::size_t size = std::min(args.struct_size, sizeof(Args));
      std::memcpy(static_cast<void*>(&with_problem), static_cast<const void*>(&args), size);
      with_problem.struct_size = size;
      with_problem.problem = &bound;
      status = call(&with_problem, err);
    }
    if (status != SY_OK && err != nullptr && SY_HAS_FIELD(sy_error, status, err->struct_size))
      err->status = status;
    if (status != SY_OK && has_message(err) && err->message[0] == '\0') {
      sy::set_error(err, status, "%s of backend '%s' returned %s without a message", what,
                    backend.name.c_str(), status_name(status));
    }
    return status;
  } catch (const std::exception& e) {
    return sy::set_error(err, SY_ERR_INTERNAL,
                         "%s of backend '%s' let a C++ exception escape: %s", what,
                         backend.name.c_str(), e.what());
  } catch (...) {
    return sy::set_error(err, SY_ERR_INTERNAL,
                         "%s of backend '%s' let an unknown C++ exception escape", what,
                         backend.name.c_str());
  }
}

void throw_on_failure(const char* what, const BackendInfo& backend, sy_status status,
                      const sy_error& err) {
  if (status == SY_OK) return;
  std::string message(err.message, strnlen(err.message, sizeof err.message));
  throw Error(status, std::string(what) + " (backend '" + backend.name + "') failed with " +
                          status_name(status) + ": " + message);
}

}  // namespace

// ---- CrossEntropy -----------------------------------------------------------------------

CrossEntropy::CrossEntropy(std::shared_ptr<const State> state) : state_(std::move(state)) {}

const BackendInfo& CrossEntropy::backend() const { return state_->backend; }
const sy_ce_problem& CrossEntropy::problem() const { return state_->problem; }
int64_t CrossEntropy::workspace_size() const { return state_->workspace_bytes; }

sy_status CrossEntropy::forward(const sy_ce_forward_args& args, sy_error* err) const noexcept {
  return call_plugin("cross_entropy forward", state_->backend, *state_->library,
                     state_->problem, args, err, state_->table->forward);
}

sy_status CrossEntropy::backward(const sy_ce_backward_args& args, sy_error* err) const noexcept {
  return call_plugin("cross_entropy backward", state_->backend, *state_->library,
                     state_->problem, args, err, state_->table->backward);
}

void CrossEntropy::forward(const sy_ce_forward_args& args) const {
  sy_error err{sizeof(sy_error), SY_OK, {}};
  throw_on_failure("cross_entropy forward", state_->backend, forward(args, &err), err);
}

void CrossEntropy::backward(const sy_ce_backward_args& args) const {
  sy_error err{sizeof(sy_error), SY_OK, {}};
  throw_on_failure("cross_entropy backward", state_->backend, backward(args, &err), err);
}

// ---- Norm -------------------------------------------------------------------------------

Norm::Norm(std::shared_ptr<const State> state) : state_(std::move(state)) {}

const BackendInfo& Norm::backend() const { return state_->backend; }
const sy_norm_problem& Norm::problem() const { return state_->problem; }
int64_t Norm::workspace_size() const { return state_->workspace_bytes; }

sy_status Norm::forward(const sy_norm_forward_args& args, sy_error* err) const noexcept {
  return call_plugin("norm forward", state_->backend, *state_->library, state_->problem, args,
                     err, state_->table->forward);
}

sy_status Norm::backward(const sy_norm_backward_args& args, sy_error* err) const noexcept {
  return call_plugin("norm backward", state_->backend, *state_->library, state_->problem, args,
                     err, state_->table->backward);
}

void Norm::forward(const sy_norm_forward_args& args) const {
  sy_error err{sizeof(sy_error), SY_OK, {}};
  throw_on_failure("norm forward", state_->backend, forward(args, &err), err);
}

void Norm::backward(const sy_norm_backward_args& args) const {
  sy_error err{sizeof(sy_error), SY_OK, {}};
  throw_on_failure("norm backward", state_->backend, backward(args, &err), err);
}

}  // namespace switchyard
