// Synthetic large-vocabulary data with structure a one-token model can learn.
#include <switchyard/lm_head/data.hpp>
#include <switchyard/lm_head/rng.hpp>
#include <switchyard/switchyard.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace switchyard::lm_head {
namespace {

// The first multiplier >= start that is coprime to n, so that x -> (m x + c) mod n is a
// permutation of [0, n).
int64_t coprime_multiplier(int64_t n, int64_t start) {
  for (int64_t m = std::max<int64_t>(start, 1);; ++m) {
    if (std::gcd(m, n) == 1) return m % n == 0 ? 1 : m;
  }
}

class SyntheticTokens final : public TokenSource {
 public:
  SyntheticTokens(int64_t vocab, double noise, double exponent)
      : vocab_(vocab), noise_(noise), exponent_(exponent) {
    cdf_.resize(static_cast<size_t>(vocab));
    double total = 0;
    for (int64_t rank = 0; rank < vocab; ++rank) {
      total += std::pow(static_cast<double>(rank + 1), -exponent);
      cdf_[static_cast<size_t>(rank)] = total;
    }
    for (double& c : cdf_) c /= total;
    shuffle_multiplier_ = coprime_multiplier(vocab, vocab / 3 + 7);
    successor_multiplier_ = coprime_multiplier(vocab, vocab / 2 + 11);
  }

  int64_t vocab_size() const override { return vocab_; }
  std::string describe() const override {
    std::ostringstream out;
    out << "synthetic tokens, vocabulary " << vocab_ << " (Zipf " << exponent_
        << " inputs; target = a fixed permutation of the input with probability "
        << (1 - noise_) << ", else another Zipf draw)";
    return out.str();
  }
  std::string mode() const override { return "synthetic"; }
  std::string path() const override { return {}; }

  void fill_batch(uint64_t seed, int64_t step, int64_t rows, Batch& batch) const override {
    batch.inputs.resize(static_cast<size_t>(rows));
    batch.targets.resize(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) {
      const uint64_t counter = static_cast<uint64_t>(step) * static_cast<uint64_t>(rows) +
                               static_cast<uint64_t>(i);
      const int64_t input = zipf_token(random_uniform(seed, Stream::SyntheticInput, counter));
      int64_t target = successor(input);
      if (random_uniform(seed, Stream::SyntheticNoise, counter) < noise_) {
        target = zipf_token(random_uniform(seed, Stream::SyntheticNoiseToken, counter));
      }
      batch.inputs[static_cast<size_t>(i)] = input;
      batch.targets[static_cast<size_t>(i)] = target;
    }
  }

 private:
  // The token of Zipf rank drawn by inverse CDF; ranks are spread over the vocabulary so that
  // frequent tokens land on every tensor-parallel shard.
  int64_t zipf_token(double u) const {
    const auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
    const int64_t rank =
        std::min<int64_t>(static_cast<int64_t>(it - cdf_.begin()), vocab_ - 1);
    return (rank * shuffle_multiplier_ + 1) % vocab_;
  }
  int64_t successor(int64_t token) const {
    return (token * successor_multiplier_ + 3) % vocab_;
  }

  int64_t vocab_;
  double noise_;
  double exponent_;
  std::vector<double> cdf_;
  int64_t shuffle_multiplier_ = 1;
  int64_t successor_multiplier_ = 1;
};

}  // namespace

std::unique_ptr<TokenSource> make_synthetic_tokens(int64_t vocab_size, double noise,
                                                   double zipf_exponent) {
  if (vocab_size < 2) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "--vocab " + std::to_string(vocab_size) + ": a synthetic vocabulary needs at "
                "least 2 tokens (or --vocab 0 for the byte-level corpus).");
  }
  return std::make_unique<SyntheticTokens>(vocab_size, noise, zipf_exponent);
}

}  // namespace switchyard::lm_head
