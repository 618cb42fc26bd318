// Spelling suggestions: case-insensitive optimal-string-alignment distance (Levenshtein plus
// adjacent transpositions, the most common typing slip), with a threshold that grows with
// the length of the misspelt word, so that short words only match near-identical names.
#include "did_you_mean.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace switchyard::detail {
namespace {

std::string lower(const std::string& text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Optimal string alignment distance between two (already lower-cased) words.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t rows = a.size() + 1, cols = b.size() + 1;
  std::vector<std::size_t> d(rows * cols);
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * cols + j]; };
  for (std::size_t i = 0; i < rows; ++i) at(i, 0) = i;
  for (std::size_t j = 0; j < cols; ++j) at(0, j) = j;
  for (std::size_t i = 1; i < rows; ++i) {
    for (std::size_t j = 1; j < cols; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      std::size_t best = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        best = std::min(best, at(i - 2, j - 2) + 1);
      at(i, j) = best;
    }
  }
  return at(rows - 1, cols - 1);
}

// How many edits still read as a typo of a word this long: 1 up to 5 characters, then one
// more per 3 characters ("te"->"tx" is a typo, "xx"->"te" is not).
std::size_t max_typo_distance(std::size_t word_length) {
  return std::max<std::size_t>(word_length, 3) / 3;
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  if (word.empty()) return {};
  const std::string needle = lower(word);
  const std::size_t limit = max_typo_distance(needle.size());
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(needle, lower(candidate));
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  if (!best.empty()) return best;
  // A truncated name ("lig", "RMS") is too far in edits but is plainly meant; only words of
  // three or more characters, so that "t" does not suggest every name starting with t.
  if (needle.size() >= 3) {
    for (const std::string& candidate : candidates) {
      if (lower(candidate).compare(0, needle.size(), needle) == 0) return candidate;
    }
  }
  return {};
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string match = closest_match(word, candidates);
  return match.empty() ? std::string() : " (did you mean '" + match + "'?)";
}

}  // namespace switchyard::detail
