// The CUDA device in a build without a CUDA toolkit: there is none, and the error says why.
#include "cuda_device.hpp"

#include <switchyard/switchyard.hpp>

#include <string>

namespace switchyard::lm_head {

bool cuda_device_built() { return false; }

std::unique_ptr<Device> make_cuda_device(int32_t index) {
  throw Error(SY_ERR_UNAVAILABLE,
              "--device cuda:" + std::to_string(index) +
                  ": this switchyard was built without CUDA (no CUDA toolkit was found when it "
                  "was configured), so the LM head has no CUDA kernels. Next step: run with "
                  "--device cpu, or rebuild with the CUDA toolkit installed "
                  "(-DSWITCHYARD_ENABLE_CUDA=ON).");
}

}  // namespace switchyard::lm_head
