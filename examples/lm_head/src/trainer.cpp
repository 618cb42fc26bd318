// The training loop: validation and binding up front, then one thread per tensor-parallel
// rank of this process (or the calling thread, for one), each running forward/backward and
// the optimizer on its replica.
#include <switchyard/lm_head/trainer.hpp>

#include <switchyard/comm.hpp>

#include <algorithm>
#include <cstdint>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

namespace switchyard::lm_head {
namespace {

// How long a rank waits in a collective for the others before failing instead of hanging.
// Ranks do the same work, so they arrive close together even when a step is slow; the wait
// is long only when a rank has died, and must not fire on a heavily oversubscribed machine.
constexpr int kCollectiveTimeoutMs = 120000;
constexpr int32_t kMaxTp = 64;
constexpr int64_t kMaxVocab = int64_t{1} << 24;

void require(bool ok, const std::string& flag, int64_t value, const std::string& expected) {
  if (!ok) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                flag + " " + std::to_string(value) + ": expected " + expected + ".");
  }
}

}  // namespace

void validate_options(const TrainOptions& o) {
  require(o.steps >= 1, "--steps", o.steps, "at least 1 step");
  require(o.tp >= 1 && o.tp <= kMaxTp, "--tp", o.tp,
          "1 to " + std::to_string(kMaxTp) + " ranks");
  require(o.batch >= 1 && o.batch <= (int64_t{1} << 20), "--batch", o.batch,
          "1 to 1048576 tokens per step");
  require(o.hidden >= 1 && o.hidden <= 16384, "--hidden", o.hidden, "1 to 16384");
  require(o.vocab == 0 || (o.vocab >= 2 && o.vocab <= kMaxVocab), "--vocab", o.vocab,
          "0 (byte-level corpus) or a synthetic vocabulary of 2 to " +
              std::to_string(kMaxVocab) + " tokens");
  require(o.log_every >= 1, "--log-every", o.log_every, "at least 1");
  require(o.threads >= 0, "--threads", o.threads, "0 (automatic) or more");
  if (o.process_rank >= 0 || o.process_comm != nullptr) {
    require(o.process_rank >= 0 && o.process_rank < o.tp, "rank", o.process_rank,
            "0 to " + std::to_string(o.tp - 1) + " (--tp " + std::to_string(o.tp) + ")");
    if (o.process_comm == nullptr) {
      throw Error(SY_ERR_INVALID_ARGUMENT,
                  "rank " + std::to_string(o.process_rank) + " of " + std::to_string(o.tp) +
                      ": a process rank needs the group's communicator (process_comm is "
                      "NULL).");
    }
    if (o.process_comm->size != o.tp || o.process_comm->rank != o.process_rank) {
      throw Error(SY_ERR_INVALID_ARGUMENT,
                  "rank " + std::to_string(o.process_rank) + " of " + std::to_string(o.tp) +
                      ": the communicator is rank " + std::to_string(o.process_comm->rank) +
                      " of " + std::to_string(o.process_comm->size) + "; expected rank " +
                      std::to_string(o.process_rank) + " of " + std::to_string(o.tp) + ".");
    }
  }
}

namespace {

bool same_bytes(const Tensor& a, const Tensor& b, const Device& da, const Device& db) {
  if (a.empty() || b.empty()) return a.empty() == b.empty();
  std::vector<unsigned char> ha(a.bytes()), hb(b.bytes());
  da.copy_to_host(ha.data(), a.data<void>(), a.bytes());
  db.copy_to_host(hb.data(), b.data<void>(), b.bytes());
  return ha == hb;
}

// A hash of the bytes of the replicated parameters (all but the projection shard).
uint64_t replica_hash(Model& model, const Device& device) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const Parameter& p : model.parameters()) {
    if (std::strcmp(p.name, "projection") == 0) continue;  // sharded, not replicated
    std::vector<unsigned char> bytes(p.value->bytes());
    device.copy_to_host(bytes.data(), p.value->data<void>(), bytes.size());
    for (unsigned char byte : bytes) hash = (hash ^ byte) * 0x100000001b3ull;  // FNV-1a
  }
  return hash;
}

// Whether every process's replica hashes the same: one all-reduce (MAX) of {h, ~h}, since
// max over ranks of ~h is ~(min of h). The buffer lives on the device (NCCL wants that).
bool replicas_agree(const sy_comm& comm, Model& model, const Device& device) {
  const uint64_t hash = replica_hash(model, device);
  const int64_t local[2] = {static_cast<int64_t>(hash), static_cast<int64_t>(~hash)};
  Tensor buffer(device, kInt64, {2});
  device.copy_from_host(buffer.data<void>(), local, sizeof local);
  sy_error err{};
  err.struct_size = sizeof err;
  const sy_status status = comm.all_reduce(comm.ctx, buffer.data<void>(), buffer.data<void>(), 2,
                                           kInt64, SY_REDUCE_MAX, device.stream(), &err);
  if (status != SY_OK) {
    throw Error(status, "rank " + std::to_string(comm.rank) + ": all-reduce (max) of the "
                        "replica hashes failed: " + err.message);
  }
  int64_t reduced[2];
  device.copy_to_host(reduced, buffer.data<void>(), sizeof reduced);
  return reduced[0] == ~reduced[1];  // max == min
}

}  // namespace

struct Trainer::Impl {
  TrainOptions options;
  std::unique_ptr<TokenSource> data;
  ModelConfig config;
  std::vector<VocabShard> shards;
  Setting norm_kind;
  int threads_per_rank = 1;
  std::unique_ptr<ThreadGroup> group;  // only for tp > 1 as threads
  // The ranks this process runs (all of them, or its process rank), and per local rank:
  std::vector<int32_t> ranks;
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<std::unique_ptr<Model>> models;
  std::vector<std::unique_ptr<Optimizer>> optimizers;
  std::vector<std::string> rank_device_names;  // every rank's, in rank order
  BackendInfo cross_entropy_backend;
  BackendInfo norm_backend;
};

Trainer::Trainer(const Runtime& runtime, TrainOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  validate_options(options);
  if (options.learning_rate == 0) options.learning_rate = default_learning_rate(options.optimizer);
  s.options = options;
  const bool as_processes = options.process_rank >= 0;

  // The device first: when it cannot be used, nothing else matters.
  const DeviceRequest device_request = parse_device(options.device);
  if (device_request.type == kDLCUDA && options.tp > 1 && !as_processes) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "--device " + options.device + " --tp " + std::to_string(options.tp) +
                    ": on CUDA every rank is a process of its own (one per GPU, joined by "
                    "NCCL); `switchyard train` starts them. A Trainer runs them only one rank "
                    "per process (TrainOptions::process_rank and process_comm).");
  }
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int ranks_here = as_processes ? 1 : options.tp;
  s.threads_per_rank = options.threads > 0 ? options.threads : std::max(1, cores / ranks_here);
  for (int32_t r = 0; r < options.tp; ++r) {
    if (as_processes && r != options.process_rank) continue;
    s.ranks.push_back(r);
  }
  for (int32_t r = 0; r < options.tp; ++r) {
    // On CUDA, rank r computes on the device after the requested one by r.
    DeviceRequest rank_request = device_request;
    if (device_request.type == kDLCUDA) rank_request.index = device_request.index + r;
    s.rank_device_names.push_back(device_request.type == kDLCUDA
                                      ? "cuda:" + std::to_string(rank_request.index)
                                      : "cpu");
    if (std::find(s.ranks.begin(), s.ranks.end(), r) != s.ranks.end()) {
      s.devices.push_back(open_device(rank_request, s.threads_per_rank));
    }
  }

  if (options.vocab == 0) {
    const std::string exe_dir =
        options.executable_dir.empty() ? executable_directory() : options.executable_dir;
    s.data = load_byte_corpus(find_corpus(options.corpus, exe_dir));
  } else {
    s.data = make_synthetic_tokens(options.vocab);
  }

  s.norm_kind = runtime.settings().norm_kind;
  s.config.vocab = s.data->vocab_size();
  s.config.hidden = options.hidden;
  s.config.rows = options.batch;
  s.config.norm_kind = parse_norm_kind(s.norm_kind.value);
  s.config.seed = options.seed;
  s.shards = split_vocab(s.config.vocab, options.tp);

  // Bind every local rank's backends before any rank starts: a backend that is missing or
  // cannot serve the problem fails here, at selection, not mid-step.
  const DLDevice dl_device = s.devices.front()->dl_device();
  const Norm norm = runtime.norm(norm_problem(s.config, dl_device));
  s.norm_backend = norm.backend();
  if (options.tp > 1 && !as_processes) {
    s.group = std::make_unique<ThreadGroup>(options.tp, kCollectiveTimeoutMs);
  }
  for (size_t local = 0; local < s.ranks.size(); ++local) {
    const int32_t r = s.ranks[local];
    const VocabShard shard = s.shards[static_cast<size_t>(r)];
    const Device& device = *s.devices[local];
    CrossEntropy ce = runtime.cross_entropy(
        cross_entropy_problem(s.config, shard, options.tp, device.dl_device()));
    if (local == 0) s.cross_entropy_backend = ce.backend();
    const sy_comm* comm = as_processes ? options.process_comm
                                       : (s.group ? s.group->comm(r) : nullptr);
    s.models.push_back(std::make_unique<Model>(device, s.config, shard, std::move(ce), norm, comm));
    s.optimizers.push_back(make_optimizer(options.optimizer, options.learning_rate, device));
  }
}

Trainer::~Trainer() = default;

TrainResult Trainer::run(const TrainCallbacks& callbacks) {
  Impl& s = *impl_;
  const size_t local_ranks = s.ranks.size();
  const int64_t steps = s.options.steps;
  TrainResult result;
  std::vector<std::exception_ptr> failures(local_ranks);

  auto rank_loop = [&](size_t local) {
    try {
      const bool reports = s.ranks[local] == 0;  // rank 0 logs, wherever it runs
      Model& model = *s.models[local];
      Optimizer& optimizer = *s.optimizers[local];
      const std::vector<Parameter> params = model.parameters();
      Batch batch;
      double interval_sum = 0;
      int64_t interval_steps = 0;
      for (int64_t step = 1; step <= steps; ++step) {
        // Every rank draws the same batch: it is a function of (seed, step) only.
        s.data->fill_batch(s.options.seed, step, s.options.batch, batch);
        const double loss = model.forward_backward(batch);
        optimizer.step(params);
        if (!reports) continue;
        interval_sum += loss;
        ++interval_steps;
        if (callbacks.on_step) callbacks.on_step(step, loss);
        if (step == 1 || step % s.options.log_every == 0 || step == steps) {
          const LossPoint point{step, interval_sum / static_cast<double>(interval_steps)};
          result.losses.push_back(point);
          if (callbacks.on_log) callbacks.on_log(point);
          interval_sum = 0;
          interval_steps = 0;
        }
      }
    } catch (...) {
      failures[local] = std::current_exception();
    }
  };

  const auto start = std::chrono::steady_clock::now();
  if (local_ranks == 1) {
    rank_loop(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t local = 0; local < local_ranks; ++local) threads.emplace_back(rank_loop, local);
    for (std::thread& t : threads) t.join();
  }
  const auto stop = std::chrono::steady_clock::now();

  // Report the root cause: a rank that failed on its own rather than one that timed out
  // waiting for it in a collective.
  std::exception_ptr first, root;
  for (const std::exception_ptr& failure : failures) {
    if (!failure) continue;
    if (!first) first = failure;
    try {
      std::rethrow_exception(failure);
    } catch (const Error& e) {
      if (!root && e.status() != SY_ERR_COMMUNICATION) root = failure;
    } catch (...) {
      if (!root) root = failure;
    }
  }
  if (root) std::rethrow_exception(root);
  if (first) std::rethrow_exception(first);

  result.steps = steps;
  result.tokens = steps * s.options.batch;
  result.seconds = std::chrono::duration<double>(stop - start).count();
  result.tokens_per_second =
      result.seconds > 0 ? static_cast<double>(result.tokens) / result.seconds : 0.0;

  if (s.options.process_rank >= 0) {
    result.replicas_identical =
        s.options.tp == 1 || replicas_agree(*s.options.process_comm, *s.models[0], *s.devices[0]);
    return result;
  }
  for (size_t r = 1; r < local_ranks; ++r) {
    auto reference = s.models[0]->parameters();
    auto replica = s.models[r]->parameters();
    for (size_t i = 0; i < reference.size(); ++i) {
      if (std::strcmp(reference[i].name, "projection") == 0) continue;  // sharded, not replicated
      if (!same_bytes(*reference[i].value, *replica[i].value, *s.devices[0], *s.devices[r])) {
        result.replicas_identical = false;
      }
    }
  }
  return result;
}

const TrainOptions& Trainer::options() const { return impl_->options; }
const TokenSource& Trainer::data() const { return *impl_->data; }
const ModelConfig& Trainer::model_config() const { return impl_->config; }
const std::vector<VocabShard>& Trainer::shards() const { return impl_->shards; }
const BackendInfo& Trainer::cross_entropy_backend() const { return impl_->cross_entropy_backend; }
const BackendInfo& Trainer::norm_backend() const { return impl_->norm_backend; }
const Setting& Trainer::norm_kind() const { return impl_->norm_kind; }
int Trainer::threads_per_rank() const { return impl_->threads_per_rank; }
std::string Trainer::device_name() const { return impl_->devices.front()->name(); }
std::vector<std::string> Trainer::rank_device_names() const { return impl_->rank_device_names; }
bool Trainer::ranks_are_processes() const { return impl_->options.process_rank >= 0; }

}  // namespace switchyard::lm_head
