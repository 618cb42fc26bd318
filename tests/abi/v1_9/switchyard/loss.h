/* TEST ONLY: a "future" ABI v1.9 of this header (the current one plus extra trailing
 * fields), used to check that today's host ignores fields of a newer minor. */
/*
 * Switchyard plugin ABI v1 — the vocab-parallel cross-entropy family.
 * Growth rule: see abi.h. Semantics: docs/abi.md and DESIGN §3.8.
 */
#ifndef SWITCHYARD_LOSS_H
#define SWITCHYARD_LOSS_H

#include <switchyard/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t sy_smoothing;
enum {
  /* NeMo / Megatron form over the global vocabulary, sigma = alpha * V / (V - 1):
   * loss = (1 - sigma) * CE - sigma * mean_j log p_j. */
  SY_SMOOTHING_MEGATRON = 0,
  /* F.cross_entropy form: target = (1 - alpha) * onehot + alpha / V. */
  SY_SMOOTHING_PYTORCH = 1
};

/* Request flags (sy_ce_problem.flags). */
#define SY_CE_IGNORE_INDEX (1u << 0)    /* rows whose label == ignore_index: loss 0, grad 0 */
#define SY_CE_ARGMAX (1u << 1)          /* forward writes the global argmax (lowest id on ties) */
#define SY_CE_GRAD_IN_FORWARD (1u << 2) /* forward writes grad_logits = grad_scale * (p - q) */
#define SY_CE_CHECK_LABELS (1u << 3)    /* a label owned by no rank is INVALID_ARGUMENT */

/* Capability bits (sy_cross_entropy.features); SY_FEATURE_GRAPH_CAPTURE may be set too. */
#define SY_CE_FEATURE_LABEL_SMOOTHING (1u << 0)
#define SY_CE_FEATURE_IGNORE_INDEX (1u << 1)
#define SY_CE_FEATURE_ARGMAX (1u << 2)
#define SY_CE_FEATURE_GRAD_IN_FORWARD (1u << 3)
#define SY_CE_FEATURE_TENSOR_PARALLEL (1u << 4)

/* One concrete problem. Decides support and workspace size. Caller-owned. */
typedef struct sy_ce_problem {
  size_t struct_size;
  int64_t rows;          /* N */
  int64_t vocab_local;   /* Vp: columns of logits held by this rank */
  int64_t vocab_start;   /* global id of this rank's first column */
  int64_t vocab_size;    /* V: the global vocabulary */
  DLDataType logits_dtype;
  DLDataType label_dtype;  /* int64 or int32 */
  DLDataType grad_dtype;   /* dtype of grad_logits (may differ from logits_dtype) */
  DLDevice device;
  int32_t tp_size;         /* ranks sharing the vocabulary; 1 = no tensor parallelism */
  float label_smoothing;   /* alpha in [0, 1) */
  sy_smoothing smoothing;
  int64_t ignore_index;    /* used with SY_CE_IGNORE_INDEX */
  uint32_t flags;          /* SY_CE_* request flags */
} sy_ce_problem;

/* Forward. All tensors are borrowed for the duration of the call (and, on CUDA, until the
 * work on `stream` completes); the caller owns their memory. Optional ones may be NULL.
 *   logits      [N, Vp] in   (rows may be strided; last dim unit stride). Left unchanged
 *                            unless grad_logits aliases it.
 *   labels      [N]     in   global ids, int64 or int32
 *   loss        [N]     out  fp32
 *   lse         [N]     out  fp32, log-sum-exp over the global vocabulary; keep for backward
 *   argmax      [N]     out  int64, optional; required with SY_CE_ARGMAX
 *   grad_scale  [N]     in   fp32, required with SY_CE_GRAD_IN_FORWARD
 *   grad_logits [N, Vp] out  required with SY_CE_GRAD_IN_FORWARD; may alias logits
 *   workspace           borrowed scratch of workspace_bytes >= workspace_size(problem), on
 *                       the problem's device
 *   tp                  host-owned communicator; NULL when tp_size == 1
 *   stream              cudaStream_t for CUDA tensors, ignored on the CPU */
typedef struct sy_ce_forward_args {
  size_t struct_size;
  const sy_ce_problem* problem; /* borrowed */
  const DLTensor* logits;
  const DLTensor* labels;
  DLTensor* loss;
  DLTensor* lse;
  DLTensor* argmax;
  const DLTensor* grad_scale;
  DLTensor* grad_logits;
  void* workspace;
  int64_t workspace_bytes;
  const sy_comm* tp;
  void* stream;
} sy_ce_forward_args;

/* Backward: grad_logits = grad_loss_i * (softmax(z) - q). No collectives: all that is global
 * is in lse. Ownership as in forward. grad_logits may alias logits (in place). */
typedef struct sy_ce_backward_args {
  size_t struct_size;
  const sy_ce_problem* problem; /* borrowed */
  const DLTensor* logits;       /* as forward saw them */
  const DLTensor* labels;
  const DLTensor* lse;          /* from forward */
  const DLTensor* grad_loss;    /* [N] fp32 */
  DLTensor* grad_logits;        /* [N, Vp] out, dtype problem->grad_dtype */
  void* workspace;
  int64_t workspace_bytes;
  void* stream;
} sy_ce_backward_args;

/* The family table. Plugin-owned, static: valid until the library is unloaded.
 *
 * Concurrency: supports and workspace_size are pure and may be called from any thread at any
 * time. forward and backward may be called concurrently from several threads provided the
 * calls use different output tensors, workspaces and (on CUDA) streams or a stream order
 * that serialises them; a plugin that needs more must say so in its description. */
typedef struct sy_cross_entropy {
  size_t struct_size;
  uint32_t dtypes;            /* SY_DTYPE_* bits accepted for logits */
  uint32_t devices;           /* SY_DEVICE_BIT(kDLCPU) | ... */
  uint32_t features;          /* SY_CE_FEATURE_* | SY_FEATURE_GRAPH_CAPTURE */
  sy_determinism determinism;
  /* SY_OK, or SY_ERR_UNSUPPORTED / SY_ERR_INVALID_ARGUMENT / SY_ERR_UNAVAILABLE with a
   * reason in err. Never crashes on a valid-looking problem. */
  sy_status (*supports)(const sy_ce_problem* problem, sy_error* err);
  sy_status (*workspace_size)(const sy_ce_problem* problem, int64_t* bytes, sy_error* err);
  sy_status (*forward)(const sy_ce_forward_args* args, sy_error* err);
  sy_status (*backward)(const sy_ce_backward_args* args, sy_error* err);
  /* --- 1.1 --- */
  /* Number of collectives one forward of `problem` issues on args->tp (0 when tp_size == 1
   * is typical). Pure. Host default when absent (1.0 plugin) or NULL: "not stated" (-1). */
  int32_t (*forward_collectives)(const sy_ce_problem* problem);
  /* --- 1.9 (test only) --- */
  uint32_t future_capabilities;
  void* future_reserved[4];
  sy_status (*future_forward)(const void* args, sy_error* err);
} sy_cross_entropy;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SWITCHYARD_LOSS_H */
