#include "norm_bench.hpp"

#include "check.hpp"
#include "dtype.hpp"
#include "host_random.hpp"
#include "tensor_ref.hpp"
#include "timing_loop.hpp"

#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_norm.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

namespace switchyard::bench {
namespace {

std::vector<double> decode_range(const std::vector<uint8_t>& encoded, DLDataType dtype,
                                 int64_t first, int64_t count) {
  const int64_t width = dtype_bytes(dtype);
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k)
    out[static_cast<size_t>(k)] = decode_element(dtype, encoded.data() + (first + k) * width);
  return out;
}

std::vector<double> decode_rows(const std::vector<uint8_t>& encoded, DLDataType dtype,
                                const std::vector<int64_t>& rows, int64_t hidden) {
  std::vector<double> out;
  out.reserve(rows.size() * static_cast<size_t>(hidden));
  for (int64_t i : rows) {
    const auto row = decode_range(encoded, dtype, i * hidden, hidden);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

conformance::NormReferenceProblem reference_problem(const NormCaseData& d, int64_t rows) {
  conformance::NormReferenceProblem p;
  p.kind = d.kind;
  p.rows = rows;
  p.hidden = d.hidden;
  p.eps = d.eps;
  return p;
}

// Reference forward and backward of `rows` consecutive rows from `first` (or of the given
// rows), through the conformance suite's float64 formulas.
struct ReferenceRows {
  conformance::NormReferenceForward forward;
  conformance::NormReferenceBackward backward;
};

ReferenceRows reference_rows(const NormCaseData& d, const std::vector<double>& x,
                             const std::vector<double>& dy, int64_t rows,
                             const std::vector<double>& gamma, const std::vector<double>& beta) {
  const auto problem = reference_problem(d, rows);
  conformance::NormReferenceForwardInput in;
  in.x = x;
  in.gamma = gamma;
  in.beta = beta;
  ReferenceRows out;
  out.forward = conformance::reference_norm_forward(problem, in);
  conformance::NormReferenceBackwardInput back;
  back.dy = dy;
  back.x_or_y = out.forward.h;
  back.gamma = gamma;
  back.beta = beta;
  back.mean = out.forward.mean;
  back.rstd = out.forward.rstd;
  out.backward = conformance::reference_norm_backward(problem, back);
  return out;
}

// dweight and dbias sum over every row: chunks of rows on all cores, partial sums added in
// chunk order so that the reference does not depend on the thread count.
void reference_row_sums(NormCaseData& d, const std::vector<double>& gamma,
                        const std::vector<double>& beta) {
  const int64_t chunk_rows = 128;
  const int64_t chunks = (d.rows + chunk_rows - 1) / chunk_rows;
  std::vector<ReferenceRows> partial(static_cast<size_t>(chunks));
  const int64_t threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, chunks);
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t c = t; c < chunks; c += threads) {
        const int64_t first = c * chunk_rows, count = std::min(chunk_rows, d.rows - first);
        auto x = decode_range(d.x, d.dtype, first * d.hidden, count * d.hidden);
        auto dy = decode_range(d.dy, d.dtype, first * d.hidden, count * d.hidden);
        ReferenceRows r = reference_rows(d, x, dy, count, gamma, beta);
        // Keep only the row sums: the per-element outputs of every chunk would not fit.
        r.forward = {};
        r.backward.dx.clear();
        partial[static_cast<size_t>(c)] = std::move(r);
      }
    });
  for (auto& thread : pool) thread.join();
  auto add = [](std::vector<double>& into, const std::vector<double>& part) {
    if (into.empty()) into.assign(part.size(), 0.0);
    for (size_t j = 0; j < part.size(); ++j) into[j] += part[j];
  };
  for (const auto& p : partial) {
    add(d.dgamma, p.backward.dgamma);
    add(d.dgamma_scale, p.backward.dgamma_scale);
    add(d.dbeta, p.backward.dbeta);
    add(d.dbeta_scale, p.backward.dbeta_scale);
  }
}

struct NormState {
  Device* device = nullptr;
  sy_norm_problem problem{};
  std::optional<Norm> op;
  DeviceBuffer x, dy, gamma, beta, y, dx, mean, rstd, dgamma, dbeta, workspace;
  std::unique_ptr<TensorRef> t_x, t_dy, t_gamma, t_beta, t_y, t_dx, t_mean, t_rstd, t_dgamma, t_dbeta;
  sy_norm_forward_args forward{};
  sy_norm_backward_args backward{};
  int64_t workspace_bytes = 0;
};

void allocate_state(NormState& s, const NormCaseData& d) {
  Device& device = *s.device;
  const DLDevice where = device.dl_device();
  const bool layer = d.kind == SY_NORM_LAYER;
  const int64_t width = dtype_bytes(d.dtype);
  const int64_t tensor_bytes = d.rows * d.hidden * width;
  const int64_t vector_bytes = d.hidden * width;
  const std::initializer_list<int64_t> matrix{d.rows, d.hidden};
  const std::initializer_list<int64_t> vector{d.hidden};
  const std::initializer_list<int64_t> per_row{d.rows};

  s.x = device.allocate(tensor_bytes);
  device.upload(s.x.data(), d.x.data(), tensor_bytes);
  s.dy = device.allocate(tensor_bytes);
  device.upload(s.dy.data(), d.dy.data(), tensor_bytes);
  s.gamma = device.allocate(vector_bytes);
  device.upload(s.gamma.data(), d.gamma.data(), vector_bytes);
  s.y = device.allocate(tensor_bytes);
  s.dx = device.allocate(tensor_bytes);
  s.rstd = device.allocate(d.rows * 4);
  s.dgamma = device.allocate(vector_bytes);
  if (layer) {
    s.beta = device.allocate(vector_bytes);
    device.upload(s.beta.data(), d.beta.data(), vector_bytes);
    s.mean = device.allocate(d.rows * 4);
    s.dbeta = device.allocate(vector_bytes);
  }
  s.workspace_bytes = s.op->workspace_size();
  if (s.workspace_bytes > 0) s.workspace = device.allocate(s.workspace_bytes);
  device.synchronize("uploading the inputs");

  s.t_x = std::make_unique<TensorRef>(s.x.data(), where, d.dtype, matrix);
  s.t_dy = std::make_unique<TensorRef>(s.dy.data(), where, d.dtype, matrix);
  s.t_y = std::make_unique<TensorRef>(s.y.data(), where, d.dtype, matrix);
  s.t_dx = std::make_unique<TensorRef>(s.dx.data(), where, d.dtype, matrix);
  s.t_gamma = std::make_unique<TensorRef>(s.gamma.data(), where, d.dtype, vector);
  s.t_dgamma = std::make_unique<TensorRef>(s.dgamma.data(), where, d.dtype, vector);
  s.t_rstd = std::make_unique<TensorRef>(s.rstd.data(), where, kF32, per_row);
  if (layer) {
    s.t_beta = std::make_unique<TensorRef>(s.beta.data(), where, d.dtype, vector);
    s.t_dbeta = std::make_unique<TensorRef>(s.dbeta.data(), where, d.dtype, vector);
    s.t_mean = std::make_unique<TensorRef>(s.mean.data(), where, kF32, per_row);
  }
  auto get = [](const std::unique_ptr<TensorRef>& t) { return t ? t->get() : nullptr; };

  s.forward.struct_size = sizeof s.forward;
  s.forward.problem = &s.problem;
  s.forward.x = get(s.t_x);
  s.forward.residual = nullptr;
  s.forward.weight = get(s.t_gamma);
  s.forward.bias = get(s.t_beta);
  s.forward.y = get(s.t_y);
  s.forward.residual_out = nullptr;
  s.forward.mean = get(s.t_mean);
  s.forward.rstd = get(s.t_rstd);
  s.forward.workspace = s.workspace.data();
  s.forward.workspace_bytes = s.workspace_bytes;
  s.forward.stream = device.stream();

  s.backward.struct_size = sizeof s.backward;
  s.backward.problem = &s.problem;
  s.backward.dy = get(s.t_dy);
  s.backward.x_or_y = get(s.t_x);
  s.backward.weight = get(s.t_gamma);
  s.backward.bias = get(s.t_beta);
  s.backward.mean = get(s.t_mean);
  s.backward.rstd = get(s.t_rstd);
  s.backward.d_residual_out = nullptr;
  s.backward.dx = get(s.t_dx);
  s.backward.dweight = get(s.t_dgamma);
  s.backward.dbias = get(s.t_dbeta);
  s.backward.workspace = s.workspace.data();
  s.backward.workspace_bytes = s.workspace_bytes;
  s.backward.stream = device.stream();
}

std::vector<double> read_rows(Device& device, const DeviceBuffer& buffer, DLDataType dtype,
                              const std::vector<int64_t>& rows, int64_t hidden) {
  const int64_t width = dtype_bytes(dtype);
  std::vector<uint8_t> row(static_cast<size_t>(hidden * width));
  std::vector<double> out;
  for (int64_t i : rows) {
    device.download(row.data(), static_cast<const uint8_t*>(buffer.data()) + i * hidden * width,
                    hidden * width);
    for (int64_t j = 0; j < hidden; ++j) out.push_back(decode_element(dtype, row.data() + j * width));
  }
  return out;
}

std::vector<double> read_f32_at(Device& device, const DeviceBuffer& buffer, int64_t count,
                                const std::vector<int64_t>& at) {
  std::vector<float> all(static_cast<size_t>(count));
  device.download(all.data(), buffer.data(), count * 4);
  std::vector<double> out;
  for (int64_t i : at) out.push_back(all[static_cast<size_t>(i)]);
  return out;
}

std::vector<double> read_vector(Device& device, const DeviceBuffer& buffer, DLDataType dtype,
                                int64_t count) {
  std::vector<uint8_t> raw(static_cast<size_t>(count * dtype_bytes(dtype)));
  device.download(raw.data(), buffer.data(), count * dtype_bytes(dtype));
  return decode_range(raw, dtype, 0, count);
}

}  // namespace

NormCaseData make_norm_data(const CaseSpec& spec, DLDataType dtype, const RunSettings& settings) {
  NormCaseData d;
  d.kind = spec.norm_kind;
  d.rows = spec.rows;
  d.hidden = spec.cols;
  d.dtype = dtype;
  const bool layer = d.kind == SY_NORM_LAYER;
  const uint64_t seed = settings.seed * 1000003u + static_cast<uint64_t>(d.hidden * 7 + d.kind);
  d.x = random_elements(d.rows * d.hidden, dtype, -3.0f, 3.0f, seed);
  d.dy = random_elements(d.rows * d.hidden, dtype, -1.0f, 1.0f, seed + 1);
  d.gamma = random_elements(d.hidden, dtype, 0.5f, 1.5f, seed + 2);
  if (layer) d.beta = random_elements(d.hidden, dtype, -0.5f, 0.5f, seed + 3);
  d.sample_rows = sample_indices(settings.check_rows, d.rows, seed + 4);

  const auto gamma = decode_range(d.gamma, dtype, 0, d.hidden);
  const auto beta = layer ? decode_range(d.beta, dtype, 0, d.hidden) : std::vector<double>{};
  const int64_t samples = static_cast<int64_t>(d.sample_rows.size());
  ReferenceRows sample = reference_rows(d, decode_rows(d.x, dtype, d.sample_rows, d.hidden),
                                        decode_rows(d.dy, dtype, d.sample_rows, d.hidden), samples,
                                        gamma, beta);
  d.y = std::move(sample.forward.y);
  d.mean = std::move(sample.forward.mean);
  d.rstd = std::move(sample.forward.rstd);
  d.dx = std::move(sample.backward.dx);
  reference_row_sums(d, gamma, beta);
  return d;
}

Result run_norm_backend(const CaseSpec& spec, const NormCaseData& data, const std::string& backend,
                        const RunContext& context) {
  Result result;
  result.case_name = spec.name;
  result.backend = backend;
  const bool layer = data.kind == SY_NORM_LAYER;

  RuntimeOptions options = context.settings.runtime_base;
  options.norm = backend;
  options.norm_kind = layer ? "LayerNorm" : "RMSNorm";
  std::optional<Runtime> runtime;
  NormState s;
  s.device = context.setup.devices.at(0);
  s.problem.struct_size = sizeof s.problem;
  s.problem.kind = data.kind;
  s.problem.rows = data.rows;
  s.problem.hidden = data.hidden;
  s.problem.eps = data.eps;
  s.problem.x_dtype = data.dtype;
  s.problem.y_dtype = data.dtype;
  s.problem.weight_dtype = data.dtype;
  s.problem.grad_weight_dtype = data.dtype;
  s.problem.device = s.device->dl_device();
  s.problem.flags = 0;
  s.problem.sm_margin = 0;
  try {
    runtime.emplace(options);
    s.op.emplace(runtime->norm(s.problem));
  } catch (const Error& e) {
    result.status = e.status() == SY_ERR_UNSUPPORTED ? Status::Unsupported : Status::Error;
    result.reason = std::string(status_name(e.status())) + ": " + e.what();
    return result;
  }
  const BackendInfo& info = s.op->backend();
  result.backend_version = info.version;
  result.backend_path = info.path;
  result.notes.push_back("weight, bias, dweight and dbias in " + dtype_label(data.dtype) +
                         "; dweight/dbias computed in every backward");

  std::optional<int64_t> free_before;
  try {
    allocate_state(s, data);
    s.device->flush_cache();
    free_before = s.device->free_memory();
  } catch (const std::exception& e) {
    result.status = Status::Error;
    result.reason = std::string("setting up the buffers failed: ") + e.what();
    return result;
  }
  result.workspace_bytes = s.workspace_bytes;

  auto call = [&](int, int phase) {
    if (phase == 0)
      s.op->forward(s.forward);
    else
      s.op->backward(s.backward);
  };
  PhaseCallbacks callbacks;
  callbacks.phases = 2;
  callbacks.run = call;  // nothing is overwritten: no inputs to re-copy
  try {
    const TimedPhases timed = time_phases(context, callbacks);
    result.total_ms = timed.total_ms;
    result.forward_ms = timed.phase_ms[0];
    result.backward_ms = timed.phase_ms[1];
    if (free_before && timed.min_free_bytes)
      result.growth_bytes = std::max<int64_t>(0, *free_before - *timed.min_free_bytes);
  } catch (const Error& e) {
    result.status = Status::Error;
    result.reason = std::string("a timed call failed: ") + status_name(e.status()) + ": " + e.what();
    return result;
  } catch (const std::exception& e) {
    result.status = Status::Error;
    result.reason = std::string("the timed repetitions failed: ") + e.what();
    return result;
  }

  CheckReport& check = result.check;
  check.ran = true;
  check.rows = static_cast<int64_t>(data.sample_rows.size());
  try {
    Device& device = *s.device;
    const int64_t width = dtype_bytes(data.dtype);
    device.fill_async(s.y.data(), 0xFF, data.rows * data.hidden * width);
    device.fill_async(s.dx.data(), 0xFF, data.rows * data.hidden * width);
    device.fill_async(s.rstd.data(), 0xFF, data.rows * 4);
    device.fill_async(s.dgamma.data(), 0xFF, data.hidden * width);
    if (layer) {
      device.fill_async(s.mean.data(), 0xFF, data.rows * 4);
      device.fill_async(s.dbeta.data(), 0xFF, data.hidden * width);
    }
    call(0, 0);
    call(0, 1);
    device.synchronize("the correctness run of " + backend);

    using conformance::elementwise_tolerance;
    using conformance::statistic_tolerance;
    const auto y = read_rows(device, s.y, data.dtype, data.sample_rows, data.hidden);
    const auto dx = read_rows(device, s.dx, data.dtype, data.sample_rows, data.hidden);
    const auto rstd = read_f32_at(device, s.rstd, data.rows, data.sample_rows);
    const auto dgamma = read_vector(device, s.dgamma, data.dtype, data.hidden);
    check.outputs.push_back(check_output("y", y, data.y,
                                         elementwise_tolerance(data.dtype, max_abs(data.y)), data.hidden));
    check.outputs.push_back(check_output("dx", dx, data.dx,
                                         elementwise_tolerance(data.dtype, max_abs(data.dx)), data.hidden));
    if (layer) {
      const auto mean = read_f32_at(device, s.mean, data.rows, data.sample_rows);
      check.outputs.push_back(check_output("mean", mean, data.mean,
                                           statistic_tolerance(data.dtype, max_abs(data.mean))));
    }
    check.outputs.push_back(check_output("rstd", rstd, data.rstd,
                                         statistic_tolerance(data.dtype, max_abs(data.rstd))));
    const auto sums = conformance::row_sum_tolerance(data.dtype);
    check.outputs.push_back(check_output("dweight", dgamma, data.dgamma, sums, 0, &data.dgamma_scale));
    if (layer) {
      const auto dbeta = read_vector(device, s.dbeta, data.dtype, data.hidden);
      check.outputs.push_back(check_output("dbias", dbeta, data.dbeta, sums, 0, &data.dbeta_scale));
    }
  } catch (const std::exception& e) {
    check.error = std::string("the correctness run failed: ") + e.what();
  }
  return result;
}

}  // namespace switchyard::bench
