#include "norm_run.hpp"

#include "jit/kernel_args.hpp"

#include <switchyard/plugin_helpers.hpp>

namespace switchyard::fused {
namespace {

constexpr int64_t kAlignment = 256;

int64_t align_up(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

int64_t element_bytes(const DLTensor& t) { return (t.dtype.bits * t.dtype.lanes + 7) / 8; }

int64_t stride_bytes(const DLTensor& t) { return sy::row_stride(t) * element_bytes(t); }

template <class T>
T* data_or_null(const DLTensor* t) {
  return t == nullptr ? nullptr : sy::data_as<T>(*t);
}

jit::NormKind kind_of(sy_norm_kind kind) {
  return kind == SY_NORM_LAYER ? jit::NormKind::Layer
                               : kind == SY_NORM_RMS ? jit::NormKind::Rms : jit::NormKind::L2;
}

}  // namespace

jit::NormSpecialization norm_specialization(const sy_norm_problem& p) {
  jit::NormSpecialization spec;
  spec.kind = kind_of(p.kind);
  spec.hidden = p.hidden;
  spec.x = *jit::dtype_of(p.x_dtype);
  spec.y = *jit::dtype_of(p.y_dtype);
  if (p.kind != SY_NORM_L2) {
    spec.weight = *jit::dtype_of(p.weight_dtype);
    spec.grad_weight = *jit::dtype_of(p.grad_weight_dtype);
  }
  spec.zero_centered = (p.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0;
  spec.residual = (p.flags & SY_NORM_RESIDUAL) != 0;
  spec.memory_efficient = (p.flags & SY_NORM_MEMORY_EFFICIENT) != 0;
  spec.accumulate = (p.flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0;
  return spec.canonical();
}

NormWorkspace NormWorkspace::of(const sy_norm_problem& p) {
  const jit::NormLayout layout = jit::NormLayout::of(norm_specialization(p));
  NormWorkspace w;
  w.chunks = layout.chunks(p.rows);
  const int64_t partial = align_up(w.chunks * p.hidden * 4);
  if (p.kind != SY_NORM_L2) {
    w.dweight = w.bytes;
    w.bytes += partial;
  }
  if (p.kind == SY_NORM_LAYER) {
    w.dbias = w.bytes;
    w.bytes += partial;
  }
  return w;
}

int64_t norm_workspace_bytes(const sy_norm_problem& problem) {
  return NormWorkspace::of(problem).bytes;
}

void norm_forward(const sy_norm_forward_args& args, const NormKernels& kernels, Device& device) {
  const sy_norm_problem& p = *args.problem;
  if (p.rows == 0) return;
  const jit::NormLayout layout = jit::NormLayout::of(norm_specialization(p));
  jit::NormKernelArgs a{};
  a.x = sy::data_as<const char>(*args.x);
  a.x_stride = stride_bytes(*args.x);
  if (args.residual != nullptr) {
    a.residual = sy::data_as<const char>(*args.residual);
    a.residual_stride = stride_bytes(*args.residual);
    a.residual_out = sy::data_as<char>(*args.residual_out);
    a.residual_out_stride = stride_bytes(*args.residual_out);
  }
  a.y = sy::data_as<char>(*args.y);
  a.y_stride = stride_bytes(*args.y);
  a.weight = data_or_null<const char>(args.weight);
  a.bias = data_or_null<const char>(args.bias);
  a.mean = data_or_null<float>(args.mean);
  a.rstd = sy::data_as<float>(*args.rstd);
  a.rows = p.rows;
  a.eps = static_cast<double>(p.eps);
  a.flags = args.bias != nullptr ? jit::kNormHasBias : 0;
  device.launch(kernels[jit::kNormForward],
                {static_cast<uint32_t>(p.rows), 1, static_cast<uint32_t>(layout.threads)}, &a,
                "sy_norm_forward", args.stream);
}

void norm_backward(const sy_norm_backward_args& args, const NormKernels& kernels, Device& device) {
  const sy_norm_problem& p = *args.problem;
  const jit::NormLayout layout = jit::NormLayout::of(norm_specialization(p));
  const NormWorkspace w = NormWorkspace::of(p);
  char* base = static_cast<char*>(args.workspace);
  jit::NormKernelArgs a{};
  a.dy = sy::data_as<const char>(*args.dy);
  a.dy_stride = stride_bytes(*args.dy);
  a.x_or_y = sy::data_as<const char>(*args.x_or_y);
  a.x_or_y_stride = stride_bytes(*args.x_or_y);
  a.weight = data_or_null<const char>(args.weight);
  a.bias = data_or_null<const char>(args.bias);
  a.mean_in = data_or_null<const float>(args.mean);
  a.rstd_in = sy::data_as<const float>(*args.rstd);
  if (args.d_residual_out != nullptr) {
    a.d_residual_out = sy::data_as<const char>(*args.d_residual_out);
    a.d_residual_out_stride = stride_bytes(*args.d_residual_out);
  }
  a.dx = sy::data_as<char>(*args.dx);
  a.dx_stride = stride_bytes(*args.dx);
  a.dweight = data_or_null<char>(args.dweight);
  a.dbias = data_or_null<char>(args.dbias);
  a.ws_dweight = w.dweight < 0 ? nullptr : reinterpret_cast<float*>(base + w.dweight);
  a.ws_dbias = w.dbias < 0 ? nullptr : reinterpret_cast<float*>(base + w.dbias);
  a.rows = p.rows;
  a.chunks = w.chunks;
  a.eps = static_cast<double>(p.eps);
  a.flags = (args.bias != nullptr ? jit::kNormHasBias : 0) |
            (args.dweight != nullptr ? jit::kNormWantDWeight : 0) |
            (args.dbias != nullptr ? jit::kNormWantDBias : 0) |
            (args.d_residual_out != nullptr ? jit::kNormHasDResidual : 0);
  if (p.rows > 0)
    device.launch(kernels[jit::kNormBackward],
                  {static_cast<uint32_t>(w.chunks), 1, static_cast<uint32_t>(layout.threads)}, &a,
                  "sy_norm_backward", args.stream);
  if (args.dweight != nullptr || args.dbias != nullptr) {
    const auto blocks =
        static_cast<uint32_t>((p.hidden + jit::kNormColumnThreads - 1) / jit::kNormColumnThreads);
    device.launch(kernels[jit::kNormDWeight], {blocks, 1, jit::kNormColumnThreads}, &a,
                  "sy_norm_dweight", args.stream);
  }
}

}  // namespace switchyard::fused
