// Tensor parallelism 2 over NCCL with two PROCESSES, one GPU each: the plugin's vocab-parallel
// cross entropy (unequal partitions) against the float64 reference, with the collectives
// counted on every rank.
//
//   tp_nccl_check [--plugin NAME] [--timeout SECONDS]
//       The parent: needs two GPUs (else prints a SKIP line and exits 77). It creates an NCCL
//       unique id, runs itself twice (--rank 0 / --rank 1 with the id in hex), reads both
//       ranks' reports, prints one merged PASS/FAIL/SKIP line per case
//       ("tp2-nccl-<plugin>/<case>") and the summary line "N passed, M failed, K skipped".
//       Exit status 0 when no case failed on either rank and both ranks exited 0 (77 when
//       every case was skipped).
//   tp_nccl_check --rank R --size 2 --id HEX [--plugin NAME]
//       One rank: CUDA device R, an NcclComm from the id, the plugin bound through the
//       Runtime with tp_size 2, every case of tp_ce_cases.cpp in order; a case needing a
//       feature or dtype the plugin does not declare is skipped (on both ranks alike).
//
//   tp_nccl_check --self-test
//       Checks the launcher itself without GPUs (CTest here): fake ranks that pass everything,
//       fail one case, or hang past the timeout, and the merged verdicts and exit codes.
//
// NCCL_NVLS_ENABLE=0 is forced (never enable NVLink multicast on these machines).
#include "counting_comm.hpp"
#include "tp_ce_cases.hpp"

#include <switchyard/nccl.hpp>
#include <switchyard/switchyard.hpp>

#include <cuda_runtime_api.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kSkipped = 77;
constexpr int kRanks = 2;

struct Options {
  int rank = -1;
  int size = kRanks;
  std::string id;
  std::string plugin = "native";
  int timeout_seconds = 300;
  // Launcher self-test only: ranks that report without GPUs.
  bool fake = false;
  std::string fake_fail;    // the case rank 1 reports as failed
  std::string fake_skip;    // the case both ranks report as skipped
  int fake_hang_rank = -1;  // the rank that never reports
  bool self_test = false;
};

bool parse(int argc, char** argv, Options* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        *error = std::string(name) + " needs a value";
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (arg == "--rank" && (v = value("--rank"))) o->rank = std::atoi(v);
    else if (arg == "--size" && (v = value("--size"))) o->size = std::atoi(v);
    else if (arg == "--id" && (v = value("--id"))) o->id = v;
    else if (arg == "--plugin" && (v = value("--plugin"))) o->plugin = v;
    else if (arg == "--timeout" && (v = value("--timeout"))) o->timeout_seconds = std::atoi(v);
    else if (arg == "--fake") o->fake = true;
    else if (arg == "--fake-fail" && (v = value("--fake-fail"))) o->fake_fail = v;
    else if (arg == "--fake-skip" && (v = value("--fake-skip"))) o->fake_skip = v;
    else if (arg == "--fake-hang" && (v = value("--fake-hang"))) o->fake_hang_rank = std::atoi(v);
    else if (arg == "--self-test") o->self_test = true;
    else if (error->empty()) *error = "unknown argument '" + arg + "'";
    if (!error->empty()) return false;
  }
  return true;
}

// One line, written at once (two ranks may share a terminal).
void say(const std::string& line) {
  const std::string text = line + "\n";
  if (::write(STDOUT_FILENO, text.data(), text.size()) < 0) std::perror("write");
}

// ---- one rank ---------------------------------------------------------------------------

// A rank of the launcher self-test: no GPU, scripted reports.
int run_fake_rank(const Options& o) {
  if (o.fake_hang_rank == o.rank) ::sleep(600);
  int failed = 0;
  for (const gpu_test::TpCase& c : gpu_test::tp_cases()) {
    const bool fail = o.rank == 1 && c.name == o.fake_fail;
    const bool skip = c.name == o.fake_skip;
    say(std::string(fail ? "FAIL " : skip ? "SKIP " : "PASS ") + c.name + "  fake rank " +
        std::to_string(o.rank));
    failed += fail ? 1 : 0;
  }
  return failed == 0 ? 0 : 1;
}

int run_rank(const Options& o) {
  if (o.size != kRanks || o.rank < 0 || o.rank >= kRanks) {
    say("FAIL rank-setup  --size must be 2 and --rank 0 or 1");
    return 1;
  }
  if (o.fake) return run_fake_rank(o);
  try {
    if (cudaSetDevice(o.rank) != cudaSuccess) {
      say("FAIL rank-setup  cudaSetDevice(" + std::to_string(o.rank) + ") failed");
      return 1;
    }
    const switchyard::NcclComm nccl = switchyard::NcclComm::create_local(
        switchyard::NcclUniqueId::from_hex(o.id), o.size, o.rank);
    gpu_test::CountingComm comm(nccl.get());
    switchyard::RuntimeOptions options;
    options.cross_entropy = o.plugin;
    const switchyard::Runtime runtime(options);
    const switchyard::FamilyInfo declared =
        runtime.select(switchyard::Family::CrossEntropy).plugin.cross_entropy;
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
      say("FAIL rank-setup  cudaStreamCreateWithFlags failed");
      return 1;
    }
    gpu_test::RankContext context;
    context.runtime = &runtime;
    context.comm = &comm;
    context.rank = o.rank;
    context.stream = stream;
    context.features = declared.features;
    context.dtypes = declared.dtypes;
    int failed = 0, passed = 0, skipped = 0;
    for (const gpu_test::TpCase& c : gpu_test::tp_cases()) {
      const gpu_test::CaseResult r = gpu_test::run_tp_case(c, context);
      say(std::string(r.skipped ? "SKIP " : r.passed ? "PASS " : "FAIL ") + c.name + "  " +
          r.detail);
      (r.skipped ? skipped : r.passed ? passed : failed) += 1;
    }
    cudaStreamDestroy(stream);
    say("RANK " + std::to_string(o.rank) + " DONE " + std::to_string(passed) + " passed, " +
        std::to_string(failed) + " failed, " + std::to_string(skipped) + " skipped");
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    say(std::string("FAIL rank-setup  ") + e.what());
    return 1;
  }
}

// ---- the parent ---------------------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout
  std::string text;
  bool open = true;
  int status = -1;
};

std::string self_path() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return {};
  buffer[n] = '\0';
  return buffer;
}

bool spawn(const std::string& exe, const Options& o, int rank, const std::string& id, Child* c) {
  // Everything the child needs is built before fork(): the parent has threads (NCCL's
  // bootstrap root), so the child may only call async-signal-safe functions until execv.
  const std::string rank_text = std::to_string(rank);
  const std::string size_text = std::to_string(kRanks);
  const std::string hang_text = std::to_string(o.fake_hang_rank);
  std::vector<const char*> args{exe.c_str(), "--rank", rank_text.c_str(), "--size",
                                size_text.c_str(), "--id", id.c_str(), "--plugin",
                                o.plugin.c_str()};
  if (o.fake) {
    for (const char* a : {"--fake", "--fake-hang", hang_text.c_str()}) args.push_back(a);
    if (!o.fake_fail.empty()) {
      args.push_back("--fake-fail");
      args.push_back(o.fake_fail.c_str());
    }
    if (!o.fake_skip.empty()) {
      args.push_back("--fake-skip");
      args.push_back(o.fake_skip.c_str());
    }
  }
  args.push_back(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) return false;
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(exe.c_str(), const_cast<char* const*>(args.data()));
    static const char kFailed[] = "FAIL rank-setup  execv failed\n";
    if (::write(STDOUT_FILENO, kFailed, sizeof kFailed - 1) < 0) ::_exit(126);
    ::_exit(127);
  }
  ::close(fds[1]);
  c->pid = pid;
  c->out = fds[0];
  return true;
}

// Reads both children's output until they close it or the deadline passes (then kills them).
bool collect(std::vector<Child>& children, int timeout_seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Child*> owners;
    for (Child& c : children)
      if (c.open) {
        fds.push_back(pollfd{c.out, POLLIN, 0});
        owners.push_back(&c);
      }
    if (fds.empty()) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      for (Child& c : children)
        if (c.pid > 0) ::kill(c.pid, SIGKILL);
      return false;
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left.count(), 1000))) < 0)
      continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[k].fd, buffer, sizeof buffer);
      if (n > 0) {
        owners[k]->text.append(buffer, static_cast<size_t>(n));
      } else {
        owners[k]->open = false;
        ::close(fds[k].fd);
      }
    }
  }
}

enum class Outcome { Pass, Fail, Skip };

struct RankReport {
  std::map<std::string, std::pair<Outcome, std::string>> results;  // case -> (outcome, detail)
};

RankReport parse_report(const std::string& text) {
  RankReport report;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    Outcome outcome = Outcome::Fail;
    if (line.rfind("PASS ", 0) == 0) outcome = Outcome::Pass;
    else if (line.rfind("SKIP ", 0) == 0) outcome = Outcome::Skip;
    else if (line.rfind("FAIL ", 0) != 0) continue;
    const std::string rest = line.substr(5);
    const auto gap = rest.find("  ");
    const std::string name = rest.substr(0, gap);
    const std::string detail = gap == std::string::npos ? "" : rest.substr(gap + 2);
    report.results[name] = {outcome, detail};
  }
  return report;
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

struct Verdict {
  int passed = 0, failed = 0, skipped = 0;
  int exit_code = 0;
};

Verdict run_parent(const Options& o) {
  int gpus = 0;
  const cudaError_t count_error = o.fake ? cudaSuccess : cudaGetDeviceCount(&gpus);
  if (o.fake) gpus = kRanks;
  if (count_error != cudaSuccess || gpus < kRanks) {
    const std::string why = count_error != cudaSuccess
                                ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(count_error)
                                : std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") + " visible";
    say("SKIP tp2-nccl-" + o.plugin + "/*  tensor parallelism over NCCL needs 2 GPUs (" + why +
        ")");
    say("0 passed, 0 failed, 1 skipped");
    return Verdict{0, 0, 1, kSkipped};
  }
  const std::string exe = self_path();
  const std::string id = o.fake ? "fake" : switchyard::NcclUniqueId::create().to_hex();
  std::vector<Child> children(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    if (!spawn(exe, o, r, id, &children[r])) {
      say("FAIL tp2-nccl-" + o.plugin + "/spawn  could not start rank " + std::to_string(r) +
          " (" + exe + ")");
      say("0 passed, 1 failed, 0 skipped");
      return Verdict{0, 1, 0, 1};
    }
  }
  const bool finished = collect(children, o.timeout_seconds);
  for (Child& c : children) ::waitpid(c.pid, &c.status, 0);

  for (int r = 0; r < kRanks; ++r) {
    say("---- rank " + std::to_string(r) + " (" + exit_text(children[r].status) + ")");
    std::istringstream lines(children[r].text);
    std::string line;
    while (std::getline(lines, line)) say("[rank " + std::to_string(r) + "] " + line);
  }
  say("---- merged (a case passes when it passes on both ranks, is skipped when both skip it)");
  const std::string prefix = "tp2-nccl-" + o.plugin + "/";
  const RankReport reports[kRanks] = {parse_report(children[0].text),
                                      parse_report(children[1].text)};
  int passed = 0, failed = 0, skipped = 0;
  for (const gpu_test::TpCase& c : gpu_test::tp_cases()) {
    std::string why;
    std::string detail;
    int skips = 0;
    for (int r = 0; r < kRanks; ++r) {
      const auto found = reports[r].results.find(c.name);
      if (found == reports[r].results.end()) {
        why += "rank " + std::to_string(r) + " did not report it (" +
               (finished ? exit_text(children[r].status) : "timed out after " +
                                                               std::to_string(o.timeout_seconds) + " s") +
               "); ";
      } else if (found->second.first == Outcome::Fail) {
        why += "rank " + std::to_string(r) + ": " + found->second.second + "; ";
      } else {
        skips += found->second.first == Outcome::Skip ? 1 : 0;
        detail = found->second.second;
      }
    }
    if (why.empty() && skips != 0 && skips != kRanks)
      why = "skipped on one rank only (the ranks disagree on what the plugin declares): " + detail;
    if (!why.empty()) {
      ++failed;
      say("FAIL " + prefix + c.name + "  " + why);
    } else if (skips == kRanks) {
      ++skipped;
      say("SKIP " + prefix + c.name + "  " + detail);
    } else {
      ++passed;
      say("PASS " + prefix + c.name + "  " + detail);
    }
  }
  bool ranks_ok = finished;
  for (const Child& c : children)
    ranks_ok = ranks_ok && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
  if (!ranks_ok && failed == 0) {
    ++failed;
    say("FAIL " + prefix + "ranks  a rank ended badly although no case failed: " +
        exit_text(children[0].status) + ", " + exit_text(children[1].status));
  }
  say(std::to_string(passed) + " passed, " + std::to_string(failed) + " failed, " +
      std::to_string(skipped) + " skipped");
  const int code = failed != 0 ? 1 : passed == 0 && skipped != 0 ? kSkipped : 0;
  return Verdict{passed, failed, skipped, code};
}

// The launcher without GPUs: every verdict the parent can reach, from scripted ranks.
int self_test(const Options& base) {
  const int cases = static_cast<int>(gpu_test::tp_cases().size());
  int problems = 0;
  auto expect = [&](const char* scenario, const Verdict& got, int passed, int failed,
                    int skipped, int code) {
    const bool ok = got.passed == passed && got.failed == failed && got.skipped == skipped &&
                    got.exit_code == code;
    std::fprintf(stderr,
                 "self-test %s: %s (got %d passed, %d failed, %d skipped, exit %d; expected %d, "
                 "%d, %d, %d)\n",
                 scenario, ok ? "ok" : "WRONG", got.passed, got.failed, got.skipped,
                 got.exit_code, passed, failed, skipped, code);
    problems += ok ? 0 : 1;
  };
  Options o = base;
  o.fake = true;
  o.timeout_seconds = 30;
  expect("all pass", run_parent(o), cases, 0, 0, 0);
  o.fake_fail = gpu_test::tp_cases()[3].name;
  expect("one case fails on rank 1", run_parent(o), cases - 1, 1, 0, 1);
  o.fake_fail.clear();
  o.fake_skip = gpu_test::tp_cases()[2].name;
  expect("one case skipped on both ranks", run_parent(o), cases - 1, 0, 1, 0);
  o.fake_skip.clear();
  // What a rank skips: a case needing an undeclared feature or dtype, and nothing else.
  const uint32_t all_features = SY_CE_FEATURE_LABEL_SMOOTHING | SY_CE_FEATURE_IGNORE_INDEX |
                                SY_CE_FEATURE_ARGMAX | SY_CE_FEATURE_GRAD_IN_FORWARD |
                                SY_CE_FEATURE_TENSOR_PARALLEL;
  const uint32_t all_dtypes = SY_DTYPE_F32 | SY_DTYPE_F16 | SY_DTYPE_BF16;
  int wrong_skips = 0;
  for (const gpu_test::TpCase& c : gpu_test::tp_cases()) {
    const bool argmax = (c.flags & SY_CE_ARGMAX) != 0;
    const std::string full = gpu_test::missing_capability(c, all_features, all_dtypes);
    const std::string no_argmax =
        gpu_test::missing_capability(c, all_features & ~SY_CE_FEATURE_ARGMAX, all_dtypes);
    const std::string no_f16 =
        gpu_test::missing_capability(c, all_features, all_dtypes & ~SY_DTYPE_F16);
    const std::string no_tp =
        gpu_test::missing_capability(c, all_features & ~SY_CE_FEATURE_TENSOR_PARALLEL, all_dtypes);
    const bool f16 = c.name.rfind("f16/", 0) == 0 || c.name == "f32/grad-f16";
    wrong_skips += !full.empty() || (no_argmax.find("argmax") != std::string::npos) != argmax ||
                   (no_f16.find("dtype f16") != std::string::npos) != f16 ||
                   no_tp.find("tensor_parallel") == std::string::npos;
  }
  std::fprintf(stderr, "self-test skip rules: %s (%d cases decided wrongly)\n",
               wrong_skips == 0 ? "ok" : "WRONG", wrong_skips);
  problems += wrong_skips == 0 ? 0 : 1;
  o.fake_hang_rank = 1;
  o.timeout_seconds = 2;
  expect("rank 1 hangs", run_parent(o), 0, cases, 0, 1);
  return problems == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);  // GPU.md: NVLink multicast stays off
  Options o;
  std::string error;
  if (!parse(argc, argv, &o, &error)) {
    std::cerr << "tp_nccl_check: " << error
              << "\nusage: tp_nccl_check [--plugin NAME] [--timeout SECONDS]\n"
                 "       tp_nccl_check --rank R --size 2 --id HEX [--plugin NAME]\n";
    return 2;
  }
  if (o.self_test) return self_test(o);
  return o.rank >= 0 ? run_rank(o) : run_parent(o).exit_code;
}
