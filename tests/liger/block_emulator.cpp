#include "block_emulator.hpp"

#include <ucontext.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

// The thread-identity primitives that plugins/liger/kernels/device_io.cuh declares for host
// builds.
namespace switchyard::liger::device {
unsigned thread_x();
unsigned block_x();
unsigned block_dim();
unsigned grid_dim();
void sync_threads();
void* dynamic_shared();
uint64_t exchange_xor(uint64_t bits, int offset);
}  // namespace switchyard::liger::device

namespace liger_emu {
namespace {

constexpr std::size_t kStackBytes = 256 * 1024;

struct Fiber {
  ucontext_t context{};
  std::vector<char> stack;
  bool done = false;
  bool waiting = false;
};

struct Block {
  ucontext_t scheduler{};
  std::vector<Fiber> fibers;
  std::vector<uint64_t> exchange;
  std::vector<unsigned char> shared;
  const std::function<void()>* body = nullptr;
  unsigned current = 0;
  unsigned index = 0;
  unsigned count = 0;
  unsigned threads = 0;
  long long barriers = 0;
};

Block g_block;

void fiber_main() {
  (*g_block.body)();
  Fiber& self = g_block.fibers[g_block.current];
  self.done = true;
  swapcontext(&self.context, &g_block.scheduler);
}

void prepare_fibers(unsigned threads) {
  if (g_block.fibers.size() < threads) g_block.fibers.resize(threads);
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = g_block.fibers[t];
    if (f.stack.size() != kStackBytes) f.stack.assign(kStackBytes, 0);
    f.done = false;
    f.waiting = false;
    if (getcontext(&f.context) != 0) throw std::runtime_error("getcontext failed");
    f.context.uc_stack.ss_sp = f.stack.data();
    f.context.uc_stack.ss_size = f.stack.size();
    f.context.uc_link = &g_block.scheduler;
    makecontext(&f.context, fiber_main, 0);
  }
}

void run_block() {
  const unsigned threads = g_block.threads;
  prepare_fibers(threads);
  for (;;) {
    for (unsigned t = 0; t < threads; ++t) {
      Fiber& f = g_block.fibers[t];
      if (f.done || f.waiting) continue;
      g_block.current = t;
      swapcontext(&g_block.scheduler, &f.context);
    }
    unsigned waiting = 0;
    for (unsigned t = 0; t < threads; ++t) waiting += g_block.fibers[t].waiting ? 1 : 0;
    if (waiting == 0) return;  // every thread finished
    if (waiting != threads)
      throw std::runtime_error("block " + std::to_string(g_block.index) +
                               ": a barrier was reached by " + std::to_string(waiting) + " of " +
                               std::to_string(threads) + " threads (the others returned)");
    for (unsigned t = 0; t < threads; ++t) g_block.fibers[t].waiting = false;
    ++g_block.barriers;
  }
}

}  // namespace

void run(unsigned blocks, int threads, std::size_t shared_bytes,
         const std::function<void()>& body) {
  if (threads < 1 || threads > 1024 || threads % 32 != 0)
    throw std::runtime_error("launch with " + std::to_string(threads) +
                             " threads per block: must be a multiple of 32 in [32, 1024]");
  if (shared_bytes > 227 * 1024)
    throw std::runtime_error("launch with " + std::to_string(shared_bytes) +
                             " bytes of dynamic shared memory: more than a Hopper block has");
  g_block.body = &body;
  g_block.count = blocks;
  g_block.threads = static_cast<unsigned>(threads);
  g_block.exchange.assign(static_cast<std::size_t>(threads), 0);
  for (unsigned b = 0; b < blocks; ++b) {
    g_block.index = b;
    g_block.shared.assign(shared_bytes + 16, 0xff);  // NaN floats: a read before a write shows
    run_block();
  }
  g_block.body = nullptr;
}

long long barriers_passed() { return g_block.barriers; }

}  // namespace liger_emu

namespace switchyard::liger::device {

unsigned thread_x() { return liger_emu::g_block.current; }
unsigned block_x() { return liger_emu::g_block.index; }
unsigned block_dim() { return liger_emu::g_block.threads; }
unsigned grid_dim() { return liger_emu::g_block.count; }

void sync_threads() {
  auto& block = liger_emu::g_block;
  liger_emu::Fiber& self = block.fibers[block.current];
  self.waiting = true;
  swapcontext(&self.context, &block.scheduler);
}

void* dynamic_shared() {
  auto& shared = liger_emu::g_block.shared;
  // 16-byte aligned, as on the GPU.
  const auto address = reinterpret_cast<uintptr_t>(shared.data());
  return shared.data() + ((16 - address % 16) % 16);
}

uint64_t exchange_xor(uint64_t bits, int offset) {
  auto& block = liger_emu::g_block;
  const unsigned me = block.current;
  block.exchange[me] = bits;
  sync_threads();
  const uint64_t theirs = block.exchange[me ^ static_cast<unsigned>(offset)];
  sync_threads();
  return theirs;
}

}  // namespace switchyard::liger::device
