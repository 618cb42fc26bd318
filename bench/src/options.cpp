#include "options.hpp"

#include "bench_error.hpp"
#include "dtype.hpp"

#include <boost/program_options.hpp>

#include <sstream>

namespace po = boost::program_options;

namespace switchyard::bench {
namespace {

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& value : values) {
    std::stringstream stream(value);
    std::string item;
    while (std::getline(stream, item, ','))
      if (!item.empty()) out.push_back(item);
  }
  return out;
}

// One --norm-hidden value: a whole number of columns in [1, 1048576].
int64_t parse_hidden(const std::string& text) {
  constexpr int64_t kMax = int64_t{1} << 20;
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 1 || value > kMax)
    throw BenchError("--norm-hidden '" + text + "' is not a hidden size; expected whole numbers in [1, " +
                     std::to_string(kMax) + "], comma-separated");
  return value;
}

#ifdef SWITCHYARD_BENCH_HAVE_CUDA
constexpr const char* kDefaultDevice = "cuda";
#else
constexpr const char* kDefaultDevice = "cpu";
#endif

po::options_description describe() {
  po::options_description d("switchyard-bench options");
  d.add_options()
      ("help,h", "print this help")
      ("backends", po::value<std::vector<std::string>>()->composing(),
       "backends to run, comma-separated names or .so paths (default: every plugin found that "
       "declares --device, per family)")
      ("family", po::value<std::string>()->default_value("all"), "ce | norm | all")
      ("device", po::value<std::string>()->default_value(kDefaultDevice), "cuda | cpu")
      ("gpu", po::value<int>()->default_value(0), "CUDA device index (rank 0 with real TP)")
      ("reps", po::value<int>()->default_value(20), "timed repetitions (median of these; >= 20)")
      ("warmup", po::value<int>()->default_value(5), "untimed repetitions first")
      ("cases", po::value<std::vector<std::string>>()->composing(),
       "case names, comma-separated (see --list-cases; default: all of --family)")
      ("small", "tiny shapes with the same case names (CPU smoke test)")
      ("norm-hidden", po::value<std::vector<std::string>>()->composing(),
       "extra norm cases rmsnorm_H and layernorm_H (16384 rows, 64 with --small) for each hidden "
       "size H, comma-separated (e.g. 5120,6144)")
      ("json", po::value<std::string>(), "also write the results as JSON to this file ('-': stdout, "
       "and the table goes to stderr)")
      ("list-cases", "print the cases and their floors, then exit (as JSON with --json -)")
      ("dtype", po::value<std::string>()->default_value("bf16"), "data dtype: bf16 | f16 | f32")
      ("grad-buffer", po::value<std::string>()->default_value("inplace"),
       "CE gradient: inplace (over the logits, re-copied before each rep) | separate")
      ("tp-mode", po::value<std::string>()->default_value("auto"),
       "TP2 cases: auto (real TP2: CPU thread group, or NCCL with 2+ GPUs) | single (the per-rank "
       "shape at tp_size 1)")
      ("hold-us", po::value<int>()->default_value(1000),
       "CUDA: hold the stream this long before each timed rep, so the host queues the whole rep "
       "and the events time the GPU alone (0: off, host launch gaps count)")
      ("hold-kind", po::value<std::string>()->default_value("gpu"),
       "CUDA: how the stream is held: gpu (a kernel spinning on the GPU timer, as peers.py's "
       "torch.cuda._sleep) | host (a host function that sleeps; the first timed phase also waits "
       "for the device to learn that it returned)")
      ("check-rows", po::value<int>()->default_value(32), "rows checked against the float64 reference")
      ("copy-bytes", po::value<int64_t>()->default_value(0),
       "buffer size of the copy-bandwidth measurement (0: 4 GiB on CUDA, 256 MiB on the CPU)")
      ("seed", po::value<uint64_t>()->default_value(1234), "seed of the random inputs")
      ("plugin-path", po::value<std::vector<std::string>>()->composing(),
       "folder or .so searched before the default plugin folder (repeatable)")
      ("quiet", "no progress line on stderr");
  return d;
}

}  // namespace

std::string usage_text() {
  std::ostringstream out;
  out << "usage: switchyard-bench [options]\n\n"
         "Times every selected backend on PERFORMANCE.md's cases through the public host API:\n"
         "median/min/max ms, GB/s, x floor (floor = bytes / copy bandwidth measured in the same\n"
         "run), extra device memory, collectives issued, and a float64 correctness check.\n"
         "A benchmark, not a test: it never fails on a time (exit 3 only when a check fails or a\n"
         "backend errors).\n\n"
      << describe();
  return out.str();
}

BenchOptions parse_options(int argc, char** argv) {
  BenchOptions o;
  for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + std::string(argv[i]);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(describe()).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw BenchError(std::string(e.what()) + " (see switchyard-bench --help)");
  }
  o.help = vm.count("help") > 0;
  o.list_cases = vm.count("list-cases") > 0;
  o.small = vm.count("small") > 0;
  o.quiet = vm.count("quiet") > 0;
  if (vm.count("backends")) o.backends = split_list(vm["backends"].as<std::vector<std::string>>());
  if (vm.count("cases")) o.cases = split_list(vm["cases"].as<std::vector<std::string>>());
  if (vm.count("norm-hidden"))
    for (const std::string& item : split_list(vm["norm-hidden"].as<std::vector<std::string>>()))
      o.norm_hidden.push_back(parse_hidden(item));
  if (vm.count("plugin-path")) o.plugin_path = vm["plugin-path"].as<std::vector<std::string>>();
  if (vm.count("json")) o.json_path = vm["json"].as<std::string>();

  const std::string family = vm["family"].as<std::string>();
  if (family == "ce") o.family_norm = false;
  else if (family == "norm") o.family_ce = false;
  else if (family != "all")
    throw BenchError("--family '" + family + "' is not a family; expected ce, norm or all");

  o.device = vm["device"].as<std::string>();
  if (o.device != "cuda" && o.device != "cpu")
    throw BenchError("--device '" + o.device + "' is not supported; expected cuda or cpu");
  o.gpu = vm["gpu"].as<int>();

  o.reps = vm["reps"].as<int>();
  o.warmup = vm["warmup"].as<int>();
  if (o.reps < 1) throw BenchError("--reps must be at least 1, got " + std::to_string(o.reps));
  if (o.warmup < 0) throw BenchError("--warmup must be at least 0, got " + std::to_string(o.warmup));
  if (o.reps < 20)
    o.warnings.push_back("--reps " + std::to_string(o.reps) +
                         " is below the 20 repetitions PERFORMANCE.md asks for: medians are less "
                         "stable; do not quote these numbers");

  o.dtype = parse_data_dtype(vm["dtype"].as<std::string>());
  const std::string grad = vm["grad-buffer"].as<std::string>();
  if (grad != "inplace" && grad != "separate")
    throw BenchError("--grad-buffer '" + grad + "' is not supported; expected inplace or separate");
  o.grad_in_place = grad == "inplace";
  o.tp_mode = vm["tp-mode"].as<std::string>();
  if (o.tp_mode != "auto" && o.tp_mode != "single")
    throw BenchError("--tp-mode '" + o.tp_mode + "' is not supported; expected auto or single");
  o.hold_us = vm["hold-us"].as<int>();
  const std::string hold_kind = vm["hold-kind"].as<std::string>();
  if (hold_kind != "gpu" && hold_kind != "host")
    throw BenchError("--hold-kind '" + hold_kind + "' is not supported; expected gpu or host");
  o.hold_on_host = hold_kind == "host";
  if (o.hold_us < 0 || o.hold_us > 1000000)
    throw BenchError("--hold-us must be in [0, 1000000], got " + std::to_string(o.hold_us));
  o.check_rows = vm["check-rows"].as<int>();
  if (o.check_rows < 1)
    throw BenchError("--check-rows must be at least 1, got " + std::to_string(o.check_rows));
  o.copy_bytes = vm["copy-bytes"].as<int64_t>();
  if (o.copy_bytes < 0)
    throw BenchError("--copy-bytes must be >= 0, got " + std::to_string(o.copy_bytes));
  o.seed = vm["seed"].as<uint64_t>();
  return o;
}

}  // namespace switchyard::bench
