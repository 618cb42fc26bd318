/* The C host API driven from C99, end to end: each function runs one scenario and returns 0
 * on success, or the number of the step that failed with a sentence in `note`. The doctest
 * side (c_api_test.cpp) asserts on both. */
#include "c_api_calls.h"

#include <switchyard/switchyard.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int fail_with(char* note, size_t size, int step, const char* what, const sy_error* err) {
  snprintf(note, size, "step %d, %s: %s: %s", step, what,
           err != NULL ? sy_status_name(err->status) : "-", err != NULL ? err->message : "");
  return step;
}

static sy_error fresh_error(void) {
  sy_error err;
  memset(&err, 0, sizeof err);
  err.struct_size = sizeof err;
  return err;
}

static DLTensor tensor(void* data, int32_t ndim, int64_t* shape, DLDataType dtype) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  return t;
}

static DLDataType dtype(uint8_t code, uint8_t bits) {
  DLDataType t;
  t.code = code;
  t.bits = bits;
  t.lanes = 1;
  return t;
}

static sy_runtime_options options_for(const char* plugin_path) {
  sy_runtime_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.plugin_path = plugin_path;
  options.deterministic = -1;
  return options;
}

int c_api_ce_round_trip(const char* plugin_path, char* note, size_t note_size) {
  /* A trainer's argv (without the program name): one selection flag among others. */
  static const char* const argv[] = {"--micro-batch-size", "4", "--cross-entropy", "cpu_echo"};
  sy_runtime_options options = options_for(plugin_path);
  sy_runtime* runtime = NULL;
  sy_ce* ce = NULL;
  sy_error err = fresh_error();
  sy_ce_problem problem;
  float logits[2 * 3] = {0.5f, -1.0f, 2.0f, 3.0f, 0.0f, 0.25f};
  int64_t labels[2] = {2, 0};
  float loss[2] = {-1.0f, -1.0f}, lse[2] = {0.0f, 0.0f};
  int64_t logits_shape[2] = {2, 3}, row_shape[1] = {2};
  DLTensor logits_t, labels_t, loss_t, lse_t;
  sy_ce_forward_args args;
  int64_t workspace = -1;
  int i;

  options.deterministic = 1;
  options.argc = 4;
  options.argv = argv;
  if (sy_runtime_create(&options, &runtime, &err) != SY_OK || runtime == NULL)
    return fail_with(note, note_size, 1, "sy_runtime_create", &err);

  memset(&problem, 0, sizeof problem);
  problem.struct_size = sizeof problem;
  problem.rows = 2;
  problem.vocab_local = 3;
  problem.vocab_start = 0;
  problem.vocab_size = 3;
  problem.logits_dtype = dtype(kDLFloat, 32);
  problem.label_dtype = dtype(kDLInt, 64);
  problem.grad_dtype = dtype(kDLFloat, 32);
  problem.device.device_type = kDLCPU;
  problem.tp_size = 1;
  if (sy_ce_create(runtime, &problem, &ce, &err) != SY_OK || ce == NULL) {
    sy_runtime_destroy(runtime);
    return fail_with(note, note_size, 2, "sy_ce_create", &err);
  }
  sy_runtime_destroy(runtime); /* the operator outlives its runtime */

  if (strcmp(sy_ce_backend_name(ce), "cpu_echo") != 0 ||
      strcmp(sy_ce_backend_version(ce), "0.0.1") != 0 ||
      sy_ce_determinism(ce) != SY_DETERMINISTIC) {
    snprintf(note, note_size, "step 3: backend is %s %s", sy_ce_backend_name(ce),
             sy_ce_backend_version(ce));
    sy_ce_destroy(ce);
    return 3;
  }
  if (sy_ce_workspace_size(ce, &workspace, &err) != SY_OK || workspace != 0) {
    sy_ce_destroy(ce);
    return fail_with(note, note_size, 4, "sy_ce_workspace_size", &err);
  }

  logits_t = tensor(logits, 2, logits_shape, dtype(kDLFloat, 32));
  labels_t = tensor(labels, 1, row_shape, dtype(kDLInt, 64));
  loss_t = tensor(loss, 1, row_shape, dtype(kDLFloat, 32));
  lse_t = tensor(lse, 1, row_shape, dtype(kDLFloat, 32));
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.problem = NULL; /* the bound problem */
  args.logits = &logits_t;
  args.labels = &labels_t;
  args.loss = &loss_t;
  args.lse = &lse_t;
  if (sy_ce_forward(ce, &args, &err) != SY_OK) {
    sy_ce_destroy(ce);
    return fail_with(note, note_size, 5, "sy_ce_forward", &err);
  }
  for (i = 0; i < 2; ++i) {
    const float* z = logits + 3 * i;
    const double expected =
        log(exp((double)z[0]) + exp((double)z[1]) + exp((double)z[2])) - z[labels[i]];
    if (fabs(loss[i] - expected) > 1e-5 * fabs(expected)) {
      snprintf(note, note_size, "step 6: loss[%d] = %.8f, expected %.8f", i, loss[i], expected);
      sy_ce_destroy(ce);
      return 6;
    }
  }
  sy_ce_destroy(ce);
  sy_ce_destroy(NULL); /* a no-op */
  return 0;
}

int c_api_norm_round_trip(const char* plugin_path, char* note, size_t note_size) {
  sy_runtime_options options = options_for(plugin_path);
  sy_runtime* runtime = NULL;
  sy_norm_op* norm = NULL;
  sy_error err = fresh_error();
  sy_norm_problem problem;
  float x[4] = {1.0f, 2.0f, 3.0f, 4.0f}, w[4] = {1.0f, 1.0f, 2.0f, 2.0f}, y[4], rstd[1];
  int64_t x_shape[2] = {1, 4}, w_shape[1] = {4}, r_shape[1] = {1};
  DLTensor x_t, w_t, y_t, rstd_t;
  sy_norm_forward_args args;
  double r;
  int j;

  options.norm = "cpu_echo";
  options.norm_kind = "RMSNorm";
  if (sy_runtime_create(&options, &runtime, &err) != SY_OK)
    return fail_with(note, note_size, 1, "sy_runtime_create", &err);
  memset(&problem, 0, sizeof problem);
  problem.struct_size = sizeof problem;
  problem.kind = SY_NORM_RMS;
  problem.rows = 1;
  problem.hidden = 4;
  problem.eps = 0.0f;
  problem.x_dtype = problem.y_dtype = problem.weight_dtype = problem.grad_weight_dtype =
      dtype(kDLFloat, 32);
  problem.device.device_type = kDLCPU;
  if (sy_norm_op_create(runtime, &problem, &norm, &err) != SY_OK) {
    sy_runtime_destroy(runtime);
    return fail_with(note, note_size, 2, "sy_norm_op_create", &err);
  }
  x_t = tensor(x, 2, x_shape, dtype(kDLFloat, 32));
  w_t = tensor(w, 1, w_shape, dtype(kDLFloat, 32));
  y_t = tensor(y, 2, x_shape, dtype(kDLFloat, 32));
  rstd_t = tensor(rstd, 1, r_shape, dtype(kDLFloat, 32));
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.x = &x_t;
  args.weight = &w_t;
  args.y = &y_t;
  args.rstd = &rstd_t;
  if (sy_norm_op_forward(norm, &args, &err) != SY_OK) {
    sy_norm_op_destroy(norm);
    sy_runtime_destroy(runtime);
    return fail_with(note, note_size, 3, "sy_norm_op_forward", &err);
  }
  r = 1.0 / sqrt((1.0 + 4.0 + 9.0 + 16.0) / 4.0);
  for (j = 0; j < 4; ++j) {
    if (fabs(y[j] - x[j] * r * w[j]) > 1e-6) {
      snprintf(note, note_size, "step 4: y[%d] = %.8f, expected %.8f", j, y[j], x[j] * r * w[j]);
      sy_norm_op_destroy(norm);
      sy_runtime_destroy(runtime);
      return 4;
    }
  }
  if (strcmp(sy_norm_op_backend_name(norm), "cpu_echo") != 0) {
    snprintf(note, note_size, "step 5: backend %s", sy_norm_op_backend_name(norm));
    sy_norm_op_destroy(norm);
    sy_runtime_destroy(runtime);
    return 5;
  }
  sy_norm_op_destroy(norm);
  sy_runtime_destroy(runtime);
  return 0;
}

sy_status c_api_missing_backend(const char* plugin_path, char* message, size_t message_size,
                                int* out_was_null) {
  sy_runtime_options options = options_for(plugin_path);
  sy_runtime* runtime = NULL;
  sy_ce* ce = (sy_ce*)&options; /* garbage on purpose: create must reset it to NULL */
  sy_error err = fresh_error();
  sy_ce_problem problem;
  sy_status status;

  options.cross_entropy = "not_installed";
  if (sy_runtime_create(&options, &runtime, &err) != SY_OK) {
    snprintf(message, message_size, "%s", err.message);
    return err.status;
  }
  memset(&problem, 0, sizeof problem);
  problem.struct_size = sizeof problem;
  status = sy_ce_create(runtime, &problem, &ce, &err);
  *out_was_null = ce == NULL;
  snprintf(message, message_size, "%s", err.message);
  sy_runtime_destroy(runtime);
  return status;
}

sy_status c_api_bad_options(int which, char* message, size_t message_size) {
  sy_runtime_options options = options_for(NULL);
  sy_runtime* runtime = NULL;
  sy_error err = fresh_error();
  sy_status status;
  static const char* const argv[] = {"--norm", NULL};
  switch (which) {
    case 0: options.struct_size = 0; break;
    case 1: options.deterministic = 5; break;
    case 2:
      options.argc = 2;
      options.argv = argv;
      break;
    default: break;
  }
  status = sy_runtime_create(&options, &runtime, &err);
  snprintf(message, message_size, "%s", err.message);
  sy_runtime_destroy(runtime);
  return status;
}

sy_status c_api_null_handles(char* message, size_t message_size) {
  sy_error err = fresh_error();
  sy_ce_forward_args args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  if (sy_ce_backend_name(NULL) != NULL || sy_norm_op_backend_version(NULL) != NULL ||
      sy_ce_determinism(NULL) != SY_DETERMINISM_UNKNOWN) {
    snprintf(message, message_size, "accessors on NULL did not return their documented value");
    return SY_ERR_INTERNAL;
  }
  sy_runtime_destroy(NULL);
  sy_norm_op_destroy(NULL);
  if (sy_ce_forward(NULL, &args, NULL) != SY_ERR_INVALID_ARGUMENT) {
    snprintf(message, message_size, "sy_ce_forward(NULL, ..., NULL err) did not refuse");
    return SY_ERR_INTERNAL;
  }
  {
    const sy_status status = sy_ce_forward(NULL, &args, &err);
    snprintf(message, message_size, "%s", err.message);
    return status;
  }
}

int c_api_thread_group(char* note, size_t note_size) {
  sy_thread_group* group = NULL;
  sy_error err = fresh_error();
  const sy_comm* rank1;
  float values[2] = {1.0f, 2.0f};
  if (sy_thread_group_create(0, &group, &err) != SY_ERR_INVALID_ARGUMENT || group != NULL)
    return fail_with(note, note_size, 1, "size 0 was not refused", &err);
  if (strstr(err.message, "size is 0") == NULL)
    return fail_with(note, note_size, 2, "size 0 message", &err);
  if (sy_thread_group_create(1, &group, &err) != SY_OK || group == NULL)
    return fail_with(note, note_size, 3, "sy_thread_group_create(1)", &err);
  rank1 = sy_thread_group_comm(group, 0);
  if (rank1 == NULL || rank1->rank != 0 || rank1->size != 1 ||
      sy_thread_group_comm(group, 1) != NULL || sy_thread_group_comm(group, -1) != NULL) {
    sy_thread_group_destroy(group);
    snprintf(note, note_size, "step 4: communicators of a group of 1 are wrong");
    return 4;
  }
  /* One rank: an all-reduce in place leaves the values as they are. */
  if (rank1->all_reduce(rank1->ctx, values, values, 2, dtype(kDLFloat, 32), SY_REDUCE_SUM, NULL,
                        &err) != SY_OK ||
      values[0] != 1.0f || values[1] != 2.0f) {
    sy_thread_group_destroy(group);
    return fail_with(note, note_size, 5, "all_reduce on one rank", &err);
  }
  sy_thread_group_destroy(group);
  sy_thread_group_destroy(NULL);
  return 0;
}
