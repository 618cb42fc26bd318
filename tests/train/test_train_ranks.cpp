// The Trainer as one rank of a group whose communicator the caller supplies — what each GPU
// process of `switchyard train --device cuda --tp N` runs. Here the "processes" are threads
// and the communicator is the thread group, so everything but NCCL and CUDA is exercised: the
// losses must equal those of the same ranks run as threads by one Trainer, bit for bit.
#include <doctest/doctest.h>

#include <switchyard/comm.hpp>
#include <switchyard/lm_head/trainer.hpp>
#include <switchyard/switchyard.hpp>

#include "test_paths.hpp"

#include <memory>
#include <thread>
#include <vector>

namespace lm = switchyard::lm_head;
using switchyard::Error;

namespace {

switchyard::Runtime native_runtime() {
  switchyard::RuntimeOptions options;
  options.environment = std::map<std::string, std::string>{
      {"SWITCHYARD_PLUGIN_SYSTEM_PATH", switchyard::test::plugin_dir()}};
  return switchyard::Runtime(options);
}

lm::TrainOptions small_options(int32_t tp) {
  lm::TrainOptions options;
  options.vocab = 501;  // unequal shards
  options.steps = 12;
  options.batch = 32;
  options.hidden = 16;
  options.tp = tp;
  options.log_every = 4;
  options.threads = 1;
  return options;
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Runs one Trainer per rank, each as a "process" rank on its own thread.
std::vector<lm::TrainResult> run_as_processes(const switchyard::Runtime& runtime,
                                              std::vector<lm::TrainOptions> per_rank) {
  const int32_t tp = static_cast<int32_t>(per_rank.size());
  switchyard::ThreadGroup group(tp, 60000);
  std::vector<std::unique_ptr<lm::Trainer>> trainers;
  for (int32_t r = 0; r < tp; ++r) {
    per_rank[static_cast<size_t>(r)].process_rank = r;
    per_rank[static_cast<size_t>(r)].process_comm = group.comm(r);
    trainers.push_back(std::make_unique<lm::Trainer>(runtime, per_rank[static_cast<size_t>(r)]));
    CHECK(trainers.back()->ranks_are_processes());
  }
  std::vector<lm::TrainResult> results(static_cast<size_t>(tp));
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < tp; ++r) {
    threads.emplace_back([&, r] { results[static_cast<size_t>(r)] = trainers[static_cast<size_t>(r)]->run(); });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

std::vector<double> losses_of(const lm::TrainResult& result) {
  std::vector<double> losses;
  for (const lm::LossPoint& point : result.losses) losses.push_back(point.loss);
  return losses;
}

}  // namespace

TEST_CASE("process ranks with a supplied communicator train exactly like thread ranks") {
  const switchyard::Runtime runtime = native_runtime();
  lm::Trainer threads(runtime, small_options(2));
  CHECK_FALSE(threads.ranks_are_processes());
  const lm::TrainResult reference = threads.run();
  REQUIRE(reference.losses.size() == 4);  // steps 1, 4, 8, 12

  const auto results = run_as_processes(runtime, {small_options(2), small_options(2)});
  CHECK(losses_of(results[0]) == losses_of(reference));
  CHECK(results[1].losses.empty());  // only rank 0 logs
  CHECK(results[0].steps == 12);
  CHECK(results[0].replicas_identical);
  CHECK(results[1].replicas_identical);
  CHECK(losses_of(results[0]).back() < losses_of(results[0]).front());
}

TEST_CASE("process ranks compare their replicas through the communicator") {
  // Different seeds: different initial embeddings, so the replicas cannot agree.
  const switchyard::Runtime runtime = native_runtime();
  lm::TrainOptions rank0 = small_options(2), rank1 = small_options(2);
  rank1.seed = 2;
  const auto results = run_as_processes(runtime, {rank0, rank1});
  CHECK_FALSE(results[0].replicas_identical);
  CHECK_FALSE(results[1].replicas_identical);
}

TEST_CASE("a process rank needs a matching communicator; CUDA with tp > 1 needs process ranks") {
  const switchyard::Runtime runtime = native_runtime();
  switchyard::ThreadGroup group(2, 1000);

  lm::TrainOptions no_comm = small_options(2);
  no_comm.process_rank = 1;
  std::string message = error_of([&] { lm::Trainer trainer(runtime, no_comm); });
  CHECK(message.find("rank 1 of 2") != std::string::npos);
  CHECK(message.find("process_comm is NULL") != std::string::npos);

  lm::TrainOptions wrong_rank = small_options(2);
  wrong_rank.process_rank = 0;
  wrong_rank.process_comm = group.comm(1);
  message = error_of([&] { lm::Trainer trainer(runtime, wrong_rank); });
  CHECK(message.find("the communicator is rank 1 of 2; expected rank 0 of 2") != std::string::npos);

  lm::TrainOptions out_of_range = small_options(2);
  out_of_range.process_rank = 2;
  out_of_range.process_comm = group.comm(1);
  message = error_of([&] { lm::Trainer trainer(runtime, out_of_range); });
  CHECK(message.find("rank 2: expected 0 to 1 (--tp 2)") != std::string::npos);

  lm::TrainOptions cuda_threads = small_options(2);
  cuda_threads.device = "cuda";
  message = error_of([&] { lm::Trainer trainer(runtime, cuda_threads); });
  CHECK(message.find("--device cuda --tp 2") != std::string::npos);
  CHECK(message.find("every rank is a process of its own") != std::string::npos);
}
