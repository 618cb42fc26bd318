// libswitchyard-nccl, opened at run time. `switchyard` must start on machines without NCCL
// (or a GPU), so it never links the library: `train --device cuda --tp N` loads it with
// dlopen and calls its C API (switchyard/nccl.h).
#ifndef SWITCHYARD_LM_HEAD_NCCL_LIBRARY_HPP
#define SWITCHYARD_LM_HEAD_NCCL_LIBRARY_HPP

#include <switchyard/abi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace switchyard::lm_head {

// Overrides where the library is looked for (a path to the .so); used as given, alone.
inline constexpr const char* kNcclLibraryVariable = "SWITCHYARD_NCCL_LIBRARY";

// The files tried, in order: $SWITCHYARD_NCCL_LIBRARY when set; otherwise
// <exe_dir>/../<libdir>/libswitchyard-nccl.so.<major> (the build tree and an install), then
// the bare file name (the dynamic loader's search path).
std::vector<std::string> nccl_library_candidates(const std::string& exe_dir);

class NcclLibrary;

// One rank's communicator, created through the library; destroyed with it.
class NcclRankComm {
 public:
  NcclRankComm(NcclRankComm&&) noexcept;
  NcclRankComm& operator=(NcclRankComm&&) noexcept;
  ~NcclRankComm();
  const sy_comm* get() const;

 private:
  friend class NcclLibrary;
  struct Handle;
  explicit NcclRankComm(std::unique_ptr<Handle> handle);
  std::unique_ptr<Handle> handle_;
};

class NcclLibrary {
 public:
  // Opens the first candidate that loads and has every function this program uses. Throws
  // switchyard::Error(SY_ERR_UNAVAILABLE) naming each file tried and why it failed
  // (dlerror: not found, libnccl.so.2 missing, ...), and the next step.
  static NcclLibrary open(const std::string& exe_dir);

  const std::string& path() const { return path_; }

  // A new NCCL unique id as hex text (sy_nccl_get_unique_id). Throws Error.
  std::string new_unique_id() const;

  // Rank `rank` of `size` on CUDA device `device` (sy_nccl_comm_create). Collective: returns
  // once every rank has joined. Throws Error with NCCL's message.
  NcclRankComm create(const std::string& unique_id_hex, int32_t size, int32_t rank,
                      int32_t device) const;

  struct Functions;

 private:
  NcclLibrary(std::string path, std::shared_ptr<const Functions> functions);
  std::string path_;
  std::shared_ptr<const Functions> functions_;
};

}  // namespace switchyard::lm_head

#endif
