#include <switchyard/tools/progress.hpp>

#include "text.hpp"

#include <unistd.h>

#include <algorithm>
#include <iostream>

namespace switchyard::tools {

using detail::one_line;

Progress::Progress(std::string label, int64_t total, bool quiet)
    : label_(std::move(label)),
      total_(total),
      quiet_(quiet),
      terminal_(::isatty(STDERR_FILENO) == 1) {}

Progress::Progress(int64_t total_steps, bool quiet) : Progress(std::string(), total_steps, quiet) {}

Progress::~Progress() { finish(); }

void Progress::draw(const std::string& line) {
  line_ = line;
  drawn_ = true;
  // "\033[K" erases what a longer previous line left behind.
  std::cerr << '\r' << line_ << "\033[K" << std::flush;
}

void Progress::update(int64_t done, const std::string& note) {
  if (quiet_ || !terminal_ || finished_) return;
  constexpr int kBarWidth = 30;
  std::string line = label_.empty() ? std::string() : label_ + ": ";
  if (total_ > 0) {
    const int64_t clamped = std::clamp<int64_t>(done, 0, total_);
    const int filled = static_cast<int>(clamped * kBarWidth / total_);
    line += '[' + std::string(static_cast<size_t>(filled), '#') +
            std::string(static_cast<size_t>(kBarWidth - filled), '.') + "] " +
            std::to_string(clamped * 100 / total_) + "%";
  } else if (done > 0) {
    line += std::to_string(done);  // unknown total: a running count
  }
  if (!note.empty())
    line += (line.empty() || line.back() == ' ' ? "" : "  ") + one_line(note);
  draw(line);
}

void Progress::begin_step(const std::string& step) {
  if (quiet_ || finished_) return;
  ++step_;
  step_line_ = (label_.empty() ? std::string() : label_ + " ") + "[" + std::to_string(step_) +
               "/" + std::to_string(total_) + "] " + one_line(step);
  if (terminal_)
    draw(step_line_);
  else
    std::cerr << step_line_ << '\n' << std::flush;
}

void Progress::detail(const std::string& text) {
  if (quiet_ || !terminal_ || finished_) return;
  draw(step_line_ + ": " + one_line(text));
}

void Progress::message(const std::string& text) {
  if (quiet_) return;
  if (drawn_) std::cerr << "\r\033[K";
  std::cerr << text << '\n';
  if (drawn_) std::cerr << line_;  // the progress line goes back under the message
  std::cerr << std::flush;
}

void Progress::finish() {
  finished_ = true;
  if (!drawn_) return;
  std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
}

}  // namespace switchyard::tools
