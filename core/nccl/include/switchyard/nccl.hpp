// libswitchyard-nccl, C++ API: an sy_comm over an NCCL communicator, for CUDA buffers.
// (The thread group in <switchyard/comm.hpp> is its CPU counterpart; the C API is nccl.h.)
//
//   // launcher / rank 0:
//   std::string id = switchyard::NcclUniqueId::create().to_hex();  // pass via env or argv
//   // every rank r of N processes, one GPU each:
//   auto tp = switchyard::NcclComm::create_local(switchyard::NcclUniqueId::from_hex(id), N, r);
//   args.tp = tp.get();
//
// Errors are thrown as switchyard::Error; failures of NCCL itself are SY_ERR_COMMUNICATION and
// carry NCCL's message. The collectives behind get() never throw: they report through sy_error.
#ifndef SWITCHYARD_NCCL_HPP
#define SWITCHYARD_NCCL_HPP

#include <switchyard/abi.h>
#include <switchyard/switchyard.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// ncclComm_t is `struct ncclComm*`; declared here so that this header does not need nccl.h.
struct ncclComm;

namespace switchyard {

// An ncclUniqueId as a value, with a text form that survives environment variables and argv.
class NcclUniqueId {
 public:
  static constexpr size_t kBytes = 128;      // NCCL_UNIQUE_ID_BYTES
  static constexpr size_t kHexChars = 256;   // two lowercase hex digits per byte

  // A fresh id (ncclGetUniqueId). Call it once per communicator, in one process.
  static NcclUniqueId create();
  // Parses to_hex()'s text (case-insensitive; surrounding whitespace ignored). Throws
  // SY_ERR_INVALID_ARGUMENT naming the length or the first bad character.
  static NcclUniqueId from_hex(const std::string& hex);
  static NcclUniqueId from_bytes(const std::array<unsigned char, kBytes>& bytes);

  std::string to_hex() const;
  const std::array<unsigned char, kBytes>& bytes() const { return bytes_; }
  bool operator==(const NcclUniqueId& other) const { return bytes_ == other.bytes_; }
  bool operator!=(const NcclUniqueId& other) const { return !(*this == other); }

 private:
  std::array<unsigned char, kBytes> bytes_{};
};

class NcclComm {
 public:
  // Wraps a communicator the caller created and keeps owning (it is never destroyed here; it
  // must outlive this object). `device` is its CUDA device, or -1 to ask NCCL.
  static NcclComm wrap(ncclComm* comm, int32_t device = -1);

  // One rank of `size` processes on this machine, one GPU each: rank r uses CUDA device r.
  // Collective: returns once all ranks have called it with the same id.
  static NcclComm create_local(const NcclUniqueId& id, int32_t size, int32_t rank);

  // One rank of a job across machines; `device` is this rank's local CUDA device. Collective.
  static NcclComm create(const NcclUniqueId& id, int32_t size, int32_t rank, int32_t device);

  // All ranks in this process, rank i on devices[i] (ncclCommInitAll); each comm is then driven
  // by its own thread. For single-process tests and demos.
  static std::vector<NcclComm> create_all(const std::vector<int32_t>& devices);

  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm();  // ncclCommDestroy when owned

  const sy_comm* get() const;  // valid while this object lives
  ncclComm* native() const;
  bool owns_native() const;
  int32_t rank() const;
  int32_t size() const;
  int32_t device() const;

  // Collectives issued through get() so far (for tests that count them).
  int64_t collectives() const;
  int64_t all_reduces() const;
  int64_t all_gathers() const;
  void reset_counts();

  struct Impl;

 private:
  explicit NcclComm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard

#endif  // SWITCHYARD_NCCL_HPP
