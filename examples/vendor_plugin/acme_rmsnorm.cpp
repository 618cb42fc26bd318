// "acme": a vendor's RMSNorm for float32 CPU tensors, shipped as a binary plugin.
// Small on purpose: it shows the whole contract (entry, descriptor, probe, supports with
// reasons, workspace, forward/backward under sy::guarded) and passes `switchyard check acme`.
#include <switchyard/plugin_helpers.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace {

const sy_host* g_host = nullptr;

sy_status probe(sy_error* err) { return sy::clear_error(err); }

sy_status supports(const sy_norm_problem* p, sy_error* err) {
  return sy::guarded(err, [&] {
    if (p == nullptr || p->struct_size < sizeof(sy_norm_problem))
      sy::fail(SY_ERR_INVALID_ARGUMENT, "problem is NULL or its struct_size is too small");
    if (p->kind != SY_NORM_RMS)
      sy::fail(SY_ERR_UNSUPPORTED, "acme implements RMSNorm only (kind " +
                                       std::to_string(p->kind) + " requested)");
    if (p->device.device_type != kDLCPU)
      sy::fail(SY_ERR_UNSUPPORTED, "acme runs on the CPU only, problem is on " +
                                       sy::device_name(p->device));
    for (DLDataType t : {p->x_dtype, p->y_dtype, p->weight_dtype, p->grad_weight_dtype})
      if (!sy::same(t, sy::kF32))
        sy::fail(SY_ERR_UNSUPPORTED, "acme handles float32 only, got " + sy::dtype_name(t));
    if (p->flags != 0)
      sy::fail(SY_ERR_UNSUPPORTED, "acme supports no SY_NORM_* flags, got flags 0x" +
                                       std::to_string(p->flags));
    if (p->rows < 0 || p->hidden < 1 || !(p->eps > 0.0f))
      sy::fail(SY_ERR_INVALID_ARGUMENT, "rows must be >= 0, hidden >= 1 and eps > 0");
  });
}

// Re-raises supports()'s refusal inside a guarded call.
void require_supported(const sy_norm_problem* p) {
  sy_error e{sizeof(sy_error), SY_OK, {}};
  if (supports(p, &e) != SY_OK) throw sy::Failure(e.status, e.message);
}

sy_status workspace_size(const sy_norm_problem* p, int64_t* bytes, sy_error* err) {
  return sy::guarded(err, [&] {
    require_supported(p);
    if (bytes == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "bytes is NULL");
    *bytes = 0;
  });
}

sy_status forward(const sy_norm_forward_args* a, sy_error* err) {
  return sy::guarded(err, [&] {
    if (a == nullptr || a->problem == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "args or args->problem is NULL");
    require_supported(a->problem);
    const sy_norm_problem& p = *a->problem;
    const int64_t n = p.rows, h = p.hidden;
    sy::check_tensor(a->x, "x", sy::kF32, p.device, {n, h});
    sy::check_tensor(a->weight, "weight", sy::kF32, p.device, {h});
    sy::check_tensor(a->y, "y", sy::kF32, p.device, {n, h});
    sy::check_tensor(a->rstd, "rstd", sy::kF32, p.device, {n});
    const float* w = sy::data_as<float>(*a->weight);
    for (int64_t i = 0; i < n; ++i) {
      const float* x = sy::data_as<float>(*a->x) + i * sy::row_stride(*a->x);
      float* y = sy::data_as<float>(*a->y) + i * sy::row_stride(*a->y);
      double sum_sq = 0;
      for (int64_t j = 0; j < h; ++j) sum_sq += double(x[j]) * x[j];
      const float rstd = float(1.0 / std::sqrt(sum_sq / double(h) + p.eps));
      for (int64_t j = 0; j < h; ++j) y[j] = x[j] * rstd * w[j];
      sy::data_as<float>(*a->rstd)[i] = rstd;
    }
  });
}

sy_status backward(const sy_norm_backward_args* a, sy_error* err) {
  return sy::guarded(err, [&] {
    if (a == nullptr || a->problem == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "args or args->problem is NULL");
    require_supported(a->problem);
    const sy_norm_problem& p = *a->problem;
    const int64_t n = p.rows, h = p.hidden;
    sy::check_tensor(a->dy, "dy", sy::kF32, p.device, {n, h});
    sy::check_tensor(a->x_or_y, "x", sy::kF32, p.device, {n, h});
    sy::check_tensor(a->weight, "weight", sy::kF32, p.device, {h});
    sy::check_tensor(a->rstd, "rstd", sy::kF32, p.device, {n});
    sy::check_tensor(a->dx, "dx", sy::kF32, p.device, {n, h});
    if (a->dweight) sy::check_tensor(a->dweight, "dweight", sy::kF32, p.device, {h});
    const float* w = sy::data_as<float>(*a->weight);
    std::vector<double> dw(static_cast<size_t>(h), 0.0);  // rows summed in order: deterministic
    for (int64_t i = 0; i < n; ++i) {
      const float* x = sy::data_as<float>(*a->x_or_y) + i * sy::row_stride(*a->x_or_y);
      const float* dy = sy::data_as<float>(*a->dy) + i * sy::row_stride(*a->dy);
      float* dx = sy::data_as<float>(*a->dx) + i * sy::row_stride(*a->dx);
      const double rstd = sy::data_as<float>(*a->rstd)[i];
      double dot = 0;
      for (int64_t j = 0; j < h; ++j) dot += double(dy[j]) * w[j] * x[j] * rstd;
      const double mean_dot = dot / double(h);
      for (int64_t j = 0; j < h; ++j) {
        const double xhat = x[j] * rstd;
        dx[j] = float(rstd * (double(dy[j]) * w[j] - xhat * mean_dot));
        dw[static_cast<size_t>(j)] += double(dy[j]) * xhat;
      }
    }
    if (a->dweight)
      for (int64_t j = 0; j < h; ++j)
        sy::data_as<float>(*a->dweight)[j] = float(dw[static_cast<size_t>(j)]);
  });
}

const sy_norm kNorm = {
    sizeof(sy_norm), SY_DTYPE_F32, SY_DEVICE_BIT(kDLCPU), SY_NORM_FEATURE_RMS, SY_DETERMINISTIC,
    supports, workspace_size, forward, backward,
};

const sy_plugin kPlugin = {
    sizeof(sy_plugin), SY_ABI_MAJOR, SY_ABI_MINOR, "acme", "1.0.0", "ACME Kernels",
    "Example vendor plugin: float32 RMSNorm on the CPU", probe, nullptr, &kNorm,
    "example built out of tree against the installed Switchyard SDK",
};

}  // namespace

extern "C" SY_PLUGIN_EXPORT const sy_plugin* sy_plugin_v1(const sy_host* host) {
  g_host = host;
  sy::log(host, SY_LOG_DEBUG, "acme", "acme RMSNorm plugin loaded");
  return &kPlugin;
}
