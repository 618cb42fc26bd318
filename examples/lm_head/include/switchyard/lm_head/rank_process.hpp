// How `switchyard train --device cuda --tp N` becomes N processes: the launching process
// re-runs its own binary once per rank with the user's arguments plus hidden flags that say
// which rank the process is, how many there are, and the NCCL unique id that joins them.
#ifndef SWITCHYARD_LM_HEAD_RANK_PROCESS_HPP
#define SWITCHYARD_LM_HEAD_RANK_PROCESS_HPP

#include <switchyard/lm_head/trainer.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::lm_head {

// The hidden flags (without the dashes). Not in --help: only the launcher passes them.
inline constexpr const char* kRankFlag = "rank";
inline constexpr const char* kWorldSizeFlag = "world-size";
inline constexpr const char* kNcclIdFlag = "nccl-id";

// Set in every rank process's environment: NVLink SHARP / multicast stays off (it needs
// fabric-manager state that the machines this runs on do not promise).
inline constexpr const char* kNvlsVariable = "NCCL_NVLS_ENABLE";
inline constexpr const char* kNvlsValue = "0";

struct RankIdentity {
  int32_t rank = 0;
  int32_t world_size = 1;
  std::string nccl_id;  // NCCL unique id, 256 hex digits
};

// The argument list of one rank process: `user_args` (as given to `switchyard train`, without
// the command word) followed by "train"-level hidden flags. The command word is prepended:
// {"train", <user_args>..., "--rank", "1", "--world-size", "2", "--nccl-id", "<hex>"}.
// Throws Error(SY_ERR_INVALID_ARGUMENT) when user_args already hold a hidden flag.
std::vector<std::string> rank_process_arguments(const std::vector<std::string>& user_args,
                                                const RankIdentity& identity);

// The environment every rank process gets on top of the launcher's.
std::vector<std::pair<std::string, std::string>> rank_process_environment();

// Checks a rank process's hidden flags against its options: all three given, world size ==
// --tp, 0 <= rank < world size, a CUDA device, and an id of 256 hex digits. Throws
// Error(SY_ERR_INVALID_ARGUMENT) naming the flag, the expected and the actual value.
void validate_rank_identity(const RankIdentity& identity, const TrainOptions& options);

// How many CUDA devices the rank processes of `options` need (device index + tp), and a
// check that this machine has them. Throws Error(SY_ERR_UNAVAILABLE) with the count seen
// and the next step.
void require_cuda_devices_for_ranks(const TrainOptions& options);

}  // namespace switchyard::lm_head

#endif
