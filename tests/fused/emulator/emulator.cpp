#include "emulator.hpp"

#include "jit/hash128.hpp"
#include "jit/kernel_args.hpp"

#include <dlfcn.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace switchyard::fused::test {
namespace {

// The same layout as in cuda_emulation.hpp (the generated objects read these).
struct SyEmuIndex {
  unsigned x, y, z;
};
struct SyEmuHooks {
  const SyEmuIndex* (*thread_index)();
  const SyEmuIndex* (*block_index)();
  void (*sync_threads)();
  unsigned long long (*shuffle_xor)(unsigned long long bits, int lane_mask);
};

constexpr size_t kStackBytes = 128 * 1024;
constexpr int kWarp = 32;

enum class FiberState { Ready, Running, WaitBlock, WaitWarp, Done };

struct Fiber {
  ucontext_t context{};
  SyEmuIndex thread{};
  FiberState state = FiberState::Ready;
  int warp = 0;
};

// One block being run on this OS thread.
struct BlockRun {
  std::vector<Fiber> fibers;
  ucontext_t scheduler{};
  SyEmuIndex block{};
  int current = 0;
  int live = 0;
  int block_waiting = 0;
  std::vector<int> warp_live, warp_waiting;
  std::vector<uint64_t> warp_generation;
  std::vector<std::array<unsigned long long, 2 * kWarp>> exchange;
  const Emulator::Kernel* kernel = nullptr;
  const void* args = nullptr;
  std::string error;
};

thread_local BlockRun* t_run = nullptr;

Fiber& current_fiber() { return t_run->fibers[static_cast<size_t>(t_run->current)]; }

void yield() {
  Fiber& fiber = current_fiber();
  swapcontext(&fiber.context, &t_run->scheduler);
}

void release_block_if_complete() {
  BlockRun& run = *t_run;
  if (run.block_waiting == 0 || run.block_waiting < run.live) return;
  for (Fiber& fiber : run.fibers)
    if (fiber.state == FiberState::WaitBlock) fiber.state = FiberState::Ready;
  run.block_waiting = 0;
}

void release_warp_if_complete(int warp) {
  BlockRun& run = *t_run;
  const size_t w = static_cast<size_t>(warp);
  if (run.warp_waiting[w] == 0 || run.warp_waiting[w] < run.warp_live[w]) return;
  if (run.warp_live[w] < kWarp && run.error.empty())
    run.error = "a warp shuffle in warp " + std::to_string(warp) + " ran with only " +
                std::to_string(run.warp_live[w]) + " live lanes (full-mask shuffles need 32)";
  for (Fiber& fiber : run.fibers)
    if (fiber.warp == warp && fiber.state == FiberState::WaitWarp) fiber.state = FiberState::Ready;
  run.warp_waiting[w] = 0;
  ++run.warp_generation[w];
}

const SyEmuIndex* hook_thread_index() { return &current_fiber().thread; }
const SyEmuIndex* hook_block_index() { return &t_run->block; }

void hook_sync_threads() {
  Fiber& fiber = current_fiber();
  fiber.state = FiberState::WaitBlock;
  ++t_run->block_waiting;
  release_block_if_complete();
  yield();
}

unsigned long long hook_shuffle_xor(unsigned long long bits, int lane_mask) {
  BlockRun& run = *t_run;
  Fiber& fiber = current_fiber();
  const size_t w = static_cast<size_t>(fiber.warp);
  const int lane = static_cast<int>(fiber.thread.x % kWarp);
  // Two slots per lane, by barrier generation: a lane can be at most one shuffle ahead.
  const size_t slot = static_cast<size_t>(run.warp_generation[w] % 2) * kWarp;
  run.exchange[w][slot + static_cast<size_t>(lane)] = bits;
  fiber.state = FiberState::WaitWarp;
  ++run.warp_waiting[w];
  release_warp_if_complete(fiber.warp);
  yield();
  return run.exchange[w][slot + static_cast<size_t>(lane ^ lane_mask)];
}

SyEmuHooks g_hooks = {hook_thread_index, hook_block_index, hook_sync_threads, hook_shuffle_xor};

void fiber_main();

std::mutex& launch_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Compiled objects are cached by content; the emulation header is part of that content.
std::string cache_identity_of_header() {
  std::ifstream in(SY_TEST_EMULATION_HEADER);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string run_command(const std::string& command, int* status) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return "popen failed";
  }
  char buffer[4096];
  while (size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, got);
  *status = pclose(pipe);
  return output;
}

}  // namespace

struct Emulator::Kernel {
  std::string name;
  void* function = nullptr;
  void (*invoke)(void* function, const void* args) = nullptr;
};

namespace {

struct EmulatorState {
  std::mutex mutex;
  std::map<jit::Hash128, std::vector<const void*>> modules;
  std::deque<Emulator::Kernel> kernels;  // stable addresses: the handles
  std::vector<std::unique_ptr<char[]>> stacks;
  std::atomic<int> order{0};
  std::atomic<int64_t> launches{0};
};

EmulatorState& state() {
  static EmulatorState instance;
  return instance;
}

void fiber_main() {
  BlockRun& run = *t_run;
  Fiber& fiber = current_fiber();
  run.kernel->invoke(run.kernel->function, run.args);
  fiber.state = FiberState::Done;
  --run.live;
  --run.warp_live[static_cast<size_t>(fiber.warp)];
  release_block_if_complete();
  release_warp_if_complete(fiber.warp);
  // Returning resumes uc_link: the scheduler.
}

// getcontext() returns twice; kept out of the launch loop so no local of it can be clobbered.
__attribute__((noinline)) void prepare_fiber(Fiber& fiber, char* stack, ucontext_t* scheduler, int t) {
  getcontext(&fiber.context);
  fiber.context.uc_stack.ss_sp = stack;
  fiber.context.uc_stack.ss_size = kStackBytes;
  fiber.context.uc_link = scheduler;
  makecontext(&fiber.context, fiber_main, 0);
  fiber.thread = {static_cast<unsigned>(t), 0, 0};
  fiber.warp = t / kWarp;
}

void invoke_ce(void* function, const void* args) {
  reinterpret_cast<void (*)(jit::CeKernelArgs)>(function)(*static_cast<const jit::CeKernelArgs*>(args));
}
void invoke_norm(void* function, const void* args) {
  reinterpret_cast<void (*)(jit::NormKernelArgs)>(function)(*static_cast<const jit::NormKernelArgs*>(args));
}

}  // namespace

Emulator& Emulator::instance() {
  static Emulator emulator;
  return emulator;
}

void Emulator::set_order(ThreadOrder order) { state().order = static_cast<int>(order); }
ThreadOrder Emulator::order() const { return static_cast<ThreadOrder>(state().order.load()); }
int64_t Emulator::launches() const { return state().launches.load(); }

std::vector<const void*> Emulator::load(const std::string& source,
                                        const std::vector<std::string>& names, int args_kind) {
  EmulatorState& s = state();
  const std::string flags = "-std=c++17 -O1 -fPIC -shared -w -ffp-contract=off -fno-strict-aliasing";
  const std::string header = SY_TEST_EMULATION_HEADER;
  const std::string identity = flags + "\n" + cache_identity_of_header() + "\n" + source;
  const jit::Hash128 key = jit::murmur3_128(identity);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (auto found = s.modules.find(key); found != s.modules.end()) return found->second;

  const std::filesystem::path folder = SY_TEST_EMULATOR_CACHE;
  std::filesystem::create_directories(folder);
  const std::string object = (folder / (key.hex() + ".so")).string();
  if (!std::filesystem::exists(object)) {
    const std::string unique = key.hex() + "-" + std::to_string(::getpid());
    const std::string source_file = (folder / (unique + ".cpp")).string();
    const std::string temporary = (folder / (unique + ".so.tmp")).string();
    std::ofstream(source_file) << source;
    const std::string command = std::string(SY_TEST_CXX) + " " + flags + " -include " + header +
                                " -I" + SY_TEST_SDK_INCLUDE + " -I" + SY_TEST_DLPACK_INCLUDE +
                                " -x c++ " + source_file + " -o " + temporary + " 2>&1";
    int status = 0;
    const std::string output = run_command(command, &status);
    if (status != 0)
      throw std::runtime_error("the emulated kernels do not compile (" + source_file + "):\n" + output);
    std::filesystem::rename(temporary, object);
    std::filesystem::remove(source_file);
  }
  void* handle = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::runtime_error(std::string("dlopen of the emulated kernels: ") + dlerror());
  auto** hooks = static_cast<SyEmuHooks**>(dlsym(handle, "sy_emu_hooks"));
  if (hooks == nullptr) throw std::runtime_error("the emulated kernels lack sy_emu_hooks");
  *hooks = &g_hooks;
  std::vector<const void*> handles;
  for (const std::string& name : names) {
    void* function = dlsym(handle, name.c_str());
    if (function == nullptr) throw std::runtime_error("the emulated kernels lack " + name);
    s.kernels.push_back(Kernel{name, function, args_kind == 0 ? invoke_ce : invoke_norm});
    handles.push_back(&s.kernels.back());
  }
  s.modules.emplace(key, handles);
  return handles;
}

std::array<const void*, jit::kCeKernelCount> Emulator::ce_kernels(const jit::CeSpecialization& spec) {
  const auto handles = load(jit::ce_source(spec), jit::ce_kernel_names(), 0);
  std::array<const void*, jit::kCeKernelCount> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = handles[i];
  return out;
}

std::array<const void*, jit::kNormKernelCount> Emulator::norm_kernels(const jit::NormSpecialization& spec) {
  const auto handles = load(jit::norm_source(spec), jit::norm_kernel_names(), 1);
  std::array<const void*, jit::kNormKernelCount> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = handles[i];
  return out;
}

void Emulator::launch(const void* kernel_handle, LaunchShape shape, const void* args) {
  const auto* kernel = static_cast<const Kernel*>(kernel_handle);
  std::lock_guard<std::mutex> lock(launch_mutex());  // kernels' "shared" memory is static
  EmulatorState& s = state();
  ++s.launches;
  const bool reverse = s.order.load() == static_cast<int>(ThreadOrder::Reverse);
  const bool warp_by_warp = s.order.load() == static_cast<int>(ThreadOrder::WarpByWarp);
  const int threads = static_cast<int>(shape.block);
  if (threads <= 0 || threads > 1024 || threads % kWarp != 0)
    throw std::runtime_error(kernel->name + ": block of " + std::to_string(threads) +
                             " threads (expected whole warps, at most 1024)");
  while (s.stacks.size() < static_cast<size_t>(threads))
    s.stacks.push_back(std::make_unique<char[]>(kStackBytes));
  const int64_t blocks = int64_t{shape.grid_x} * shape.grid_y;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t index = reverse ? blocks - 1 - b : b;
    BlockRun run;
    run.block = {static_cast<unsigned>(index % shape.grid_x), static_cast<unsigned>(index / shape.grid_x), 0};
    run.kernel = kernel;
    run.args = args;
    run.live = threads;
    const int warps = threads / kWarp;
    run.warp_live.assign(static_cast<size_t>(warps), kWarp);
    run.warp_waiting.assign(static_cast<size_t>(warps), 0);
    run.warp_generation.assign(static_cast<size_t>(warps), 0);
    run.exchange.assign(static_cast<size_t>(warps), {});
    run.fibers.resize(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t)
      prepare_fiber(run.fibers[static_cast<size_t>(t)], s.stacks[static_cast<size_t>(t)].get(),
                    &run.scheduler, t);
    t_run = &run;
    while (run.live > 0) {
      bool progressed = false;
      // Warp by warp: only the lowest warp with a ready thread runs in this pass.
      int only_warp = -1;
      if (warp_by_warp)
        for (const Fiber& fiber : run.fibers)
          if (fiber.state == FiberState::Ready) {
            only_warp = fiber.warp;
            break;
          }
      for (int k = 0; k < threads; ++k) {
        const int t = reverse ? threads - 1 - k : k;
        Fiber& fiber = run.fibers[static_cast<size_t>(t)];
        if (fiber.state != FiberState::Ready || (only_warp >= 0 && fiber.warp != only_warp)) continue;
        run.current = t;
        fiber.state = FiberState::Running;
        swapcontext(&run.scheduler, &fiber.context);
        progressed = true;
      }
      if (!progressed && run.live > 0) {
        int at_block = 0, at_warp = 0;
        for (const Fiber& fiber : run.fibers) {
          at_block += fiber.state == FiberState::WaitBlock;
          at_warp += fiber.state == FiberState::WaitWarp;
        }
        run.error = "deadlock: " + std::to_string(at_block) + " threads wait at __syncthreads, " +
                    std::to_string(at_warp) + " at a warp shuffle, " +
                    std::to_string(threads - run.live) + " have exited";
        break;
      }
    }
    t_run = nullptr;
    if (!run.error.empty())
      throw std::runtime_error(kernel->name + " block (" + std::to_string(run.block.x) + ", " +
                               std::to_string(run.block.y) + "): " + run.error);
  }
}

void EmulatedDevice::launch(const void* kernel, LaunchShape shape, const void* args,
                            const char* name, void* /*stream*/) {
  launched.emplace_back(name);
  Emulator::instance().launch(kernel, shape, args);
}

void EmulatedDevice::fill(void* pointer, int value, size_t bytes, void* /*stream*/) {
  std::memset(pointer, value, bytes);
}

void EmulatedDevice::read(void* host, const void* pointer, size_t bytes, void* /*stream*/) {
  ++reads;
  std::memcpy(host, pointer, bytes);
}

}  // namespace switchyard::fused::test
