// A progress line on stderr: rewritten in place on a terminal, one line per step otherwise
// (so that logs of long GPU runs say where they are). Silent when quiet.
#ifndef SWITCHYARD_BENCH_PROGRESS_HPP
#define SWITCHYARD_BENCH_PROGRESS_HPP

#include <cstdint>
#include <string>

namespace switchyard::bench {

class Progress {
 public:
  Progress(int64_t total_steps, bool quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void begin_step(const std::string& label);  // "[3/16] ce_tp1_per_token · native"
  void detail(const std::string& text);       // "rep 12/20"; terminal only
  void message(const std::string& text);      // a line that stays
  void finish();

 private:
  void draw(const std::string& text);
  int64_t total_;
  int64_t step_ = 0;
  bool enabled_;
  bool terminal_;
  bool dirty_ = false;
  std::string label_;
};

}  // namespace switchyard::bench

#endif
