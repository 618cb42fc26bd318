// Opening libswitchyard-nccl with dlopen and calling its C API through function pointers.
#include <switchyard/lm_head/nccl_library.hpp>

// Only the declarations: the types of the functions looked up below. Nothing is linked.
#include <switchyard/nccl.h>
#include <switchyard/switchyard.hpp>

#include <cstdlib>
#include <filesystem>

#include <dlfcn.h>

#ifndef SWITCHYARD_LM_HEAD_LIBDIR
#define SWITCHYARD_LM_HEAD_LIBDIR "lib"
#endif
#ifndef SWITCHYARD_LM_HEAD_NCCL_SONAME
#define SWITCHYARD_LM_HEAD_NCCL_SONAME "libswitchyard-nccl.so.0"
#endif

namespace switchyard::lm_head {

struct NcclLibrary::Functions {
  decltype(&sy_nccl_get_unique_id) get_unique_id = nullptr;
  decltype(&sy_nccl_comm_create) create = nullptr;
  decltype(&sy_nccl_comm_destroy) destroy = nullptr;
  decltype(&sy_nccl_comm_get) get = nullptr;
};

struct NcclRankComm::Handle {
  std::shared_ptr<const NcclLibrary::Functions> functions;
  sy_nccl_comm* comm = nullptr;
  ~Handle() {
    if (comm != nullptr) functions->destroy(comm);
  }
};

NcclRankComm::NcclRankComm(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}
NcclRankComm::NcclRankComm(NcclRankComm&&) noexcept = default;
NcclRankComm& NcclRankComm::operator=(NcclRankComm&&) noexcept = default;
NcclRankComm::~NcclRankComm() = default;

const sy_comm* NcclRankComm::get() const {
  return handle_ ? handle_->functions->get(handle_->comm) : nullptr;
}

std::vector<std::string> nccl_library_candidates(const std::string& exe_dir) {
  if (const char* chosen = std::getenv(kNcclLibraryVariable); chosen != nullptr && *chosen) {
    return {chosen};
  }
  std::vector<std::string> candidates;
  if (!exe_dir.empty()) {
    candidates.push_back((std::filesystem::path(exe_dir) / ".." / SWITCHYARD_LM_HEAD_LIBDIR /
                          SWITCHYARD_LM_HEAD_NCCL_SONAME)
                             .lexically_normal()
                             .string());
  }
  candidates.emplace_back(SWITCHYARD_LM_HEAD_NCCL_SONAME);
  return candidates;
}

namespace {

template <class Fn>
bool look_up(void* library, const char* name, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(dlsym(library, name));
  if (out == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return out != nullptr;
}

std::string error_text(const sy_error& err, sy_status status) {
  return err.message[0] != '\0' ? std::string(err.message)
                                : std::string("status ") + status_name(status);
}

}  // namespace

NcclLibrary::NcclLibrary(std::string path, std::shared_ptr<const Functions> functions)
    : path_(std::move(path)), functions_(std::move(functions)) {}

NcclLibrary NcclLibrary::open(const std::string& exe_dir) {
  std::string tried;
  for (const std::string& candidate : nccl_library_candidates(exe_dir)) {
    // Kept loaded on purpose: NCCL's threads outlive any point where unloading would be safe.
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* error = dlerror();
      std::string why = error != nullptr ? error : "cannot be loaded";
      if (why.rfind(candidate + ": ", 0) == 0) why.erase(0, candidate.size() + 2);  // said once
      tried += "\n  " + candidate + ": " + why;
      continue;
    }
    auto functions = std::make_shared<Functions>();
    std::string missing;
    look_up(library, "sy_nccl_get_unique_id", functions->get_unique_id, missing);
    look_up(library, "sy_nccl_comm_create", functions->create, missing);
    look_up(library, "sy_nccl_comm_destroy", functions->destroy, missing);
    look_up(library, "sy_nccl_comm_get", functions->get, missing);
    if (!missing.empty()) {
      tried += "\n  " + candidate + ": loaded, but it lacks " + missing +
               " (not libswitchyard-nccl, or an incompatible version)";
      continue;
    }
    return NcclLibrary(candidate, std::move(functions));
  }
  throw Error(SY_ERR_UNAVAILABLE,
              "libswitchyard-nccl could not be loaded; tried:" + tried +
                  "\nIt is built with Switchyard when NCCL is found at configure time and needs "
                  "NCCL's libnccl.so.2 at run time. Next step: install NCCL and rebuild, put "
                  "the library's folder on LD_LIBRARY_PATH, or set " +
                  kNcclLibraryVariable + "=<path to libswitchyard-nccl.so>.");
}

std::string NcclLibrary::new_unique_id() const {
  char hex[SY_NCCL_UNIQUE_ID_HEX_CHARS + 1] = {};
  sy_error err{};
  err.struct_size = sizeof err;
  const sy_status status = functions_->get_unique_id(hex, sizeof hex, &err);
  if (status != SY_OK) {
    throw Error(status, "creating an NCCL unique id (sy_nccl_get_unique_id from " + path_ +
                            ") failed: " + error_text(err, status));
  }
  return hex;
}

NcclRankComm NcclLibrary::create(const std::string& unique_id_hex, int32_t size, int32_t rank,
                                  int32_t device) const {
  auto handle = std::make_unique<NcclRankComm::Handle>();
  handle->functions = functions_;
  sy_error err{};
  err.struct_size = sizeof err;
  const sy_status status =
      functions_->create(unique_id_hex.c_str(), size, rank, device, &handle->comm, &err);
  if (status != SY_OK) {
    throw Error(status, "creating the NCCL communicator of " + std::to_string(size) +
                            " ranks on cuda:" + std::to_string(device) +
                            " (sy_nccl_comm_create from " + path_ + ") failed: " +
                            error_text(err, status));
  }
  return NcclRankComm(std::move(handle));
}

}  // namespace switchyard::lm_head
