// The LM head's non-numeric parts: vocabulary shards, data sources, devices, options.
#include <doctest/doctest.h>

#include <switchyard/lm_head/data.hpp>
#include <switchyard/lm_head/device.hpp>
#include <switchyard/lm_head/model.hpp>
#include <switchyard/lm_head/optimizer.hpp>
#include <switchyard/switchyard.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace lm = switchyard::lm_head;
using switchyard::Error;

namespace {

// The message of the switchyard::Error that fn throws, or "" when it throws none.
template <class Fn>
std::string error_of(Fn&& fn, sy_status* status = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (status) *status = e.status();
    return e.what();
  }
  return "";
}

struct TempFile {
  explicit TempFile(const std::string& contents) {
    path = (std::filesystem::temp_directory_path() /
            ("switchyard-train-test-" + std::to_string(std::rand()) + ".txt")).string();
    std::ofstream(path, std::ios::binary) << contents;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

}  // namespace

TEST_CASE("the vocabulary is split into contiguous shards, unequal when it must be") {
  const auto shards = lm::split_vocab(10, 4);
  REQUIRE(shards.size() == 4);
  const int64_t expected_local[] = {3, 3, 2, 2};
  int64_t next = 0;
  for (size_t r = 0; r < shards.size(); ++r) {
    CHECK(shards[r].vocab_start == next);
    CHECK(shards[r].vocab_local == expected_local[r]);
    next += shards[r].vocab_local;
  }
  CHECK(next == 10);
  CHECK(lm::split_vocab(256, 1).front().vocab_local == 256);

  const std::string message = error_of([] { lm::split_vocab(3, 4); });
  CHECK(message.find("--tp 4") != std::string::npos);
  CHECK(message.find("vocabulary size (3)") != std::string::npos);
}

TEST_CASE("norm kinds are Megatron's --normalization names") {
  CHECK(lm::parse_norm_kind("LayerNorm") == SY_NORM_LAYER);
  CHECK(lm::parse_norm_kind("RMSNorm") == SY_NORM_RMS);
  CHECK(lm::parse_norm_kind("L2Norm") == SY_NORM_L2);
  const std::string message = error_of([] { lm::parse_norm_kind("BatchNorm"); });
  CHECK(message.find("'BatchNorm'") != std::string::npos);
  CHECK(message.find("LayerNorm, RMSNorm or L2Norm") != std::string::npos);
}

TEST_CASE("the byte corpus yields next-byte pairs, the same for the same seed and step") {
  const std::string text = "switchyard trains a tiny head";
  TempFile file(text);
  const auto corpus = lm::load_byte_corpus(file.path);
  CHECK(corpus->vocab_size() == 256);
  CHECK(corpus->mode() == "corpus");
  CHECK(corpus->describe().find(std::to_string(text.size()) + " bytes") != std::string::npos);

  lm::Batch a, b, c;
  corpus->fill_batch(7, 3, 64, a);
  corpus->fill_batch(7, 3, 64, b);
  corpus->fill_batch(7, 4, 64, c);
  CHECK(a.inputs == b.inputs);
  CHECK(a.targets == b.targets);
  CHECK(a.inputs != c.inputs);
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    // Each pair is two neighbouring bytes of the text.
    bool found = false;
    for (size_t at = 0; at + 1 < text.size() && !found; ++at) {
      found = static_cast<unsigned char>(text[at]) == a.inputs[i] &&
              static_cast<unsigned char>(text[at + 1]) == a.targets[i];
    }
    CHECK(found);
  }
}

TEST_CASE("a missing or too short corpus is reported with the path and the next step") {
  const std::string missing = error_of([] { lm::find_corpus("/nonexistent/corpus.txt", ""); });
  CHECK(missing.find("--corpus /nonexistent/corpus.txt") != std::string::npos);
  CHECK(missing.find("no such file") != std::string::npos);

  const std::string not_built = error_of([] { lm::find_corpus("", "/nonexistent/bin"); });
  CHECK(not_built.find("/nonexistent/share/switchyard/corpus.txt") != std::string::npos);
  CHECK(not_built.find("--corpus") != std::string::npos);
  CHECK(not_built.find("--vocab") != std::string::npos);

  TempFile one_byte("x");
  const std::string too_short = error_of([&] { lm::load_byte_corpus(one_byte.path); });
  CHECK(too_short.find("at least 2 bytes") != std::string::npos);
  CHECK(too_short.find("found 1") != std::string::npos);
}

TEST_CASE("synthetic tokens stay in the vocabulary and mostly follow the successor rule") {
  constexpr int64_t kVocab = 32000;
  const auto data = lm::make_synthetic_tokens(kVocab, 0.2);
  CHECK(data->vocab_size() == kVocab);
  CHECK(data->mode() == "synthetic");
  lm::Batch batch;
  data->fill_batch(1, 1, 4000, batch);
  // The successor of a token is whatever it is followed by most often.
  std::map<int64_t, std::map<int64_t, int>> follows;
  std::map<int64_t, int> frequency;
  for (size_t i = 0; i < batch.inputs.size(); ++i) {
    CHECK(batch.inputs[i] >= 0);
    CHECK(batch.inputs[i] < kVocab);
    CHECK(batch.targets[i] >= 0);
    CHECK(batch.targets[i] < kVocab);
    ++follows[batch.inputs[i]][batch.targets[i]];
    ++frequency[batch.inputs[i]];
  }
  // A Zipf law: a few tokens carry much of the mass.
  int top = 0;
  for (const auto& [token, count] : frequency) top = std::max(top, count);
  CHECK(top > 200);
  // For the most frequent token, one target dominates (probability 0.8 plus noise).
  for (const auto& [token, count] : frequency) {
    if (count != top) continue;
    int best = 0;
    for (const auto& [target, times] : follows[token]) best = std::max(best, times);
    CHECK(best > 0.7 * count);
  }
  CHECK(error_of([] { lm::make_synthetic_tokens(1); }).find("--vocab 1") != std::string::npos);
}

TEST_CASE("--device: cpu opens; cuda opens where there is a GPU, else fails with the reason") {
  CHECK(lm::parse_device("cpu").type == kDLCPU);
  CHECK(lm::parse_device("cuda").type == kDLCUDA);
  CHECK(lm::parse_device("cuda:3").index == 3);
  CHECK(error_of([] { lm::parse_device("tpu"); }).find("expected 'cpu', 'cuda'") !=
        std::string::npos);
  CHECK(error_of([] { lm::parse_device("cuda:x"); }).find("cuda:<index>") != std::string::npos);

  CHECK(lm::open_device(lm::parse_device("cpu"), 2)->name() == "cpu");
  int visible = 0;
  lm::describe_cuda_devices(&visible);
  if (visible > 0) {
    CHECK(lm::open_device(lm::parse_device("cuda"), 1)->name() == "cuda:0");
  } else {
    sy_status status = SY_OK;
    const std::string message =
        error_of([] { lm::open_device(lm::parse_device("cuda"), 1); }, &status);
    INFO(message);
    CHECK(status == SY_ERR_UNAVAILABLE);
    CHECK(message.find("--device cuda:0: cannot train on CUDA") != std::string::npos);
    CHECK(message.find("--device cpu") != std::string::npos);
  }
  // An index past the devices there are, on any machine.
  sy_status status = SY_OK;
  const std::string message =
      error_of([] { lm::open_device(lm::parse_device("cuda:1000"), 1); }, &status);
  INFO(message);
  CHECK(status == SY_ERR_UNAVAILABLE);
  CHECK(message.find("--device cuda:1000") != std::string::npos);
}

TEST_CASE("optimizer names and learning rates") {
  CHECK(lm::parse_optimizer("sgd") == lm::OptimizerKind::Sgd);
  CHECK(lm::parse_optimizer("adam") == lm::OptimizerKind::Adam);
  CHECK(error_of([] { lm::parse_optimizer("lion"); }).find("'sgd' or 'adam'") !=
        std::string::npos);
  const auto device = lm::make_cpu_device(1);
  CHECK(error_of([&] { lm::make_optimizer(lm::OptimizerKind::Sgd, -1.0, *device); })
            .find("--lr") != std::string::npos);
}
