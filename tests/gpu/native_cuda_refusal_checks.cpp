// Refusals that need a GPU to happen: host memory labelled as CUDA (plain and page-locked),
// a workspace in host memory, a device that does not exist, the wrong current device and
// memory of another GPU; then a valid call still works. And probe's log line on a GPU.
#include "gpu_tensor.hpp"
#include "native_cuda_checks.hpp"

#include <cmath>
#include <cstring>
#include <memory>

namespace gpu_test {
namespace {

sy_ce_problem ce_problem(int32_t device, int64_t rows = 4, int64_t vocab = 16) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = rows;
  p.vocab_local = p.vocab_size = vocab;
  p.logits_dtype = p.grad_dtype = kF32;
  p.label_dtype = kI64;
  p.device = DLDevice{kDLCUDA, device};
  p.tp_size = 1;
  p.ignore_index = -100;
  return p;
}

// The tensors of one forward, allocated on the current device and labelled problem.device.
struct CeCall {
  sy_ce_problem problem;
  GpuTensor logits, labels, loss, lse;
  DeviceBuffer workspace;
  sy_ce_forward_args args{};

  explicit CeCall(const switchyard::CrossEntropy& op)
      : problem(op.problem()),
        logits(kF32, problem.rows, problem.vocab_local, 0, problem.device.device_id),
        labels(kI64, problem.rows, 0, 0, problem.device.device_id),
        loss(kF32, problem.rows, 0, 0, problem.device.device_id),
        lse(kF32, problem.rows, 0, 0, problem.device.device_id),
        workspace(static_cast<size_t>(op.workspace_size())) {
    logits.fill(std::vector<double>(static_cast<size_t>(problem.rows * problem.vocab_local), 0.5), 0);
    labels.fill(std::vector<double>(static_cast<size_t>(problem.rows), 3), 0);
    args.struct_size = sizeof args;
    args.problem = &problem;
    args.logits = logits.dl();
    args.labels = labels.dl();
    args.loss = loss.dl();
    args.lse = lse.dl();
    args.workspace = workspace.data();
    args.workspace_bytes = op.workspace_size();
  }
};

// Calls forward and requires INVALID_ARGUMENT with every fragment in the message.
std::string expect_refusal(const switchyard::CrossEntropy& op, const sy_ce_forward_args& args,
                           std::initializer_list<const char*> fragments) {
  sy_error err{};
  err.struct_size = sizeof err;
  const sy_status status = op.forward(args, &err);
  cudaDeviceSynchronize();
  const std::string message = err.message;
  if (status != SY_ERR_INVALID_ARGUMENT)
    throw std::runtime_error(std::string("got ") + switchyard::status_name(status) + " (\"" +
                             message + "\"), expected SY_ERR_INVALID_ARGUMENT");
  for (const char* f : fragments)
    if (message.find(f) == std::string::npos)
      throw std::runtime_error("the message \"" + message + "\" does not say \"" + f + "\"");
  return message;
}

void require_two(const NativeContext& c) {
  if (c.devices < 2) throw Skip("needs 2 GPUs, this machine has " + std::to_string(c.devices));
}

}  // namespace

std::vector<Check> refusal_checks() {
  std::vector<Check> checks;
  checks.push_back({"refuse/host-memory-labelled-cuda", [](const NativeContext& c) {
    const switchyard::CrossEntropy op = c.runtime->cross_entropy(ce_problem(0));
    CeCall call(op);
    std::vector<float> host(64, 0.5f);
    DLTensor fake = *call.logits.dl();
    fake.data = host.data();
    sy_ce_forward_args a = call.args;
    a.logits = &fake;
    return expect_refusal(op, a, {"logits (", "labelled cuda:0", "ordinary host memory"});
  }});
  checks.push_back({"refuse/page-locked-labels", [](const NativeContext& c) {
    const switchyard::CrossEntropy op = c.runtime->cross_entropy(ce_problem(0));
    CeCall call(op);
    void* pinned = nullptr;
    cuda_check(cudaMallocHost(&pinned, 64), "cudaMallocHost");
    std::unique_ptr<void, cudaError_t (*)(void*)> owner(pinned, &cudaFreeHost);
    std::memset(pinned, 0, 64);
    DLTensor fake = *call.labels.dl();
    fake.data = pinned;
    sy_ce_forward_args a = call.args;
    a.labels = &fake;
    return expect_refusal(op, a, {"labels (", "page-locked host memory"});
  }});
  checks.push_back({"refuse/host-workspace", [](const NativeContext& c) {
    const switchyard::CrossEntropy op = c.runtime->cross_entropy(ce_problem(0));
    CeCall call(op);
    std::vector<unsigned char> host(static_cast<size_t>(op.workspace_size()));
    sy_ce_forward_args a = call.args;
    a.workspace = host.data();
    return expect_refusal(op, a, {"workspace (", "host memory"});
  }});
  checks.push_back({"refuse/norm-host-x", [](const NativeContext& c) {
    sy_norm_problem p{};
    p.struct_size = sizeof p;
    p.kind = SY_NORM_L2;
    p.rows = 2;
    p.hidden = 8;
    p.eps = 1e-5f;
    p.x_dtype = p.y_dtype = p.weight_dtype = p.grad_weight_dtype = kF32;
    p.device = DLDevice{kDLCUDA, 0};
    const switchyard::Norm op = c.runtime->norm(p);
    std::vector<float> host(16, 1.0f);
    GpuTensor x(kF32, 2, 8, 0, 0), y(kF32, 2, 8, 0, 0), rstd(kF32, 2, 0, 0, 0);
    DLTensor fake = *x.dl();
    fake.data = host.data();
    sy_norm_forward_args f{};
    f.struct_size = sizeof f;
    f.problem = &p;
    f.x = &fake;
    f.y = y.dl();
    f.rstd = rstd.dl();
    sy_error err{};
    err.struct_size = sizeof err;
    const sy_status status = op.forward(f, &err);
    const std::string m = err.message;
    if (status != SY_ERR_INVALID_ARGUMENT || m.find("x (") == std::string::npos ||
        m.find("host memory") == std::string::npos)
      throw std::runtime_error(std::string("got ") + switchyard::status_name(status) + ": " + m);
    return m;
  }});
  checks.push_back({"refuse/no-such-device", [](const NativeContext& c) {
    try {
      (void)c.runtime->cross_entropy(ce_problem(c.devices));
    } catch (const switchyard::Error& e) {
      const std::string m = e.what();
      if (e.status() != SY_ERR_UNAVAILABLE || m.find("does not exist") == std::string::npos)
        throw std::runtime_error(std::string("got ") + switchyard::status_name(e.status()) + ": " + m);
      return m;
    }
    throw std::runtime_error("cuda:" + std::to_string(c.devices) + " was accepted");
  }});
  checks.push_back({"refuse/wrong-current-device", [](const NativeContext& c) {
    require_two(c);
    const switchyard::CrossEntropy op = c.runtime->cross_entropy(ce_problem(1));
    cuda_check(cudaSetDevice(1), "cudaSetDevice(1)");
    CeCall call(op);  // memory on cuda:1
    cuda_check(cudaSetDevice(0), "cudaSetDevice(0)");
    return expect_refusal(op, call.args, {"problem.device = cuda:1", "current CUDA device is cuda:0"});
  }});
  checks.push_back({"refuse/memory-of-another-gpu", [](const NativeContext& c) {
    require_two(c);
    const switchyard::CrossEntropy op = c.runtime->cross_entropy(ce_problem(0));
    CeCall call(op);
    cuda_check(cudaSetDevice(1), "cudaSetDevice(1)");
    GpuTensor elsewhere(kF32, 4, 16, 0, 1);
    cuda_check(cudaSetDevice(0), "cudaSetDevice(0)");
    DLTensor fake = *elsewhere.dl();
    fake.device = DLDevice{kDLCUDA, 0};  // mislabelled
    sy_ce_forward_args a = call.args;
    a.logits = &fake;
    return expect_refusal(op, a, {"logits (", "is memory of cuda:1"});
  }});
  checks.push_back({"refuse/then-a-valid-call-works", [](const NativeContext& c) {
    const switchyard::CrossEntropy op = c.runtime->cross_entropy(ce_problem(0));
    CeCall call(op);
    call.args.stream = c.stream;
    op.forward(call.args);
    cuda_check(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
    const std::vector<double> loss = call.loss.values();
    // All logits 0.5 over 16 columns: loss = log(16) for every row.
    for (double l : loss)
      if (std::fabs(l - std::log(16.0)) > 1e-5)
        throw std::runtime_error("loss " + std::to_string(l) + ", expected log(16) = " +
                                 std::to_string(std::log(16.0)));
    return "after the refusals, forward on cuda:0 gives log(16) per row";
  }});
  checks.push_back({"probe/log-on-a-gpu", [](const NativeContext& c) {
    const switchyard::PluginInfo info = c.runtime->inspect("native");
    for (const std::string& line : info.log)
      if (line.find("CUDA path: ") != std::string::npos) {
        if (line.find("CUDA device") == std::string::npos)
          throw std::runtime_error("probe logged \"" + line + "\"");
        if (info.state != switchyard::PluginState::Ok)
          throw std::runtime_error("state " + std::string(switchyard::plugin_state_name(info.state)));
        return line;
      }
    std::string all;
    for (const std::string& line : info.log) all += line + " | ";
    throw std::runtime_error("probe logged no \"CUDA path: N CUDA devices\" line: " + all);
  }});
  return checks;
}

}  // namespace gpu_test
