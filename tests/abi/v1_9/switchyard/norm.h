/* TEST ONLY: a "future" ABI v1.9 of this header (the current one plus extra trailing
 * fields), used to check that today's host ignores fields of a newer minor. */
/*
 * Switchyard plugin ABI v1 — the normalization family (LayerNorm, RMSNorm, L2Norm).
 * Growth rule: see abi.h. Semantics: docs/abi.md and DESIGN §3.9.
 */
#ifndef SWITCHYARD_NORM_H
#define SWITCHYARD_NORM_H

#include <switchyard/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t sy_norm_kind;
enum {
  SY_NORM_LAYER = 0, /* y = (x - mean) * rstd * gamma + beta, biased variance */
  SY_NORM_RMS = 1,   /* y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps) */
  SY_NORM_L2 = 2     /* RMSNorm without gamma */
};

/* Request flags (sy_norm_problem.flags). */
#define SY_NORM_ZERO_CENTERED_GAMMA (1u << 0)    /* gamma_eff = 1 + gamma, added in fp32 */
#define SY_NORM_RESIDUAL (1u << 1)               /* normalise h = x + residual; write h */
#define SY_NORM_MEMORY_EFFICIENT (1u << 2)       /* backward from y instead of x */
#define SY_NORM_ACCUMULATE_GRAD_WEIGHT (1u << 3) /* dgamma/dbeta += into fp32 buffers */

/* Capability bits (sy_norm.features); SY_FEATURE_GRAPH_CAPTURE may be set too. */
#define SY_NORM_FEATURE_LAYER (1u << 0)
#define SY_NORM_FEATURE_RMS (1u << 1)
#define SY_NORM_FEATURE_L2 (1u << 2)
#define SY_NORM_FEATURE_ZERO_CENTERED_GAMMA (1u << 3)
#define SY_NORM_FEATURE_RESIDUAL (1u << 4)
#define SY_NORM_FEATURE_MEMORY_EFFICIENT (1u << 5)
#define SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT (1u << 6)
#define SY_NORM_FEATURE_SM_MARGIN (1u << 7)

/* One concrete problem. Caller-owned. */
typedef struct sy_norm_problem {
  size_t struct_size;
  sy_norm_kind kind;
  int64_t rows;     /* N */
  int64_t hidden;   /* H */
  float eps;
  DLDataType x_dtype;
  DLDataType y_dtype;           /* y is written in this dtype: the caller's choice */
  DLDataType weight_dtype;      /* gamma and beta */
  DLDataType grad_weight_dtype; /* dgamma and dbeta; fp32 with ACCUMULATE_GRAD_WEIGHT */
  DLDevice device;
  uint32_t flags;               /* SY_NORM_* request flags */
  int32_t sm_margin;            /* SMs to leave free for overlapping work; 0 = use all */
} sy_norm_problem;

/* Forward. Tensors borrowed for the call (on CUDA, until the work on `stream` completes).
 *   x            [N, H] in
 *   residual     [N, H] in   required with SY_NORM_RESIDUAL, else NULL
 *   weight       [H]    in   gamma; NULL for L2
 *   bias         [H]    in   beta; LayerNorm only, optional
 *   y            [N, H] out  dtype problem->y_dtype
 *   residual_out [N, H] out  h = x + residual; required with SY_NORM_RESIDUAL
 *   mean         [N]    out  fp32, LayerNorm only
 *   rstd         [N]    out  fp32
 *   workspace            borrowed scratch of workspace_bytes >= workspace_size(problem) */
typedef struct sy_norm_forward_args {
  size_t struct_size;
  const sy_norm_problem* problem; /* borrowed */
  const DLTensor* x;
  const DLTensor* residual;
  const DLTensor* weight;
  const DLTensor* bias;
  DLTensor* y;
  DLTensor* residual_out;
  DLTensor* mean;
  DLTensor* rstd;
  void* workspace;
  int64_t workspace_bytes;
  void* stream;
} sy_norm_forward_args;

/* Backward. x_or_y is the norm's input (h with SY_NORM_RESIDUAL) or, with
 * SY_NORM_MEMORY_EFFICIENT, its output y. dx is the gradient with respect to h (so also of x
 * and of residual); with SY_NORM_RESIDUAL, d_residual_out (the gradient arriving at
 * residual_out) is added to it. dweight/dbias are reduced over rows in a fixed order. */
typedef struct sy_norm_backward_args {
  size_t struct_size;
  const sy_norm_problem* problem; /* borrowed */
  const DLTensor* dy;             /* [N, H] */
  const DLTensor* x_or_y;         /* [N, H] */
  const DLTensor* weight;         /* [H] or NULL (L2) */
  const DLTensor* bias;           /* [H] or NULL; needed for LayerNorm memory-efficient */
  const DLTensor* mean;           /* [N] fp32, LayerNorm */
  const DLTensor* rstd;           /* [N] fp32 */
  const DLTensor* d_residual_out; /* [N, H] or NULL */
  DLTensor* dx;                   /* [N, H] out, dtype x_dtype */
  DLTensor* dweight;              /* [H] out, optional */
  DLTensor* dbias;                /* [H] out, optional */
  void* workspace;
  int64_t workspace_bytes;
  void* stream;
} sy_norm_backward_args;

/* The family table. Plugin-owned, static. Concurrency as for sy_cross_entropy. */
typedef struct sy_norm {
  size_t struct_size;
  uint32_t dtypes;   /* SY_DTYPE_* bits accepted for x */
  uint32_t devices;
  uint32_t features; /* SY_NORM_FEATURE_* | SY_FEATURE_GRAPH_CAPTURE */
  sy_determinism determinism;
  sy_status (*supports)(const sy_norm_problem* problem, sy_error* err);
  sy_status (*workspace_size)(const sy_norm_problem* problem, int64_t* bytes, sy_error* err);
  sy_status (*forward)(const sy_norm_forward_args* args, sy_error* err);
  sy_status (*backward)(const sy_norm_backward_args* args, sy_error* err);
  /* --- 1.9 (test only) --- */
  uint64_t future_capabilities;
  sy_status (*future_forward)(const void* args, sy_error* err);
} sy_norm;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SWITCHYARD_NORM_H */
