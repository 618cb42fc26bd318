// The hidden rank flags: building them for a rank process and checking them in it.
#include <switchyard/lm_head/rank_process.hpp>

#include <switchyard/lm_head/device.hpp>

#include <switchyard/switchyard.hpp>

#include <algorithm>

namespace switchyard::lm_head {
namespace {

constexpr size_t kNcclIdHexChars = 256;

bool names_flag(const std::string& arg, const std::string& flag) {
  const std::string dashed = "--" + flag;
  return arg == dashed || arg.rfind(dashed + "=", 0) == 0;
}

std::string internal_flags_note() {
  return " (--rank, --world-size and --nccl-id are set by `switchyard train --device cuda --tp "
         "N` for the rank processes it starts; run that instead of passing them yourself)";
}

}  // namespace

std::vector<std::string> rank_process_arguments(const std::vector<std::string>& user_args,
                                                const RankIdentity& identity) {
  for (const std::string& arg : user_args) {
    for (const char* flag : {kRankFlag, kWorldSizeFlag, kNcclIdFlag}) {
      if (names_flag(arg, flag)) {
        throw Error(SY_ERR_INVALID_ARGUMENT,
                    "the arguments already hold " + arg + ", which the launcher sets itself" +
                        internal_flags_note() + ".");
      }
    }
  }
  std::vector<std::string> args{"train"};
  args.insert(args.end(), user_args.begin(), user_args.end());
  args.insert(args.end(), {std::string("--") + kRankFlag, std::to_string(identity.rank),
                           std::string("--") + kWorldSizeFlag, std::to_string(identity.world_size),
                           std::string("--") + kNcclIdFlag, identity.nccl_id});
  return args;
}

std::vector<std::pair<std::string, std::string>> rank_process_environment() {
  return {{kNvlsVariable, kNvlsValue}};
}

void validate_rank_identity(const RankIdentity& identity, const TrainOptions& options) {
  if (identity.world_size != options.tp) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "--world-size " + std::to_string(identity.world_size) + ": expected --tp (" +
                    std::to_string(options.tp) + ")" + internal_flags_note() + ".");
  }
  if (identity.rank < 0 || identity.rank >= identity.world_size) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "--rank " + std::to_string(identity.rank) + ": expected 0 to " +
                    std::to_string(identity.world_size - 1) + internal_flags_note() + ".");
  }
  if (parse_device(options.device).type != kDLCUDA) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "--rank with --device " + options.device +
                    ": rank processes exist only for --device cuda (on the CPU, --tp N runs "
                    "the ranks as threads of one process)" + internal_flags_note() + ".");
  }
  const std::string& id = identity.nccl_id;
  const bool hex = std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
  if (id.size() != kNcclIdHexChars || !hex) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "--nccl-id: expected " + std::to_string(kNcclIdHexChars) +
                    " hex digits (an NCCL unique id), got " + std::to_string(id.size()) +
                    " characters" + (hex ? "" : " that are not all hex digits") +
                    internal_flags_note() + ".");
  }
}

void require_cuda_devices_for_ranks(const TrainOptions& options) {
  const DeviceRequest request = parse_device(options.device);
  const int64_t needed = static_cast<int64_t>(request.index) + options.tp;
  int visible = 0;
  const std::string seen = describe_cuda_devices(&visible);
  if (visible >= needed) return;
  const std::string first = "cuda:" + std::to_string(request.index);
  const std::string last = "cuda:" + std::to_string(needed - 1);
  throw Error(SY_ERR_UNAVAILABLE,
              "--device " + options.device + " --tp " + std::to_string(options.tp) + ": needs " +
                  std::to_string(needed) + " CUDA device" + (needed == 1 ? "" : "s") +
                  " (one process per rank on " + first + (options.tp > 1 ? ".." + last : "") +
                  "), but this machine has " + seen +
                  ". Next step: a smaller --tp, or --device cpu (ranks as threads).");
}

}  // namespace switchyard::lm_head
