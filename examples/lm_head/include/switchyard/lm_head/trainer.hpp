// The training loop behind `switchyard train`: N tensor-parallel ranks, each with its own
// Model replica and vocabulary shard, either as N threads of this process
// (switchyard::ThreadGroup; the CPU) or as one rank of a group of processes whose
// communicator the caller supplies (NCCL; CUDA, one process per GPU).
#ifndef SWITCHYARD_LM_HEAD_TRAINER_HPP
#define SWITCHYARD_LM_HEAD_TRAINER_HPP

#include <switchyard/lm_head/data.hpp>
#include <switchyard/lm_head/model.hpp>
#include <switchyard/lm_head/optimizer.hpp>
#include <switchyard/switchyard.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace switchyard::lm_head {

struct TrainOptions {
  int64_t steps = 300;
  int32_t tp = 1;
  std::string device = "cpu";
  int64_t batch = 256;   // tokens per step
  int64_t hidden = 64;
  double learning_rate = 0;  // 0: default_learning_rate(optimizer)
  OptimizerKind optimizer = OptimizerKind::Adam;
  int64_t vocab = 0;     // 0: the byte-level corpus; otherwise synthetic tokens
  std::string corpus;    // "": the corpus shipped with switchyard
  uint64_t seed = 1;
  int64_t log_every = 25;
  int threads = 0;       // CPU threads per rank for the LM head's kernels; 0: cores / tp
  std::string executable_dir;  // where the shipped corpus is looked up; "": this process's

  // One rank of a multi-process group: this process runs rank `process_rank` of `tp` only,
  // on device index + process_rank, and `process_comm` (borrowed; size tp, rank
  // process_rank; must outlive the Trainer) connects it to the others. -1: this process runs
  // every rank, as threads — the only way on the CPU; on CUDA only with tp 1.
  int32_t process_rank = -1;
  const sy_comm* process_comm = nullptr;
};

// Checks the options that need no data, device or backend (ranges of the numbers, the
// process-rank fields). Throws switchyard::Error(SY_ERR_INVALID_ARGUMENT) naming the flag,
// the expected and the actual value.
void validate_options(const TrainOptions& options);

// A logged point: the mean of the batch losses of the steps after the previous point up to
// and including `step` (steps count from 1; the first point is step 1 alone, the untrained
// model's loss).
struct LossPoint {
  int64_t step = 0;
  double loss = 0;
};

struct TrainResult {
  std::vector<LossPoint> losses;
  int64_t steps = 0;
  int64_t tokens = 0;
  double seconds = 0;
  double tokens_per_second = 0;
  // Embedding and norm weights are bit-identical on every rank at the end (always true for
  // a single rank); false would mean the ranks' replicas drifted apart. Across processes it
  // is checked by all-reducing a hash of their bytes.
  bool replicas_identical = true;
};

struct TrainCallbacks {
  std::function<void(int64_t step, double batch_loss)> on_step;  // after every step
  std::function<void(const LossPoint&)> on_log;                  // at every logged point
};

class Trainer {
 public:
  // Validates the options, loads the data, opens the device(s) and binds the selected
  // backends for every rank; everything that can fail before training fails here with
  // switchyard::Error (bad option, missing corpus, no CUDA, backend missing or unsuitable).
  Trainer(const Runtime& runtime, TrainOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Callbacks run on rank 0's thread, and only in the process that runs rank 0; the
  // losses of the result, too, are only filled there. With a process rank, run() is
  // collective: every rank's process must call it.
  TrainResult run(const TrainCallbacks& callbacks = {});

  const TrainOptions& options() const;  // with defaults resolved (learning rate)
  const TokenSource& data() const;
  const ModelConfig& model_config() const;
  const std::vector<VocabShard>& shards() const;
  const BackendInfo& cross_entropy_backend() const;
  const BackendInfo& norm_backend() const;
  const Setting& norm_kind() const;
  int threads_per_rank() const;
  std::string device_name() const;  // this process's first rank's: "cpu", "cuda:1"
  // Every rank's device, in rank order, including those of other processes.
  std::vector<std::string> rank_device_names() const;
  // Whether the ranks are processes (a process rank was given) rather than threads.
  bool ranks_are_processes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::lm_head

#endif
