// What the CPU communicators (SingleRankComm, ThreadGroup) share: argument checks with the
// messages callers see, element sizes, and the fixed-order reduction.
#ifndef SWITCHYARD_CORE_COMM_CPU_HPP
#define SWITCHYARD_CORE_COMM_CPU_HPP

#include <switchyard/abi.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace switchyard::detail {

enum class CollectiveKind { AllReduce, AllGather };

const char* collective_name(CollectiveKind kind);  // "all_reduce", "all_gather"
std::string reduce_op_name(sy_reduce_op op);       // "SUM", "MAX", "MIN", "op 7"
std::string dtype_text(DLDataType dtype);          // "float32", "bfloat16", "uint8x4"

// Bytes of one element of a dtype the CPU collectives handle; 0 for any other dtype.
size_t cpu_element_bytes(DLDataType dtype);

// The result of checking one rank's arguments. On success, the byte counts to touch.
struct CpuCallCheck {
  sy_status status = SY_OK;
  std::string message;     // names the argument, the expected and the actual value
  size_t send_bytes = 0;   // bytes read from send
  size_t recv_bytes = 0;   // bytes written to recv
};

// Checks a call as the CPU communicators accept it: a supported dtype, count >= 0, a valid op
// (all_reduce), non-NULL host buffers when count > 0, and sizes that fit in memory.
// Messages start with "<communicator> rank <rank>: <collective>: ", e.g. "thread group rank 1:
// all_reduce: ".
CpuCallCheck check_cpu_call(const char* communicator, int32_t rank, CollectiveKind kind,
                            const void* send, const void* recv, int64_t count, DLDataType dtype,
                            sy_reduce_op op, int32_t group_size);

// out[i] = op(inputs[0][i], inputs[1][i], ..., inputs[n-1][i]), folded left to right in rank
// order, so every caller gets the same bits. 16-bit floats are folded in float32 and rounded
// back once (nearest even); integers wrap; a NaN operand makes MAX and MIN NaN. `out` must not
// overlap the inputs. dtype and op must have passed check_cpu_call.
void reduce_in_rank_order(const void* const* inputs, size_t input_count, void* out,
                          int64_t count, DLDataType dtype, sy_reduce_op op);

}  // namespace switchyard::detail

#endif
