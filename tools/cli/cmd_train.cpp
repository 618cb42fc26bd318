// `switchyard train`: the demo. Trains a small LM head (embedding -> norm -> projection ->
// vocab-parallel cross entropy) through the selected backends, on the CPU by default, with
// --tp N ranks as N threads; prints which backend served each family, the loss as it falls
// and the throughput. With --device cuda --tp N (N > 1) this process launches N rank
// processes of its own binary, one per GPU, joined by NCCL (libswitchyard-nccl, opened at
// run time), and waits for them; rank 0 prints.
#include "commands.hpp"
#include "describe.hpp"
#include "output.hpp"

#include <switchyard/lm_head/launcher.hpp>
#include <switchyard/lm_head/nccl_library.hpp>
#include <switchyard/lm_head/rank_process.hpp>
#include <switchyard/lm_head/trainer.hpp>

#include <boost/program_options/value_semantic.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <sstream>

namespace po = boost::program_options;

namespace switchyard::cli {
namespace {

namespace lm = switchyard::lm_head;

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string shards_text(const std::vector<lm::VocabShard>& shards) {
  std::string text;
  for (const lm::VocabShard& shard : shards) {
    if (!text.empty()) text += ", ";
    text += std::to_string(shard.vocab_local);
  }
  return text;
}

Json backend_json(const BackendInfo& backend) {
  Json json = Json::object();
  json.set("name", backend.name)
      .set("version", backend.version)
      .set("path", backend.path)
      .set("vendor", backend.vendor)
      .set("determinism", determinism_name(backend.determinism))
      .set("requested", setting_json(backend.requested));
  return json;
}

double loss_drop(const lm::TrainResult& result) {
  if (result.losses.size() < 2 || result.losses.front().loss == 0) return 0;
  return 1.0 - result.losses.back().loss / result.losses.front().loss;
}

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

Json result_json(const lm::Trainer& trainer, const lm::TrainResult& result) {
  const lm::TrainOptions& o = trainer.options();
  const lm::ModelConfig& model = trainer.model_config();
  Json json = Json::object();
  Json devices = Json::array();
  for (const std::string& name : trainer.rank_device_names()) devices.push(name);
  json.set("command", "train")
      .set("device", trainer.device_name())
      .set("devices", std::move(devices))
      .set("ranks_as", trainer.ranks_are_processes() ? "processes" : "threads")
      .set("tp", static_cast<int>(o.tp))
      .set("steps", result.steps)
      .set("batch", o.batch)
      .set("hidden", o.hidden)
      .set("vocab", model.vocab)
      .set("optimizer", lm::optimizer_name(o.optimizer))
      .set("lr", o.learning_rate)
      .set("seed", static_cast<int64_t>(o.seed))
      .set("threads_per_rank", trainer.threads_per_rank());

  Json data = Json::object();
  data.set("mode", trainer.data().mode())
      .set("path", trainer.data().path())
      .set("description", trainer.data().describe());
  json.set("data", std::move(data));

  Json shards = Json::array();
  for (size_t r = 0; r < trainer.shards().size(); ++r) {
    Json shard = Json::object();
    shard.set("rank", static_cast<int64_t>(r))
        .set("vocab_start", trainer.shards()[r].vocab_start)
        .set("vocab_local", trainer.shards()[r].vocab_local);
    shards.push(std::move(shard));
  }
  json.set("shards", std::move(shards));

  Json backends = Json::object();
  backends.set("cross_entropy", backend_json(trainer.cross_entropy_backend()));
  Json norm = backend_json(trainer.norm_backend());
  norm.set("kind", setting_json(trainer.norm_kind()));
  backends.set("norm", std::move(norm));
  json.set("backends", std::move(backends));

  Json losses = Json::array();
  for (const lm::LossPoint& point : result.losses) {
    Json entry = Json::object();
    entry.set("step", point.step).set("loss", point.loss);
    losses.push(std::move(entry));
  }
  json.set("losses", std::move(losses))
      .set("loss_drop", loss_drop(result))
      .set("tokens", result.tokens)
      .set("seconds", result.seconds)
      .set("tokens_per_s", result.tokens_per_second)
      .set("replicas_identical", result.replicas_identical);
  return json;
}

std::string parallel_text(const lm::Trainer& trainer) {
  const lm::TrainOptions& o = trainer.options();
  const std::string shards = "vocabulary shards: " + shards_text(trainer.shards());
  if (trainer.ranks_are_processes()) {
    return "tp " + std::to_string(o.tp) + " as " + std::to_string(o.tp) + " processes on " +
           joined(trainer.rank_device_names(), ", ") + ", joined by NCCL (" + shards + ")";
  }
  std::string text = "tp " + std::to_string(o.tp) + " (" + shards + "), device " +
                     trainer.device_name();
  if (trainer.device_name() == "cpu") {
    text += ", " + std::to_string(trainer.threads_per_rank()) + " kernel thread(s) per rank";
  }
  return text;
}

void print_header(std::ostream& out, const lm::Trainer& trainer) {
  const lm::TrainOptions& o = trainer.options();
  const lm::ModelConfig& model = trainer.model_config();
  out << "switchyard train: a small LM head trained through the selected backends\n";
  print_fields(out,
               {{"data", trainer.data().describe()},
                {"model", "embedding [" + std::to_string(model.vocab) + " x " +
                              std::to_string(model.hidden) + "] -> " +
                              trainer.norm_kind().describe() + " -> projection [" +
                              std::to_string(model.hidden) + " x " +
                              std::to_string(model.vocab) + "] -> cross entropy"},
                {"training", std::to_string(o.steps) + " steps of " + std::to_string(o.batch) +
                                 " tokens, " + lm::optimizer_name(o.optimizer) + " lr " +
                                 fixed(o.learning_rate, 4) + ", seed " + std::to_string(o.seed)},
                {"parallel", parallel_text(trainer)}},
               "  ");
  out << '\n';
  Table backends({"family", "backend", "version", "file", "requested"});
  for (const auto& [family, backend] :
       {std::pair<const char*, const BackendInfo*>{"cross_entropy", &trainer.cross_entropy_backend()},
        std::pair<const char*, const BackendInfo*>{"norm", &trainer.norm_backend()}}) {
    backends.add({family, backend->name, backend->version.empty() ? "-" : backend->version,
                  backend->path, backend->requested.describe()});
  }
  backends.print(out);
  out << '\n' << std::flush;
}

void print_result(std::ostream& out, const lm::TrainResult& result) {
  Table losses({"step", "loss"});
  for (const lm::LossPoint& point : result.losses) {
    losses.add({std::to_string(point.step), fixed(point.loss, 4)});
  }
  losses.print(out);
  out << '\n'
      << result.steps << " steps, " << result.tokens << " tokens in " << fixed(result.seconds, 2)
      << " s: " << fixed(result.tokens_per_second, 0) << " tokens/s; loss "
      << fixed(result.losses.front().loss, 4) << " -> " << fixed(result.losses.back().loss, 4)
      << " (" << fixed(-100.0 * loss_drop(result), 1) << " %)\n";
  if (!result.replicas_identical) {
    out << "warning: the replicated parameters (embedding, norm weights) differ between ranks "
           "at the end; the hidden-state gradient all-reduce did not keep them in sync\n";
  }
}

int fail(bool json_output, const std::string& message, sy_status status) {
  if (json_output) {
    Json json = Json::object();
    json.set("command", "train").set("error", message).set("status", status_name(status));
    std::cout << json.dump() << '\n';
  }
  return report_error("train", message + " [" + status_name(status) + "]", 1);
}

// Trains the ranks this process runs (all of them, or its process rank) and prints, unless
// this process does not run rank 0.
int train_here(const lm::TrainOptions& options, const RuntimeOptions& runtime_options,
               bool json_output) {
  const Runtime runtime(runtime_options);
  lm::Trainer trainer(runtime, options);
  const bool prints = options.process_rank <= 0;
  if (!json_output && prints) print_header(std::cout, trainer);

  Progress progress("train", options.steps, json_output || !prints);
  lm::TrainCallbacks callbacks;
  callbacks.on_step = [&](int64_t step, double loss) {
    progress.update(step, "step " + std::to_string(step) + "  loss " + fixed(loss, 4));
  };
  const lm::TrainResult result = trainer.run(callbacks);
  progress.finish();

  if (!prints) return 0;
  if (json_output) {
    std::cout << result_json(trainer, result).dump() << '\n';
  } else {
    print_result(std::cout, result);
  }
  return 0;
}

// The status a rank reported at the end of its error line ("... [SY_ERR_UNAVAILABLE]"), the
// first one in `text`; SY_ERR_INTERNAL when none is there (a crash, a signal).
sy_status status_in(const std::string& text) {
  size_t first = std::string::npos;
  sy_status found = SY_ERR_INTERNAL;
  for (const sy_status status : {SY_ERR_INVALID_ARGUMENT, SY_ERR_UNSUPPORTED, SY_ERR_UNAVAILABLE,
                                  SY_ERR_OUT_OF_MEMORY, SY_ERR_COMMUNICATION, SY_ERR_INTERNAL}) {
    const size_t at = text.find("[" + std::string(status_name(status)) + "]");
    if (at < first) {
      first = at;
      found = status;
    }
  }
  return found;
}

// One rank process of `--device cuda --tp N`, started by launch_rank_processes: joins the
// others through NCCL, then trains its vocabulary shard on GPU <device index + rank>.
int run_rank_process(lm::TrainOptions options, const lm::RankIdentity& identity,
                     const RuntimeOptions& runtime_options, bool json_output) {
  const std::string who = "rank " + std::to_string(identity.rank) + " of " +
                          std::to_string(identity.world_size);
  try {
    lm::validate_rank_identity(identity, options);
    lm::validate_options(options);
    const int32_t device = lm::parse_device(options.device).index + identity.rank;
    const lm::NcclLibrary nccl = lm::NcclLibrary::open(lm::executable_directory());
    // Declared before training so that it outlives the Trainer, which borrows it.
    const lm::NcclRankComm comm =
        nccl.create(identity.nccl_id, identity.world_size, identity.rank, device);
    options.process_rank = identity.rank;
    options.process_comm = comm.get();
    return train_here(options, runtime_options, json_output);
  } catch (const Error& e) {
    return fail(json_output, who + ": " + e.what(), e.status());
  }
}

// The launching process of `--device cuda --tp N`: checks what the ranks will need (GPUs,
// libswitchyard-nccl, the corpus), creates the NCCL unique id, starts one process per rank
// and waits. In --json mode rank 0's stdout is collected, so that exactly one JSON document
// is printed whatever happens.
int launch_rank_processes(const Args& args, const lm::TrainOptions& options, bool json_output) {
  lm::validate_options(options);
  const std::string exe_dir = lm::executable_directory();
  if (options.vocab == 0) lm::find_corpus(options.corpus, exe_dir);

  const std::string what = "--device " + options.device + " --tp " + std::to_string(options.tp);
  std::vector<std::string> problems;
  try {
    lm::require_cuda_devices_for_ranks(options);
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  std::optional<lm::NcclLibrary> nccl;
  try {
    nccl = lm::NcclLibrary::open(exe_dir);
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  if (!problems.empty()) {
    throw Error(SY_ERR_UNAVAILABLE, "cannot start the " + std::to_string(options.tp) +
                                        " rank processes (one per GPU, joined by NCCL): " +
                                        joined(problems, "\nAlso: "));
  }

  lm::LaunchSpec spec;
  spec.executable = "/proc/self/exe";  // this very binary, even if the file was replaced
  std::error_code no_path;
  spec.argv0 = std::filesystem::read_symlink("/proc/self/exe", no_path).string();
  if (spec.argv0.empty()) spec.argv0 = "switchyard";
  const std::string unique_id = nccl->new_unique_id();
  for (int32_t rank = 0; rank < options.tp; ++rank) {
    spec.arguments.push_back(
        lm::rank_process_arguments(args, lm::RankIdentity{rank, options.tp, unique_id}));
  }
  spec.environment = lm::rank_process_environment();
  spec.capture_rank0_stdout = json_output;
  std::cout.flush();
  const lm::LaunchResult launched = lm::launch_ranks(spec);

  if (launched.succeeded()) {
    std::cout << launched.rank0_stdout << std::flush;
    return 0;
  }
  // The ranks' own lines start with "switchyard train: error: "; said once is enough.
  std::string message = what + ": " + launched.failure_message();
  const std::string own_prefix = "switchyard train: error: ";
  for (size_t at; (at = message.find(own_prefix)) != std::string::npos;) {
    message.erase(at, own_prefix.size());
  }
  const lm::RankExit& rank0 = launched.ranks.front();
  const bool rank0_reported = rank0.started && !rank0.stopped && rank0.signal == 0 &&
                              rank0.exit_code != 0 &&
                              launched.rank0_stdout.find('{') != std::string::npos;
  if (json_output && rank0_reported) {
    // Rank 0 failed on its own and printed its error as JSON: that is the document.
    std::cout << launched.rank0_stdout << std::flush;
    return report_error("train", message, 1);
  }
  return fail(json_output, message, status_in(message));
}

std::optional<lm::RankIdentity> rank_identity(const po::variables_map& vm) {
  const bool rank = vm.count(lm::kRankFlag) > 0, world = vm.count(lm::kWorldSizeFlag) > 0,
             id = vm.count(lm::kNcclIdFlag) > 0;
  if (!rank && !world && !id) return std::nullopt;
  if (!rank || !world || !id) {
    std::vector<std::string> missing;
    if (!rank) missing.push_back(std::string("--") + lm::kRankFlag);
    if (!world) missing.push_back(std::string("--") + lm::kWorldSizeFlag);
    if (!id) missing.push_back(std::string("--") + lm::kNcclIdFlag);
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "--rank, --world-size and --nccl-id go together (they are set by `switchyard "
                "train --device cuda --tp N` for the rank processes it starts); missing " +
                    joined(missing, ", ") + ".");
  }
  lm::RankIdentity identity;
  identity.rank = vm[lm::kRankFlag].as<int32_t>();
  identity.world_size = vm[lm::kWorldSizeFlag].as<int32_t>();
  identity.nccl_id = vm[lm::kNcclIdFlag].as<std::string>();
  return identity;
}

}  // namespace

int cmd_train(const Args& args) {
  const lm::TrainOptions defaults;
  po::options_description own("train options");
  own.add_options()
      ("steps", po::value<int64_t>()->default_value(defaults.steps), "optimizer steps")
      ("tp", po::value<int32_t>()->default_value(defaults.tp),
       "tensor-parallel ranks, each holding a vocabulary shard of the projection: threads of "
       "this process on the CPU; on CUDA one process per GPU, joined by NCCL")
      ("device", po::value<std::string>()->default_value(defaults.device),
       "cpu, or cuda[:<index>] (rank r on GPU index + r)")
      ("batch", po::value<int64_t>()->default_value(defaults.batch), "tokens per step")
      ("hidden", po::value<int64_t>()->default_value(defaults.hidden), "hidden size H")
      ("lr", po::value<double>(), "learning rate (default: 0.01 for adam, 1.0 for sgd)")
      ("optimizer", po::value<std::string>()->default_value("adam"), "sgd or adam")
      ("vocab", po::value<int64_t>()->default_value(defaults.vocab),
       "0: next byte of the documentation corpus (vocabulary 256); N: synthetic tokens "
       "with a vocabulary of N")
      ("corpus", po::value<std::string>(),
       "text file to train on (default: ../share/switchyard/corpus.txt next to this program)")
      ("seed", po::value<uint64_t>()->default_value(defaults.seed),
       "seed of the initial weights and of the batches")
      ("log-every", po::value<int64_t>()->default_value(defaults.log_every),
       "log the mean loss every this many steps (and at the first and last step)")
      ("threads", po::value<int>()->default_value(defaults.threads),
       "CPU threads per rank for the LM head's matmuls (0: cores / tp)");
  // Set by the launching process for the rank processes it starts; not in --help.
  po::options_description hidden("rank process (internal)");
  hidden.add_options()
      (lm::kRankFlag, po::value<int32_t>(), "this process's rank")
      (lm::kWorldSizeFlag, po::value<int32_t>(), "the number of rank processes")
      (lm::kNcclIdFlag, po::value<std::string>(), "the NCCL unique id, hex");
  po::options_description accepted;
  accepted.add(own).add(hidden);
  po::variables_map vm;
  RuntimeOptions runtime_options;
  if (!parse_command_line("train", args, accepted, vm, runtime_options)) return 2;
  if (vm.count("help")) {
    std::cout << "Trains a small language-model head — token embedding -> norm -> output\n"
                 "projection -> vocab-parallel cross entropy — for a few hundred steps, with the\n"
                 "norm and the cross entropy served by the selected backends (forward and\n"
                 "backward). The data is the next byte of Switchyard's own documentation, or with\n"
                 "--vocab N synthetic tokens with a learnable successor. With --tp N the\n"
                 "projection is split by vocabulary over N ranks: threads of this process on the\n"
                 "CPU; with --device cuda one process per GPU (cuda:0..cuda:N-1), joined by NCCL\n"
                 "(libswitchyard-nccl is loaded at run time). The losses match --tp 1 up to\n"
                 "rounding, which a chaotic run amplifies (SGD at lr 1.0 with LayerNorm).\n\n"
                 "example: switchyard train --tp 4 --norm native --normalization LayerNorm\n"
                 "         switchyard train --device cuda --tp 2 --json\n\n";
    print_command_help(std::cout, "train", "[options]", own);
    return 0;
  }
  const bool json_output = vm.count("json") > 0;

  try {
    lm::TrainOptions options;
    options.steps = vm["steps"].as<int64_t>();
    options.tp = vm["tp"].as<int32_t>();
    options.device = vm["device"].as<std::string>();
    options.batch = vm["batch"].as<int64_t>();
    options.hidden = vm["hidden"].as<int64_t>();
    options.optimizer = lm::parse_optimizer(vm["optimizer"].as<std::string>());
    if (vm.count("lr")) {
      options.learning_rate = vm["lr"].as<double>();
      if (!(options.learning_rate > 0)) {
        return fail(json_output, "--lr " + std::to_string(options.learning_rate) +
                                     ": expected a learning rate > 0",
                    SY_ERR_INVALID_ARGUMENT);
      }
    }
    options.vocab = vm["vocab"].as<int64_t>();
    if (vm.count("corpus")) options.corpus = vm["corpus"].as<std::string>();
    options.seed = vm["seed"].as<uint64_t>();
    options.log_every = vm["log-every"].as<int64_t>();
    options.threads = vm["threads"].as<int>();

    if (const std::optional<lm::RankIdentity> identity = rank_identity(vm)) {
      return run_rank_process(options, *identity, runtime_options, json_output);
    }
    if (lm::parse_device(options.device).type == kDLCUDA && options.tp > 1) {
      return launch_rank_processes(args, options, json_output);
    }
    return train_here(options, runtime_options, json_output);
  } catch (const Error& e) {
    return fail(json_output, e.what(), e.status());
  } catch (const std::bad_alloc&) {
    return fail(json_output,
                "out of memory while allocating the model; use a smaller --vocab, --hidden or "
                "--batch",
                SY_ERR_OUT_OF_MEMORY);
  } catch (const std::exception& e) {
    return fail(json_output, e.what(), SY_ERR_INTERNAL);
  }
}

}  // namespace switchyard::cli
