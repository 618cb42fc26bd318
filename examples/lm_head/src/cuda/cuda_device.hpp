// The CUDA device of the LM head, behind a factory that exists in every build: without a
// CUDA toolkit at configure time it throws the reason (no_cuda.cpp) instead.
#ifndef SWITCHYARD_LM_HEAD_CUDA_DEVICE_HPP
#define SWITCHYARD_LM_HEAD_CUDA_DEVICE_HPP

#include <switchyard/lm_head/device.hpp>

#include <cstdint>
#include <memory>

namespace switchyard::lm_head {

// Whether this build has the CUDA device (a CUDA toolkit was found at configure time).
bool cuda_device_built();

// CUDA device `index`, with its own stream. The device's calls must come from one thread at a
// time. Throws switchyard::Error: SY_ERR_UNAVAILABLE with the reason when the device cannot
// be used (no driver, no such device, built without CUDA).
std::unique_ptr<Device> make_cuda_device(int32_t index);

}  // namespace switchyard::lm_head

#endif
