// The JIT engine and its on-disk cache, with real NVRTC and a fake module loader (loading a
// cubin needs a GPU; everything before that does not).
#include "jit/ce_source.hpp"
#include "jit/disk_cache.hpp"
#include "jit/engine.hpp"
#include "support/fused_support.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

using namespace switchyard::fused::jit;
using switchyard::fused::test::files_in;
using switchyard::fused::test::TempDir;

namespace {

// Records what it is asked to load; can be told to refuse the next loads.
class FakeLoader final : public ModuleLoader {
 public:
  std::shared_ptr<const LoadedModule> load(std::string_view payload, cache::PayloadKind kind,
                                           const std::vector<std::string>& names) override {
    std::lock_guard<std::mutex> lock(mutex);
    ++loads;
    if (refusals > 0) {
      --refusals;
      sy::fail(SY_ERR_INTERNAL, "cudaLibraryLoadData failed: cudaErrorInvalidKernelImage (fake)");
    }
    last_payload = std::string(payload);
    last_kind = kind;
    auto module = std::make_shared<LoadedModule>();
    for (size_t i = 0; i < names.size(); ++i)
      module->kernels.push_back(reinterpret_cast<const void*>(0x1000 + i));
    return module;
  }
  std::mutex mutex;
  int loads = 0;
  int refusals = 0;
  std::string last_payload;
  cache::PayloadKind last_kind = cache::PayloadKind::Ptx;
};

struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;
  LogFunction function() {
    return [this](sy_log_level level, const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(std::to_string(level) + " " + message);
    };
  }
  bool contains(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& line : lines)
      if (line.find(text) != std::string::npos) return true;
    return false;
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    return text;
  }
};

// A kernel that compiles in a few tens of milliseconds; `n` makes each one different.
ModuleRequest tiny(int n) {
  ModuleRequest request;
  request.description = "tiny kernel " + std::to_string(n);
  request.source = "extern \"C\" __global__ void sy_tiny(int* p) { p[threadIdx.x] = " +
                   std::to_string(1000 + n) + "; }\n";
  request.kernel_names = {"sy_tiny"};
  return request;
}

const DeviceTarget kH200{90, 13000};

CacheSettings in(const std::string& folder, int64_t max_bytes = cache::kDefaultMaxBytes) {
  CacheSettings settings;
  settings.folder = folder;
  settings.max_bytes = max_bytes;
  return settings;
}

std::string entry_path(const std::string& folder, const ModuleRequest& request) {
  std::string error;
  const auto nvrtc = NvrtcLibrary::load("", &error);
  REQUIRE_MESSAGE(nvrtc, error);
  const CompileTarget target = choose_target(*nvrtc, kH200.arch);
  return folder + "/" +
         cache::entry_file_name(Engine::key_of(request, kH200.arch, nvrtc->version(),
                                               kH200.driver_version, target.options));
}

int64_t mtime_ns(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return cache::modification_ns(st);
}

void set_mtime(const std::string& path, int64_t seconds_ago) {
  struct timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds_ago;
  times[1] = times[0];
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("a compile is stored atomically and a new process loads it without compiling") {
  TempDir dir;
  const std::string folder = dir / "fused";
  const ModuleRequest request = tiny(1);
  FakeLoader loader;
  Log log;
  Engine first(loader, log.function());
  const auto module = first.module(request, kH200, in(folder));
  CHECK(module->kernels.size() == 1);
  CHECK(first.stats().compiles == 1);
  CHECK(first.stats().disk_hits == 0);
  CHECK(loader.last_kind == cache::PayloadKind::Cubin);
  const std::string compiled = loader.last_payload;
  CHECK(log.contains("JIT compile: tiny kernel 1 for sm_90 with NVRTC"));

  // Only the entry: the temporary file was renamed into place.
  const std::string path = entry_path(folder, request);
  CHECK(files_in(folder) == std::vector<std::string>{path.substr(folder.size() + 1)});
  const auto bytes = cache::read_whole_file(path);
  REQUIRE(bytes.has_value());
  std::string why;
  const auto entry = cache::decode_entry(*bytes, &why);
  REQUIRE_MESSAGE(entry.has_value(), why);
  CHECK(entry->info.arch == 90);
  CHECK(entry->info.driver_version == 13000);
  CHECK(entry->info.description == "tiny kernel 1");
  CHECK(entry->info.compile_us > 0);
  CHECK(bytes->substr(entry->payload_offset, entry->payload_bytes) == compiled);

  // Same process: memory.
  CHECK(first.module(request, kH200, in(folder)) == module);
  CHECK(first.stats().memory_hits == 1);
  CHECK(first.stats().compiles == 1);

  // A new process: the disk.
  Engine second(loader, log.function());
  loader.last_payload.clear();
  second.module(request, kH200, in(folder));
  CHECK(second.stats().compiles == 0);
  CHECK(second.stats().disk_hits == 1);
  CHECK(loader.last_payload == compiled);
  CHECK(log.contains("JIT cache hit: tiny kernel 1 for sm_90 loaded from " + path));
}

TEST_CASE("a corrupt entry is detected, deleted and compiled again, never loaded") {
  TempDir dir;
  const std::string folder = dir / "fused";
  const ModuleRequest request = tiny(2);
  FakeLoader loader;
  Log log;
  Engine(loader, log.function()).module(request, kH200, in(folder));
  const std::string path = entry_path(folder, request);
  std::string file = *cache::read_whole_file(path);
  std::string why;
  const auto entry = cache::decode_entry(file, &why);
  REQUIRE(entry.has_value());
  const std::string good_payload = file.substr(entry->payload_offset, entry->payload_bytes);
  // Flip one byte in the middle of the cubin.
  file[entry->payload_offset + entry->payload_bytes / 2] ^= 0x01;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file;

  Engine next(loader, log.function());
  loader.last_payload.clear();
  next.module(request, kH200, in(folder));
  CHECK(next.stats().corrupt_entries == 1);
  CHECK(next.stats().compiles == 1);
  CHECK(next.stats().disk_hits == 0);
  CHECK(loader.last_payload.compare(0, 4, "\x7f" "ELF") == 0);
  CHECK(loader.last_payload.size() == good_payload.size());
  CHECK_MESSAGE(log.contains(path + ": checksum mismatch (the file is corrupt); deleted"), log.all());
  // The recompiled entry replaced it and verifies.
  std::string again_why;
  CHECK_MESSAGE(cache::decode_entry(*cache::read_whole_file(path), &again_why).has_value(), again_why);

  // A truncated file is corrupt too.
  const std::string whole = *cache::read_whole_file(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() / 2);
  Engine third(loader, log.function());
  third.module(request, kH200, in(folder));
  CHECK(third.stats().corrupt_entries == 1);
  CHECK(log.contains("truncated or corrupt"));
}

TEST_CASE("the cache is capped and evicts the least recently used entries") {
  TempDir dir;
  const std::string folder = dir / "fused";
  FakeLoader loader;
  Log log;
  {
    Engine engine(loader, log.function());
    engine.module(tiny(10), kH200, in(folder));
    engine.module(tiny(11), kH200, in(folder));
  }
  const std::string a = entry_path(folder, tiny(10)), b = entry_path(folder, tiny(11));
  const int64_t size_a = static_cast<int64_t>(cache::read_whole_file(a)->size());
  const int64_t size_b = static_cast<int64_t>(cache::read_whole_file(b)->size());
  set_mtime(a, 200);  // a is older than b ...
  set_mtime(b, 100);
  const int64_t before = mtime_ns(a);
  {
    Engine user(loader, log.function());  // ... until a process uses it: a hit refreshes it
    user.module(tiny(10), kH200, in(folder));
    CHECK(user.stats().disk_hits == 1);
  }
  CHECK(mtime_ns(a) > before);
  // Room for two entries: storing a third evicts the least recently used (b).
  const int64_t cap = size_a + size_b + size_a / 2;
  Engine engine(loader, log.function());
  engine.module(tiny(12), kH200, in(folder, cap));
  const std::string c = entry_path(folder, tiny(12));
  const auto names = files_in(folder);
  CHECK(std::find(names.begin(), names.end(), a.substr(folder.size() + 1)) != names.end());
  CHECK(std::find(names.begin(), names.end(), c.substr(folder.size() + 1)) != names.end());
  CHECK(std::find(names.begin(), names.end(), b.substr(folder.size() + 1)) == names.end());
  CHECK(names.size() == 2);

  // An entry larger than the whole cap is not stored, and says why.
  Engine small(loader, log.function());
  small.module(tiny(13), kH200, in(folder, 100));
  CHECK(small.stats().store_failures == 1);
  CHECK(log.contains("is larger than cache_max_bytes = 100"));
}

TEST_CASE("cache_disable: nothing is read or written; no folder: the same") {
  TempDir dir;
  const std::string folder = dir / "fused";
  FakeLoader loader;
  Log log;
  CacheSettings disabled = in(folder);
  disabled.disabled = true;
  Engine(loader, log.function()).module(tiny(20), kH200, disabled);
  CHECK(files_in(dir.path()).empty());  // not even the folder
  Engine again(loader, log.function());
  again.module(tiny(20), kH200, disabled);
  CHECK(again.stats().compiles == 1);
  CHECK(log.contains("JIT cache not used for tiny kernel 20 for sm_90: disabled by the option cache_disable"));

  // Entries from before the cache was disabled are not read either.
  Engine(loader, log.function()).module(tiny(21), kH200, in(folder));
  Engine third(loader, log.function());
  third.module(tiny(21), kH200, disabled);
  CHECK(third.stats().disk_hits == 0);
  CHECK(third.stats().compiles == 1);

  Engine nowhere(loader, log.function());
  nowhere.module(tiny(22), kH200, CacheSettings{});
  CHECK(nowhere.stats().compiles == 1);
  CHECK(log.contains("no cache folder"));
}

TEST_CASE("the key changes with the source, options, architecture, NVRTC and driver") {
  const ModuleRequest request = tiny(30);
  const std::vector<std::string> options = {"--gpu-architecture=sm_90", "-std=c++17"};
  const Hash128 base = Engine::key_of(request, 90, 13000, 13000, options);
  CHECK(Engine::key_of(request, 90, 13000, 13000, options) == base);
  CHECK(Engine::key_of(tiny(31), 90, 13000, 13000, options) != base);
  CHECK(Engine::key_of(request, 100, 13000, 13000, options) != base);
  CHECK(Engine::key_of(request, 90, 13010, 13000, options) != base);
  CHECK(Engine::key_of(request, 90, 13000, 12080, options) != base);
  CHECK(Engine::key_of(request, 90, 13000, 13000, {"--gpu-architecture=sm_90", "-std=c++20"}) != base);
  ModuleRequest renamed = request;
  renamed.kernel_names = {"sy_other"};
  CHECK(Engine::key_of(renamed, 90, 13000, 13000, options) != base);
  ModuleRequest described = request;
  described.description = "the description is not part of the key";
  CHECK(Engine::key_of(described, 90, 13000, 13000, options) == base);

  // And through the engine: another architecture is another entry.
  TempDir dir;
  FakeLoader loader;
  Log log;
  Engine engine(loader, log.function());
  engine.module(request, {90, 13000}, in(dir.path()));
  engine.module(request, {80, 13000}, in(dir.path()));
  engine.module(request, {90, 12090}, in(dir.path()));
  CHECK(engine.stats().compiles == 3);
  CHECK(files_in(dir.path()).size() == 3);
}

TEST_CASE("threads asking for the same module at once compile it once") {
  TempDir dir;
  FakeLoader loader;
  Log log;
  Engine engine(loader, log.function());
  std::vector<std::shared_ptr<const LoadedModule>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] { got[i] = engine.module(tiny(40), kH200, in(dir.path())); });
  for (auto& thread : threads) thread.join();
  CHECK(engine.stats().compiles == 1);
  for (const auto& module : got) CHECK(module == got[0]);
}

TEST_CASE("an entry the driver refuses is deleted and compiled again") {
  TempDir dir;
  FakeLoader loader;
  Log log;
  Engine(loader, log.function()).module(tiny(50), kH200, in(dir.path()));
  loader.refusals = 1;
  Engine next(loader, log.function());
  const auto module = next.module(tiny(50), kH200, in(dir.path()));
  CHECK(module != nullptr);
  CHECK(next.stats().compiles == 1);
  CHECK(log.contains("did not load (cudaLibraryLoadData failed: cudaErrorInvalidKernelImage (fake)); deleted, compiling again"));
}

TEST_CASE("a cache folder that cannot be created costs a warning, not the call") {
  TempDir dir;
  std::ofstream(dir / "file") << "a file where the folder should be";
  FakeLoader loader;
  Log log;
  Engine engine(loader, log.function());
  CHECK(engine.module(tiny(60), kH200, in(dir / "file/fused")) != nullptr);
  CHECK(engine.stats().store_failures == 1);
  CHECK(log.contains("JIT cache: could not store tiny kernel 60 for sm_90: cannot create the cache folder"));
}

TEST_CASE("a failure to build is not cached: the next call tries again") {
  TempDir dir;
  FakeLoader loader;
  Log log;
  Engine engine(loader, log.function());
  loader.refusals = 1;
  CHECK_THROWS_AS(engine.module(tiny(70), kH200, in(dir.path())), sy::Failure);
  CHECK(engine.module(tiny(70), kH200, in(dir.path())) != nullptr);
}

TEST_CASE("a generated cross-entropy module round-trips through the cache") {
  TempDir dir;
  FakeLoader loader;
  Log log;
  CeSpecialization spec;
  spec.logits = DType::BF16;
  spec.grad = DType::BF16;
  spec.vocab_local = 32000;
  const ModuleRequest request{spec.description(), ce_source(spec), ce_kernel_names()};
  Engine(loader, log.function()).module(request, kH200, in(dir.path()));
  const std::string compiled = loader.last_payload;
  Engine warm(loader, log.function());
  const auto module = warm.module(request, kH200, in(dir.path()));
  CHECK(warm.stats().disk_hits == 1);
  CHECK(module->kernels.size() == ce_kernel_names().size());
  CHECK(loader.last_payload == compiled);
  const auto listed = cache::list_entries(dir.path(), true);
  REQUIRE(listed.size() == 1);
  REQUIRE(listed[0].info.has_value());
  CHECK(listed[0].info->description ==
        "cross_entropy logits=bf16 grad=bf16 labels=int64 Vp=32000");
}
