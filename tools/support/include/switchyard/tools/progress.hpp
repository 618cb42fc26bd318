// Progress on stderr for anything that runs longer than a second, in one of two shapes:
//  - a bar, "label: [####......] 42%  note" (update()), shown on a terminal only;
//  - numbered steps, "[3/16] ce_tp1_per_token / native" (begin_step()), rewritten in place on
//    a terminal and one line per step otherwise, so that logs of long runs say where they are.
// On a terminal the line is erased by finish() (or the destructor). Silent when quiet.
#ifndef SWITCHYARD_TOOLS_PROGRESS_HPP
#define SWITCHYARD_TOOLS_PROGRESS_HPP

#include <cstdint>
#include <string>

namespace switchyard::tools {

class Progress {
 public:
  // `total`: what update()'s `done` counts to (0: unknown, a running count is shown) and the
  // number of begin_step() calls expected.
  Progress(std::string label, int64_t total, bool quiet = false);
  // Numbered steps without a label.
  Progress(int64_t total_steps, bool quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(int64_t done, const std::string& note = "");  // the bar; terminal only
  void begin_step(const std::string& step);                 // "[3/16] <step>"
  void detail(const std::string& text);                     // "<step line>: rep 12/20"; terminal only
  void message(const std::string& text);                    // a line that stays
  // Erases the line; update(), begin_step() and detail() are ignored afterwards.
  void finish();

 private:
  void draw(const std::string& line);
  std::string label_;
  int64_t total_;
  bool quiet_;
  bool terminal_;
  bool finished_ = false;
  bool drawn_ = false;     // a line is on the terminal, waiting to be rewritten
  int64_t step_ = 0;
  std::string step_line_;  // "[3/16] <step>", what detail() extends
  std::string line_;       // what is on the terminal now
};

}  // namespace switchyard::tools

#endif
