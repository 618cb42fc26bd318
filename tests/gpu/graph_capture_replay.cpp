// The comparison at the heart of graph_capture_check: eager calls, then the same calls
// captured into a CUDA graph and launched twice, every output bit-identical.
#include "graph_capture.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>

namespace gpu_test::graph {
namespace {

constexpr unsigned char kPoison = 0xFF;
// The workspace gets another pattern before every run: a plugin must not rely on what an
// earlier call left there.
constexpr unsigned char kWorkspacePattern[] = {0x5a, 0xa5, 0x3c};
constexpr int kLaunches = 2;
static_assert(sizeof kWorkspacePattern > kLaunches, "one workspace pattern per run");

struct GraphDeleter {
  void operator()(cudaGraph_t graph) const { cudaGraphDestroy(graph); }
};
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t exec) const { cudaGraphExecDestroy(exec); }
};
using Graph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, GraphDeleter>;
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

std::string cuda_error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

size_t element_bytes(const DLTensor& t) { return static_cast<size_t>(t.dtype.bits / 8) * t.dtype.lanes; }

size_t tensor_bytes(const Output& o) {
  const DLTensor& t = *o.tensor->dl();
  if (t.strides != nullptr)
    throw std::logic_error("graph_capture_check: output " + o.name +
                           " has row padding; the comparison needs compact outputs");
  size_t elements = 1;
  for (int d = 0; d < t.ndim; ++d) elements *= static_cast<size_t>(t.shape[d]);
  return elements * element_bytes(t);
}

std::string hex(const unsigned char* at, size_t bytes) {
  std::string text = "0x";
  char digits[3];
  for (size_t b = bytes; b-- > 0;) {  // little-endian: the most significant byte last
    std::snprintf(digits, sizeof digits, "%02x", at[b]);
    text += digits;
  }
  return text;
}

// An accumulated output's first contents, kept on the device so that restoring it is ordered
// on the stream like everything else.
struct Saved {
  const Output* output = nullptr;
  size_t bytes = 0;
  DeviceBuffer pristine;
};

void reset(cudaStream_t stream, const std::vector<Saved>& saved, void* workspace,
           size_t workspace_bytes, unsigned char workspace_pattern) {
  for (const Saved& s : saved) {
    void* data = s.output->tensor->dl()->data;
    if (s.output->accumulated)
      cuda_check(cudaMemcpyAsync(data, s.pristine.data(), s.bytes, cudaMemcpyDeviceToDevice,
                                 stream),
                 "cudaMemcpyAsync (restoring " + s.output->name + ")");
    else
      cuda_check(cudaMemsetAsync(data, kPoison, s.bytes, stream),
                 "cudaMemsetAsync (poisoning " + s.output->name + ")");
  }
  if (workspace_bytes > 0)
    cuda_check(cudaMemsetAsync(workspace, workspace_pattern, workspace_bytes, stream),
               "cudaMemsetAsync (workspace)");
}

std::vector<std::vector<unsigned char>> download(const std::vector<Saved>& saved) {
  std::vector<std::vector<unsigned char>> images;
  for (const Saved& s : saved) {
    std::vector<unsigned char> bytes = s.output->tensor->bytes();
    bytes.resize(s.bytes);  // a 0-element tensor still owns one byte
    images.push_back(std::move(bytes));
  }
  return images;
}

// The eager run must have produced something: no element of a written output still holds the
// poison, and an accumulated output changed. Otherwise identical poison would compare equal.
void require_written(const std::vector<Saved>& saved,
                     const std::vector<std::vector<unsigned char>>& eager) {
  for (size_t k = 0; k < saved.size(); ++k) {
    const Output& o = *saved[k].output;
    const std::vector<unsigned char>& bytes = eager[k];
    if (o.accumulated) {
      if (bytes == saved[k].pristine.download())
        throw std::runtime_error("the eager run did not add anything into " + o.name +
                                 " (accumulate-grad-weight); nothing to compare the graph with");
      continue;
    }
    const size_t width = element_bytes(*o.tensor->dl());
    for (size_t e = 0; e + width <= bytes.size(); e += width) {
      bool poisoned = true;
      for (size_t b = 0; b < width && poisoned; ++b) poisoned = bytes[e + b] == kPoison;
      if (poisoned)
        throw std::runtime_error("the eager run left " + o.name + "[" + std::to_string(e / width) +
                                 "] unwritten (still the poison pattern " +
                                 hex(&bytes[e], width) + "); the plugin must write every element");
    }
  }
}

void require_same(const std::vector<Saved>& saved,
                  const std::vector<std::vector<unsigned char>>& eager,
                  const std::vector<std::vector<unsigned char>>& replayed, int launch) {
  for (size_t k = 0; k < saved.size(); ++k) {
    if (eager[k] == replayed[k]) continue;
    const Output& o = *saved[k].output;
    const size_t width = element_bytes(*o.tensor->dl());
    const size_t elements = eager[k].size() / width;
    size_t first = elements, differing = 0;
    for (size_t e = 0; e < elements; ++e)
      if (std::memcmp(&eager[k][e * width], &replayed[k][e * width], width) != 0) {
        if (first == elements) first = e;
        ++differing;
      }
    const DLTensor& t = *o.tensor->dl();
    const std::string where =
        t.ndim == 2 ? " (row " + std::to_string(first / static_cast<size_t>(t.shape[1])) +
                          ", column " + std::to_string(first % static_cast<size_t>(t.shape[1])) + ")"
                    : "";
    const unsigned char* graph_value = &replayed[k][first * width];
    bool unwritten = !o.accumulated;
    for (size_t b = 0; b < width && unwritten; ++b) unwritten = graph_value[b] == kPoison;
    char patterns[96];
    std::snprintf(patterns, sizeof patterns, "0x%02x for the eager run, 0x%02x for this launch",
                  kWorkspacePattern[0], kWorkspacePattern[launch]);
    throw std::runtime_error(
        o.name + " (" + short_name(o.tensor->dtype()) + ") after graph launch " +
        std::to_string(launch) + " differs from the eager run at element " +
        std::to_string(first) + where + ": eager " + hex(&eager[k][first * width], width) +
        ", graph " + hex(graph_value, width) + " (" + std::to_string(differing) + " of " +
        std::to_string(elements) + " elements differ" +
        (o.accumulated ? "; accumulated output, restored before every run" : "") + "). " +
        (unwritten ? "The graph left it unwritten (still the poison): work that was not "
                     "captured, e.g. launched on another stream. "
                   : "") +
        "The workspace was filled with " + patterns +
        ": a plugin reading workspace it did not write first differs here");
  }
}

// Captures `calls`; a call that fails during capture (a synchronisation, an allocation, work
// on another stream) is reported with cudaStreamEndCapture's verdict.
Graph capture(cudaStream_t stream, const Calls& calls) {
  cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal)");
  std::string call_error;
  try {
    calls(stream);
  } catch (const std::exception& e) {
    call_error = e.what();
  }
  cudaGraph_t raw = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &raw);
  Graph graph(raw);
  cudaGetLastError();  // capture errors are not sticky; leave none behind
  if (!call_error.empty())
    throw std::runtime_error("a call failed during stream capture: " + call_error +
                             "; cudaStreamEndCapture: " + cuda_error_text(ended) +
                             ". A plugin declaring SY_FEATURE_GRAPH_CAPTURE must neither "
                             "synchronise nor allocate nor use another stream during a call");
  if (ended != cudaSuccess)
    throw std::runtime_error("capture failed: cudaStreamEndCapture returned " +
                             cuda_error_text(ended) +
                             " although every call reported success (the plugin ignored a "
                             "CUDA error during capture: a synchronisation, an allocation or "
                             "work on another stream)");
  if (graph == nullptr)
    throw std::runtime_error("cudaStreamEndCapture succeeded but returned no graph");
  return graph;
}

}  // namespace

std::string eager_versus_graph(cudaStream_t stream, const std::vector<Output>& outputs,
                               void* workspace, size_t workspace_bytes, const Calls& calls) {
  std::vector<Saved> saved(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    saved[k].output = &outputs[k];
    saved[k].bytes = tensor_bytes(outputs[k]);
    if (outputs[k].accumulated) {
      saved[k].pristine = DeviceBuffer(saved[k].bytes);
      cuda_check(cudaMemcpy(saved[k].pristine.data(), outputs[k].tensor->dl()->data,
                            saved[k].bytes, cudaMemcpyDeviceToDevice),
                 "cudaMemcpy (saving " + outputs[k].name + ")");
    }
  }
  // The inputs were uploaded by (pageable, possibly still in flight) cudaMemcpy: let them land
  // before work on a non-blocking stream reads them.
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after uploading the inputs)");

  reset(stream, saved, workspace, workspace_bytes, kWorkspacePattern[0]);
  calls(stream);  // eager
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (eager run)");
  const std::vector<std::vector<unsigned char>> eager = download(saved);
  require_written(saved, eager);

  const Graph graph = capture(stream, calls);
  size_t nodes = 0;
  cuda_check(cudaGraphGetNodes(graph.get(), nullptr, &nodes), "cudaGraphGetNodes");
  cudaGraphExec_t raw_exec = nullptr;
  cuda_check(cudaGraphInstantiate(&raw_exec, graph.get(), 0), "cudaGraphInstantiate");
  const GraphExec exec(raw_exec);

  for (int launch = 1; launch <= kLaunches; ++launch) {
    reset(stream, saved, workspace, workspace_bytes, kWorkspacePattern[launch]);
    cuda_check(cudaGraphLaunch(exec.get(), stream),
               "cudaGraphLaunch (launch " + std::to_string(launch) + ")");
    cuda_check(cudaStreamSynchronize(stream),
               "cudaStreamSynchronize (graph launch " + std::to_string(launch) + ")");
    require_same(saved, eager, download(saved), launch);
  }

  std::string names;
  for (const Output& o : outputs) names += (names.empty() ? "" : ", ") + o.name;
  return "eager run and " + std::to_string(kLaunches) + " graph launches bit-identical (" +
         std::to_string(nodes) + " graph nodes; " + names + ")";
}

void rethrow_binding(const switchyard::Error& error) {
  if (error.status() == SY_ERR_UNSUPPORTED)
    throw Skip(std::string("the plugin refuses this problem: ") + error.what());
  throw error;
}

}  // namespace gpu_test::graph
