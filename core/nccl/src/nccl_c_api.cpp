// The C API of libswitchyard-nccl (switchyard/nccl.h) over the C++ one. No exception leaves
// these functions.
#include <switchyard/nccl.h>
#include <switchyard/nccl.hpp>

#include <switchyard/plugin_helpers.hpp>

#include <memory>
#include <new>
#include <string>
#include <utility>

struct sy_nccl_comm {
  explicit sy_nccl_comm(switchyard::NcclComm c) : comm(std::move(c)) {}
  switchyard::NcclComm comm;
};

static_assert(SY_NCCL_UNIQUE_ID_BYTES == switchyard::NcclUniqueId::kBytes, "id size");
static_assert(SY_NCCL_UNIQUE_ID_HEX_CHARS == switchyard::NcclUniqueId::kHexChars, "hex size");

namespace {

// Runs fn, turning switchyard::Error into its status and anything else into a status too.
template <class Fn>
sy_status c_boundary(sy_error* err, Fn&& fn) noexcept {
  try {
    sy::clear_error(err);
    return fn();
  } catch (const switchyard::Error& e) {
    return sy::set_error(err, e.status(), "%s", e.what());
  } catch (const std::bad_alloc&) {
    return sy::set_error(err, SY_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return sy::set_error(err, SY_ERR_INTERNAL, "internal error (C++ exception): %s", e.what());
  } catch (...) {
    return sy::set_error(err, SY_ERR_INTERNAL, "internal error: unknown C++ exception");
  }
}

sy_status check_out(const char* function, sy_nccl_comm** out, sy_error* err) {
  if (out == nullptr) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                         "%s: out is NULL; expected the address of an sy_nccl_comm* to fill.",
                         function);
  }
  *out = nullptr;
  return SY_OK;
}

switchyard::NcclUniqueId parse_id(const char* function, const char* unique_id_hex) {
  if (unique_id_hex == nullptr) {
    throw switchyard::Error(SY_ERR_INVALID_ARGUMENT,
                            std::string(function) +
                                ": unique_id_hex is NULL; expected the text written by "
                                "sy_nccl_get_unique_id.");
  }
  return switchyard::NcclUniqueId::from_hex(unique_id_hex);
}

sy_status hand_out(switchyard::NcclComm comm, sy_nccl_comm** out) {
  *out = std::make_unique<sy_nccl_comm>(std::move(comm)).release();  // freed by destroy
  return SY_OK;
}

}  // namespace

extern "C" {

sy_status sy_nccl_get_unique_id(char* hex, size_t capacity, sy_error* err) {
  return c_boundary(err, [&]() -> sy_status {
    constexpr size_t needed = SY_NCCL_UNIQUE_ID_HEX_CHARS + 1;
    if (hex == nullptr || capacity < needed) {
      return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                           "sy_nccl_get_unique_id: %s; expected a buffer of at least %zu bytes "
                           "(SY_NCCL_UNIQUE_ID_HEX_CHARS + 1).",
                           hex == nullptr ? "hex is NULL"
                                          : ("capacity is " + std::to_string(capacity) +
                                             " bytes").c_str(),
                           needed);
    }
    const std::string text = switchyard::NcclUniqueId::create().to_hex();
    text.copy(hex, text.size());
    hex[text.size()] = '\0';
    return SY_OK;
  });
}

sy_status sy_nccl_comm_wrap(void* nccl_comm, int32_t device, sy_nccl_comm** out,
                            sy_error* err) {
  return c_boundary(err, [&]() -> sy_status {
    if (sy_status s = check_out("sy_nccl_comm_wrap", out, err); s != SY_OK) return s;
    if (nccl_comm == nullptr) {
      return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                           "sy_nccl_comm_wrap: nccl_comm is NULL; expected an ncclComm_t "
                           "created by ncclCommInitRank or ncclCommInitAll (or taken from your "
                           "framework's process group), or call sy_nccl_comm_create_local / "
                           "sy_nccl_comm_create to make one.");
    }
    return hand_out(switchyard::NcclComm::wrap(static_cast<ncclComm*>(nccl_comm), device), out);
  });
}

sy_status sy_nccl_comm_create_local(const char* unique_id_hex, int32_t size, int32_t rank,
                                    sy_nccl_comm** out, sy_error* err) {
  return c_boundary(err, [&]() -> sy_status {
    const char* function = "sy_nccl_comm_create_local";
    if (sy_status s = check_out(function, out, err); s != SY_OK) return s;
    const switchyard::NcclUniqueId id = parse_id(function, unique_id_hex);
    return hand_out(switchyard::NcclComm::create_local(id, size, rank), out);
  });
}

sy_status sy_nccl_comm_create(const char* unique_id_hex, int32_t size, int32_t rank,
                              int32_t device, sy_nccl_comm** out, sy_error* err) {
  return c_boundary(err, [&]() -> sy_status {
    const char* function = "sy_nccl_comm_create";
    if (sy_status s = check_out(function, out, err); s != SY_OK) return s;
    const switchyard::NcclUniqueId id = parse_id(function, unique_id_hex);
    return hand_out(switchyard::NcclComm::create(id, size, rank, device), out);
  });
}

void sy_nccl_comm_destroy(sy_nccl_comm* comm) {
  std::unique_ptr<sy_nccl_comm> owned(comm);  // takes back what hand_out released
}

const sy_comm* sy_nccl_comm_get(const sy_nccl_comm* comm) {
  return comm != nullptr ? comm->comm.get() : nullptr;
}

void* sy_nccl_comm_native(const sy_nccl_comm* comm) {
  return comm != nullptr ? static_cast<void*>(comm->comm.native()) : nullptr;
}

int64_t sy_nccl_comm_collectives(const sy_nccl_comm* comm) {
  return comm != nullptr ? comm->comm.collectives() : 0;
}

int64_t sy_nccl_comm_all_reduces(const sy_nccl_comm* comm) {
  return comm != nullptr ? comm->comm.all_reduces() : 0;
}

int64_t sy_nccl_comm_all_gathers(const sy_nccl_comm* comm) {
  return comm != nullptr ? comm->comm.all_gathers() : 0;
}

void sy_nccl_comm_reset_counts(sy_nccl_comm* comm) {
  if (comm != nullptr) comm->comm.reset_counts();
}

}  // extern "C"
