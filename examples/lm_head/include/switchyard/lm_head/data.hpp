// Next-token training data: a source of (input token, target token) pairs, drawn per step as a
// pure function of (seed, step, row) so that every rank of a tensor-parallel group sees the
// same batch without talking to the others.
#ifndef SWITCHYARD_LM_HEAD_DATA_HPP
#define SWITCHYARD_LM_HEAD_DATA_HPP

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace switchyard::lm_head {

// One step's rows: the model sees inputs[i] and is trained to predict targets[i].
struct Batch {
  std::vector<int64_t> inputs;
  std::vector<int64_t> targets;
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual int64_t vocab_size() const = 0;
  // "byte-level corpus /x/corpus.txt (12548 bytes)", for people.
  virtual std::string describe() const = 0;
  // "corpus" | "synthetic", for programs.
  virtual std::string mode() const = 0;
  // The corpus file, or "" for generated data.
  virtual std::string path() const = 0;
  // Fills `batch` with `rows` pairs for `step`. Same arguments, same batch.
  virtual void fill_batch(uint64_t seed, int64_t step, int64_t rows, Batch& batch) const = 0;
};

// ---- the byte-level corpus (corpus.cpp) -----------------------------------------------------

// Where `switchyard train` looks for the corpus when --corpus is not given, relative to the
// directory of the running executable (the build tree mirrors the install layout).
inline constexpr const char* kCorpusRelativePath = "../share/switchyard/corpus.txt";

// The directory of the running executable ("" when it cannot be determined).
std::string executable_directory();

// The corpus to use: `explicit_path` when not empty, else <exe_dir>/kCorpusRelativePath.
// Throws switchyard::Error(SY_ERR_INVALID_ARGUMENT) naming every path tried and the next step.
std::string find_corpus(const std::string& explicit_path, const std::string& exe_dir);

// Bytes of a text file as tokens (vocabulary 256). Throws when the file cannot be read or is
// too short to hold a single (input, target) pair.
std::unique_ptr<TokenSource> load_byte_corpus(const std::string& path);

// ---- the synthetic large-vocabulary mode (synthetic.cpp) -----------------------------------

// Inputs follow a Zipf law over a shuffled vocabulary; the target is a fixed permutation of
// the input with probability 1 - noise, else another Zipf draw. A model that learns the
// frequent tokens' successors and the unigram law drives the loss far below log(vocab).
std::unique_ptr<TokenSource> make_synthetic_tokens(int64_t vocab_size, double noise = 0.2,
                                                   double zipf_exponent = 1.1);

}  // namespace switchyard::lm_head

#endif
