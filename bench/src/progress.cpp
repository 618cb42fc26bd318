#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace switchyard::bench {

Progress::Progress(int64_t total_steps, bool quiet)
    : total_(total_steps), enabled_(!quiet), terminal_(isatty(STDERR_FILENO) != 0) {}

Progress::~Progress() { finish(); }

void Progress::draw(const std::string& text) {
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  dirty_ = true;
}

void Progress::begin_step(const std::string& label) {
  if (!enabled_) return;
  ++step_;
  label_ = "[" + std::to_string(step_) + "/" + std::to_string(total_) + "] " + label;
  if (terminal_) {
    draw(label_);
  } else {
    std::fprintf(stderr, "%s\n", label_.c_str());
    std::fflush(stderr);
  }
}

void Progress::detail(const std::string& text) {
  if (enabled_ && terminal_) draw(label_ + ": " + text);
}

void Progress::message(const std::string& text) {
  if (!enabled_) return;
  if (terminal_ && dirty_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", text.c_str());
  if (terminal_ && dirty_) draw(label_);
  std::fflush(stderr);
}

void Progress::finish() {
  if (enabled_ && terminal_ && dirty_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  dirty_ = false;
}

}  // namespace switchyard::bench
