// The byte-level corpus: the project's own documentation, concatenated at build time.
#include <switchyard/lm_head/data.hpp>
#include <switchyard/lm_head/rng.hpp>
#include <switchyard/switchyard.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

namespace switchyard::lm_head {
namespace {

class ByteCorpus final : public TokenSource {
 public:
  ByteCorpus(std::string path, std::string bytes)
      : path_(std::move(path)), bytes_(std::move(bytes)) {}

  int64_t vocab_size() const override { return 256; }
  std::string describe() const override {
    return "byte-level corpus " + path_ + " (" + std::to_string(bytes_.size()) + " bytes)";
  }
  std::string mode() const override { return "corpus"; }
  std::string path() const override { return path_; }

  void fill_batch(uint64_t seed, int64_t step, int64_t rows, Batch& batch) const override {
    batch.inputs.resize(static_cast<size_t>(rows));
    batch.targets.resize(static_cast<size_t>(rows));
    const uint64_t pairs = bytes_.size() - 1;
    for (int64_t i = 0; i < rows; ++i) {
      const uint64_t counter = static_cast<uint64_t>(step) * static_cast<uint64_t>(rows) +
                               static_cast<uint64_t>(i);
      const size_t at = static_cast<size_t>(random_below(seed, Stream::BatchPositions, counter,
                                                         pairs));
      batch.inputs[static_cast<size_t>(i)] = static_cast<unsigned char>(bytes_[at]);
      batch.targets[static_cast<size_t>(i)] = static_cast<unsigned char>(bytes_[at + 1]);
    }
  }

 private:
  std::string path_;
  std::string bytes_;
};

}  // namespace

std::string executable_directory() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return exe.parent_path().string();
}

std::string find_corpus(const std::string& explicit_path, const std::string& exe_dir) {
  namespace fs = std::filesystem;
  if (!explicit_path.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(explicit_path, ec)) {
      throw Error(SY_ERR_INVALID_ARGUMENT,
                  "--corpus " + explicit_path + ": no such file. Pass a readable text file, or "
                  "leave --corpus out to use the documentation corpus shipped with switchyard.");
    }
    return explicit_path;
  }
  std::string tried;
  if (!exe_dir.empty()) {
    const fs::path candidate = (fs::path(exe_dir) / kCorpusRelativePath).lexically_normal();
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    tried = candidate.string();
  } else {
    tried = "(none: the executable's directory could not be read from /proc/self/exe)";
  }
  throw Error(SY_ERR_INVALID_ARGUMENT,
              "no training corpus found: looked for " + tried + " (" + kCorpusRelativePath +
                  " relative to the switchyard executable). Build the target "
                  "switchyard_lm_head_corpus (or install switchyard), pass --corpus <text file>, "
                  "or use synthetic data with --vocab <N>.");
}

std::unique_ptr<TokenSource> load_byte_corpus(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "corpus " + path + ": cannot be opened for reading. Check the path and its "
                "permissions, or pass another file with --corpus.");
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string bytes = contents.str();
  if (bytes.size() < 2) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "corpus " + path + ": expected at least 2 bytes (one input and its next byte), "
                "found " + std::to_string(bytes.size()) + ". Pass a longer text with --corpus.");
  }
  return std::make_unique<ByteCorpus>(path, std::move(bytes));
}

}  // namespace switchyard::lm_head
