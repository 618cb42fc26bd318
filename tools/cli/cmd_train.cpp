// `switchyard train`: the demo. Trains a small LM head (embedding -> norm -> projection ->
// vocab-parallel cross entropy) through the selected backends, on the CPU by default, with
// --tp N ranks as N threads; prints which backend served each family, the loss as it falls
// and the throughput.
#include "commands.hpp"
#include "describe.hpp"
#include "output.hpp"

#include <switchyard/lm_head/trainer.hpp>

#include <boost/program_options/value_semantic.hpp>

#include <cstdio>
#include <iostream>
#include <new>
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

Json result_json(const lm::Trainer& trainer, const lm::TrainResult& result) {
  const lm::TrainOptions& o = trainer.options();
  const lm::ModelConfig& model = trainer.model_config();
  Json json = Json::object();
  json.set("command", "train")
      .set("device", trainer.device_name())
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
                {"parallel", "tp " + std::to_string(o.tp) + " (vocabulary shards: " +
                                 shards_text(trainer.shards()) + "), device " +
                                 trainer.device_name() + ", " +
                                 std::to_string(trainer.threads_per_rank()) +
                                 " kernel thread(s) per rank"}},
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

}  // namespace

int cmd_train(const Args& args) {
  const lm::TrainOptions defaults;
  po::options_description own("train options");
  own.add_options()
      ("steps", po::value<int64_t>()->default_value(defaults.steps), "optimizer steps")
      ("tp", po::value<int32_t>()->default_value(defaults.tp),
       "tensor-parallel ranks, run as threads; each holds a vocabulary shard of the projection")
      ("device", po::value<std::string>()->default_value(defaults.device),
       "cpu, or cuda[:<index>] (not served yet: fails with the reason)")
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
  po::variables_map vm;
  RuntimeOptions runtime_options;
  if (!parse_command_line("train", args, own, vm, runtime_options)) return 2;
  if (vm.count("help")) {
    std::cout << "Trains a small language-model head — token embedding -> norm -> output\n"
                 "projection -> vocab-parallel cross entropy — for a few hundred steps, with the\n"
                 "norm and the cross entropy served by the selected backends (forward and\n"
                 "backward). The data is the next byte of Switchyard's own documentation, or with\n"
                 "--vocab N synthetic tokens with a learnable successor. With --tp N the\n"
                 "projection is split by vocabulary over N ranks (threads of this process);\n"
                 "the losses match --tp 1.\n\n"
                 "example: switchyard train --tp 4 --norm native --normalization LayerNorm\n\n";
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

    const Runtime runtime(runtime_options);
    lm::Trainer trainer(runtime, options);
    if (!json_output) print_header(std::cout, trainer);

    Progress progress("train", options.steps, json_output);
    lm::TrainCallbacks callbacks;
    callbacks.on_step = [&](int64_t step, double loss) {
      progress.update(step, "step " + std::to_string(step) + "  loss " + fixed(loss, 4));
    };
    const lm::TrainResult result = trainer.run(callbacks);
    progress.finish();

    if (json_output) {
      std::cout << result_json(trainer, result).dump() << '\n';
    } else {
      print_result(std::cout, result);
    }
    return 0;
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
