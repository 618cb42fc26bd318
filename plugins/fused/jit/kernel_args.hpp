// The single parameter every generated kernel takes, by value: one struct per family. The
// fields are listed once (the X-macros below); the host struct and the text the generated
// source declares both come from that list, and the generated source static_asserts every
// field's offset against the value this compiler computed, so a layout mismatch between the
// host and NVRTC is a compile error, never a silent misread. Every field is 8 bytes wide, so
// no padding rule can differ between the two compilers.
#ifndef SWITCHYARD_FUSED_JIT_KERNEL_ARGS_HPP
#define SWITCHYARD_FUSED_JIT_KERNEL_ARGS_HPP

#include <cstdint>
#include <string>

namespace switchyard::fused::jit {

// The type names the generated source declares too (source_prelude.cpp).
using sy_i64 = long long;
using sy_u64 = unsigned long long;
using sy_u32 = unsigned int;

// Runtime bits of CeKernelArgs::flags.
inline constexpr sy_i64 kCeIgnoreIndex = 1;     // SY_CE_IGNORE_INDEX is set
inline constexpr sy_i64 kCeTensorParallel = 2;  // tp_size > 1: argmax through a MIN all-reduce

// clang-format off
#define SY_CE_KERNEL_ARGS(X)                                                                  \
  X(const void*, logits)        /* row 0, after byte_offset */                              \
  X(sy_i64, logits_stride)      /* bytes from one row to the next */                        \
  X(void*, grad)                /* gradient rows; may equal logits */                       \
  X(sy_i64, grad_stride)        /* bytes */                                                 \
  X(const void*, labels)        /* int32 or int64 [N] */                                    \
  X(const float*, grad_scale)   /* g per row: grad_scale (forward) or grad_loss (backward) */ \
  X(float*, loss)               /* [N] out */                                               \
  X(float*, lse)                /* [N] out */                                               \
  X(sy_i64*, argmax)            /* [N] out, SY_CE_ARGMAX */                                 \
  X(const float*, lse_in)       /* [N] the lse the gradient uses */                         \
  X(float*, ws_gmax)            /* [N] row max: the MAX all-reduce buffer */                \
  X(float*, ws_red)             /* [3N] z_t - max | sum exp | sum (z - max): the SUM buffer */ \
  X(sy_u64*, ws_keys)           /* [N] this rank's (max, lowest column) key */              \
  X(sy_i64*, ws_cand)           /* [N] argmax candidate: the MIN all-reduce buffer */       \
  X(sy_u32*, ws_count)          /* [2N] blocks finished per row (max kernel, sum kernel) */ \
  X(sy_u64*, ws_pkeys)          /* [N * chunks] per-block keys */                           \
  X(float*, ws_psum)            /* [N * chunks * 2] per-block sums */                       \
  X(sy_u64*, ws_bad)            /* [1] N - (lowest bad row); 0: every label is fine */      \
  X(sy_i64, rows)                                                                           \
  X(sy_i64, vocab_start)                                                                    \
  X(sy_i64, vocab_size)                                                                     \
  X(sy_i64, ignore_index)                                                                   \
  X(sy_i64, flags)              /* kCe* bits */                                             \
  X(double, smoothing)          /* s of docs/semantics.md */                                \
  X(double, q_other)            /* s / V: target probability of a column that is not t */   \
  X(double, q_target)           /* (1 - s) + s / V: of the label's column */

#define SY_NORM_KERNEL_ARGS(X)                                                                \
  X(const void*, x)             /* forward input rows */                                    \
  X(sy_i64, x_stride)           /* bytes */                                                 \
  X(const void*, residual)                                                                  \
  X(sy_i64, residual_stride)                                                                \
  X(void*, residual_out)                                                                    \
  X(sy_i64, residual_out_stride)                                                            \
  X(void*, y)                                                                               \
  X(sy_i64, y_stride)                                                                       \
  X(const void*, weight)        /* gamma [H] */                                             \
  X(const void*, bias)          /* beta [H] or NULL */                                      \
  X(float*, mean)               /* [N] out, LayerNorm */                                    \
  X(float*, rstd)               /* [N] out */                                               \
  X(const void*, dy)                                                                        \
  X(sy_i64, dy_stride)                                                                      \
  X(const void*, x_or_y)                                                                    \
  X(sy_i64, x_or_y_stride)                                                                  \
  X(const float*, mean_in)                                                                  \
  X(const float*, rstd_in)                                                                  \
  X(const void*, d_residual_out)                                                            \
  X(sy_i64, d_residual_out_stride)                                                          \
  X(void*, dx)                                                                              \
  X(sy_i64, dx_stride)                                                                      \
  X(void*, dweight)                                                                         \
  X(void*, dbias)                                                                           \
  X(float*, ws_dweight)         /* [chunks * H] partial sums of dy * x_hat per row chunk */ \
  X(float*, ws_dbias)           /* [chunks * H] partial sums of dy per row chunk */         \
  X(sy_i64, rows)                                                                           \
  X(sy_i64, chunks)             /* ceil(rows / rows per chunk) */                           \
  X(double, eps)                                                                            \
  X(sy_i64, flags)              /* kNorm* bits */
// clang-format on

#define SY_KERNEL_ARGS_FIELD(type, name) type name;

struct CeKernelArgs {
  SY_CE_KERNEL_ARGS(SY_KERNEL_ARGS_FIELD)
};

// Runtime bits of NormKernelArgs::flags.
inline constexpr sy_i64 kNormHasBias = 1;
inline constexpr sy_i64 kNormWantDWeight = 2;
inline constexpr sy_i64 kNormWantDBias = 4;
inline constexpr sy_i64 kNormHasDResidual = 8;

struct NormKernelArgs {
  SY_NORM_KERNEL_ARGS(SY_KERNEL_ARGS_FIELD)
};

// The device-side declarations of both structs (named SyCeArgs and SyNormArgs there) with a
// static_assert of every field's offset and of the size.
std::string kernel_args_source();

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_KERNEL_ARGS_HPP
