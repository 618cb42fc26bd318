// CUDA graph capture of every family that declares SY_FEATURE_GRAPH_CAPTURE on CUDA (see
// graph_capture.hpp): the eager calls and two launches of their graph must agree bit for bit.
// One line per case ("PASS graph-<plugin>/<case>  detail", "FAIL ...  what went wrong",
// "SKIP ...  why"), then "N passed, M failed, K skipped". Exit 0 when nothing failed, 77
// without a GPU, 1 otherwise, 2 for a bad command line.
//
//   graph_capture_check [--plugin NAME] [--filter TEXT]
//       --plugin: the plugin to check (run.sh passes each staged plugin that declares
//       graph_capture on CUDA); without it, every plugin on the search path that does.
//       --filter: only the cases whose name contains TEXT.
#include "graph_capture.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>

namespace {

namespace graph = gpu_test::graph;
using switchyard::Family;
using switchyard::FamilyInfo;
using switchyard::PluginInfo;

constexpr int kSkipped = 77;

bool captures_on_cuda(const FamilyInfo& f) {
  return f.offered && (f.devices & SY_DEVICE_BIT(kDLCUDA)) != 0 &&
         (f.features & SY_FEATURE_GRAPH_CAPTURE) != 0;
}

struct Tally {
  int passed = 0, failed = 0, skipped = 0;

  void pass(const std::string& name, const std::string& detail) { report("PASS", &passed, name, detail); }
  void fail(const std::string& name, const std::string& detail) { report("FAIL", &failed, name, detail); }
  void skip(const std::string& name, const std::string& detail) { report("SKIP", &skipped, name, detail); }

 private:
  static void report(const char* verdict, int* counter, const std::string& name,
                     const std::string& detail) {
    ++*counter;
    std::cout << verdict << ' ' << name << "  " << detail << std::endl;
  }
};

void run_case(const graph::Case& c, const graph::Context& ctx, const std::string& prefix,
              Tally* tally) {
  const auto start = std::chrono::steady_clock::now();
  const char* verdict = "PASS";
  std::string detail;
  try {
    detail = c.run(ctx);
  } catch (const graph::Skip& s) {
    verdict = "SKIP";
    detail = s.what();
  } catch (const std::exception& e) {
    verdict = "FAIL";
    detail = e.what();
  }
  // A case that failed may leave an error behind; the next one starts clean.
  cudaDeviceSynchronize();
  cudaGetLastError();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  char timing[32];
  std::snprintf(timing, sizeof timing, " (%.0f ms)", ms);
  detail += timing;
  const std::string name = prefix + c.name;
  if (verdict[0] == 'P') tally->pass(name, detail);
  else if (verdict[0] == 'S') tally->skip(name, detail);
  else tally->fail(name, detail);
}

// Why a family is not checked, or empty when it is.
std::string not_checked(const FamilyInfo& f) {
  if ((f.devices & SY_DEVICE_BIT(kDLCUDA)) == 0) return "does not run on CUDA";
  if ((f.features & SY_FEATURE_GRAPH_CAPTURE) == 0)
    return "does not declare SY_FEATURE_GRAPH_CAPTURE, so capture is not promised";
  return {};
}

void check_plugin(const PluginInfo& info, const std::string& filter, cudaStream_t stream,
                  Tally* tally) {
  const std::string prefix = "graph-" + info.name + "/";
  if (info.state != switchyard::PluginState::Ok) {
    tally->fail(prefix + "load", std::string(switchyard::plugin_state_name(info.state)) + ": " +
                                     info.reason);
    return;
  }
  // Bind the very file that was inspected, for both families.
  switchyard::RuntimeOptions options;
  options.cross_entropy = info.path;
  options.norm = info.path;
  const switchyard::Runtime runtime(options);

  struct FamilyCases {
    Family family;
    const FamilyInfo* declared;
    std::vector<graph::Case> (*cases)();
  };
  const FamilyCases families[] = {
      {Family::CrossEntropy, &info.cross_entropy, &graph::cross_entropy_cases},
      {Family::Norm, &info.norm, &graph::norm_cases},
  };
  for (const FamilyCases& f : families) {
    if (!f.declared->offered) continue;
    const std::string family = switchyard::family_name(f.family);
    const std::string why = not_checked(*f.declared);
    if (!why.empty()) {
      tally->skip(prefix + family + "/*", "the " + family + " family " + why);
      continue;
    }
    const graph::Context ctx{&runtime, *f.declared, stream};
    for (const graph::Case& c : f.cases())
      if (filter.empty() || (prefix + c.name).find(filter) != std::string::npos)
        run_case(c, ctx, prefix, tally);
    if (f.family == Family::CrossEntropy &&
        (f.declared->features & SY_CE_FEATURE_TENSOR_PARALLEL) != 0 &&
        (filter.empty() || (prefix + "ce-tp2").find(filter) != std::string::npos))
      tally->skip(prefix + "ce-tp2",
                  "tensor parallelism > 1 is out of scope here: capturing it would capture "
                  "NCCL's collectives (tp2-nccl-" + info.name + " runs TP = 2 eagerly)");
  }
}

// The plugins to check, learned before CUDA is initialised here (inspecting runs each plugin
// in a child process).
std::vector<PluginInfo> plugins_to_check(const std::string& requested) {
  const switchyard::Runtime lister;
  if (!requested.empty()) return {lister.inspect(requested)};
  std::vector<PluginInfo> found;
  std::set<std::string> seen;
  for (const switchyard::SearchLocation& location : lister.discover(true))
    for (const PluginInfo& p : location.candidates)
      if ((captures_on_cuda(p.cross_entropy) || captures_on_cuda(p.norm)) &&
          seen.insert(p.name).second)  // an earlier file of a name shadows later ones
        found.push_back(p);
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  std::string plugin, filter;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--plugin" && i + 1 < argc) {
      plugin = argv[++i];
    } else if (arg == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else {
      std::cerr << "graph_capture_check: unexpected argument '" << arg
                << "'\nusage: graph_capture_check [--plugin NAME] [--filter TEXT]\n";
      return 2;
    }
  }
  const std::string all = plugin.empty() ? "graph/*" : "graph-" + plugin + "/*";
  std::vector<PluginInfo> plugins;
  try {
    plugins = plugins_to_check(plugin);
  } catch (const std::exception& e) {
    std::cout << "FAIL " << all << "  listing the plugins failed: " << e.what() << "\n"
              << "0 passed, 1 failed, 0 skipped\n";
    return 1;
  }

  int devices = 0;
  const cudaError_t count = cudaGetDeviceCount(&devices);
  if (count != cudaSuccess || devices < 1) {
    std::cout << "SKIP " << all << "  no usable GPU ("
              << (count != cudaSuccess ? cudaGetErrorString(count) : "0 devices") << ")\n"
              << "0 passed, 0 failed, 1 skipped\n";
    return kSkipped;
  }
  Tally tally;
  if (plugins.empty())
    tally.skip(all, "no plugin on the search path declares SY_FEATURE_GRAPH_CAPTURE on CUDA");
  cudaStream_t stream = nullptr;
  cudaError_t setup = cudaSetDevice(0);
  if (setup == cudaSuccess) setup = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (setup != cudaSuccess) {
    std::cout << "FAIL " << all << "  creating a non-blocking stream on device 0 failed: "
              << cudaGetErrorName(setup) << " (" << cudaGetErrorString(setup) << ")\n"
              << "0 passed, 1 failed, 0 skipped\n";
    return 1;
  }
  for (const PluginInfo& info : plugins) {
    try {
      check_plugin(info, filter, stream, &tally);
    } catch (const std::exception& e) {  // e.g. the Runtime could not be built
      tally.fail("graph-" + info.name + "/setup", e.what());
    }
  }
  cudaStreamDestroy(stream);
  std::cout << tally.passed << " passed, " << tally.failed << " failed, " << tally.skipped
            << " skipped\n";
  return tally.failed == 0 ? 0 : 1;
}
