// NVRTC for real, on a machine without a GPU: generation + compilation to sm_90 cubins needs
// no device. What only the GPU can tell (the cubins load and compute right) is left to
// `switchyard check fused --device cuda`.
#include "jit/ce_source.hpp"
#include "jit/norm_source.hpp"
#include "jit/nvrtc_compile.hpp"
#include "jit/nvrtc_library.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <doctest/doctest.h>

#include <cstring>

using namespace switchyard::fused::jit;

namespace {

std::shared_ptr<const NvrtcLibrary> nvrtc() {
  std::string error;
  auto library = NvrtcLibrary::load("", &error);
  if (!library) FAIL("NVRTC is part of the CUDA toolkit this machine builds with: " << error);
  return library;
}

uint16_t elf_machine(const std::string& image) {
  return static_cast<uint16_t>(static_cast<unsigned char>(image[18]) |
                               (static_cast<unsigned char>(image[19]) << 8));
}

void check_cubin(const std::string& description, const std::string& source,
                 const std::vector<std::string>& kernels) {
  INFO(description);
  const auto library = nvrtc();
  const CompileTarget target = choose_target(*library, 90);
  CompileOutput output;
  try {
    output = compile(*library, source, "test.cu", target);
  } catch (const sy::Failure& failure) {
    FAIL(failure.what());
  }
  REQUIRE(output.payload.size() > 64);
  CHECK(output.payload.compare(0, 4, "\x7f" "ELF") == 0);
  CHECK(elf_machine(output.payload) == 190);  // EM_CUDA
  for (const std::string& kernel : kernels)
    CHECK_MESSAGE(output.payload.find(kernel) != std::string::npos, kernel << " missing from the cubin");
  CHECK_MESSAGE(output.log.empty(), "NVRTC warned:\n" << output.log);
  CHECK(output.milliseconds > 0);
}

}  // namespace

TEST_CASE("NVRTC loads lazily and knows sm_90") {
  const auto library = nvrtc();
  CHECK(library->major() >= 12);
  CHECK(library->path().find("libnvrtc") != std::string::npos);
  const auto& archs = library->supported_archs();
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  const CompileTarget target = choose_target(*library, 90);
  CHECK(target.kind == cache::PayloadKind::Cubin);
  CHECK(target.code_arch == 90);
  CHECK(target.options.front() == "--gpu-architecture=sm_90");
}

TEST_CASE("cross-entropy specialisations compile to sm_90 cubins without warnings") {
  struct Case {
    DType logits, grad;
    bool labels64;
    int64_t vp;
    bool smoothing, argmax;
  };
  const Case cases[] = {
      {DType::F32, DType::F32, true, 50, false, false},
      {DType::BF16, DType::F32, false, 131072, true, true},    // 8 chunks per row
      {DType::F16, DType::BF16, true, 16032, false, true},
      {DType::BF16, DType::BF16, true, 65536, true, false},
  };
  for (const Case& c : cases) {
    CeSpecialization spec;
    spec.logits = c.logits;
    spec.grad = c.grad;
    spec.labels64 = c.labels64;
    spec.vocab_local = c.vp;
    spec.smoothing = c.smoothing;
    spec.argmax = c.argmax;
    check_cubin(spec.description(), ce_source(spec), ce_kernel_names());
  }
}

TEST_CASE("norm specialisations compile to sm_90 cubins without warnings") {
  struct Case {
    NormKind kind;
    int64_t h;
    DType x, y, weight, grad_weight;
    bool zero_centered, residual, memory_efficient, accumulate;
  };
  const Case cases[] = {
      {NormKind::Layer, 127, DType::F32, DType::F32, DType::F32, DType::F32, false, false, false, false},
      {NormKind::Rms, 4096, DType::BF16, DType::BF16, DType::F32, DType::F32, true, true, false, false},
      {NormKind::L2, 1, DType::F16, DType::F32, DType::F32, DType::F32, false, false, true, false},
      {NormKind::Layer, 8192, DType::BF16, DType::BF16, DType::BF16, DType::F32, false, true, true, true},
      {NormKind::Rms, 65536, DType::F32, DType::BF16, DType::F32, DType::F16, false, false, false, false},
  };
  for (const Case& c : cases) {
    NormSpecialization spec;
    spec.kind = c.kind;
    spec.hidden = c.h;
    spec.x = c.x;
    spec.y = c.y;
    spec.weight = c.weight;
    spec.grad_weight = c.grad_weight;
    spec.zero_centered = c.zero_centered;
    spec.residual = c.residual;
    spec.memory_efficient = c.memory_efficient;
    spec.accumulate = c.accumulate;
    check_cubin(spec.description(), norm_source(spec), norm_kernel_names());
  }
}

TEST_CASE("a GPU newer than NVRTC gets PTX of the newest architecture NVRTC knows") {
  const auto library = nvrtc();
  const CompileTarget target = choose_target(*library, 990);
  CHECK(target.kind == cache::PayloadKind::Ptx);
  CHECK(target.code_arch == library->supported_archs().back());
  CHECK(target.options.front() == "--gpu-architecture=compute_" + std::to_string(target.code_arch));
  CeSpecialization spec;
  spec.vocab_local = 100;
  const CompileOutput output = compile(*library, ce_source(spec), "ptx.cu", target);
  REQUIRE_FALSE(output.payload.empty());
  CHECK(output.payload.back() == '\0');  // the loader needs the terminating NUL
  CHECK(output.payload.find(".entry sy_ce_max") != std::string::npos);
}

TEST_CASE("a GPU older than anything NVRTC compiles for is refused as UNAVAILABLE") {
  const auto library = nvrtc();
  try {
    (void)choose_target(*library, 35);
    FAIL("compute capability 3.5 was accepted");
  } catch (const sy::Failure& failure) {
    CHECK(failure.status() == SY_ERR_UNAVAILABLE);
    const std::string message = failure.what();
    CHECK(message.find("this GPU is 3.5") != std::string::npos);
    CHECK(message.find("fused.nvrtc_library") != std::string::npos);
  }
}

TEST_CASE("an NVRTC that cannot be loaded is named with the reason and the fix") {
  std::string error;
  CHECK(NvrtcLibrary::load("/nonexistent/libnvrtc.so.13", &error) == nullptr);
  CHECK(error.find("/nonexistent/libnvrtc.so.13") != std::string::npos);
  CHECK(error.find("could not be loaded") != std::string::npos);
  CHECK(error.find("fix the plugin option fused.nvrtc_library") != std::string::npos);
}

TEST_CASE("a source that does not compile is an internal error carrying NVRTC's log") {
  const auto library = nvrtc();
  try {
    (void)compile(*library, "this is not CUDA;", "broken.cu", choose_target(*library, 90));
    FAIL("garbage compiled");
  } catch (const sy::Failure& failure) {
    CHECK(failure.status() == SY_ERR_INTERNAL);
    CHECK(std::string(failure.what()).find("broken.cu") != std::string::npos);
    CHECK(std::string(failure.what()).find("error") != std::string::npos);
  }
}

TEST_CASE("layouts depend on Vp / H alone and cover every column") {
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (int64_t vp : {1, 7, 50, 2048, 4097, 16032, 16384, 16385, 50257, 131072, 1 << 20}) {
      CeSpecialization spec;
      spec.logits = dtype;
      spec.vocab_local = vp;
      const CeLayout l = CeLayout::of(spec);
      INFO("Vp=" << vp << " " << dtype_short_name(dtype));
      CHECK(l.vec * bytes_of(dtype) == 16);
      CHECK(l.threads % 32 == 0);
      CHECK(l.threads <= 512);
      CHECK(int64_t{l.threads} * l.vec * l.iters == l.chunk);
      CHECK(l.chunk * l.chunks >= vp);
      CHECK(l.chunk * (l.chunks - 1) < vp);  // no empty chunk
      CHECK(l.chunk <= CeLayout::kMaxChunk);
      spec.argmax = true;
      spec.smoothing = true;
      const CeLayout same = CeLayout::of(spec);  // flags never change how a row is covered
      CHECK(same.chunk == l.chunk);
      CHECK(same.threads == l.threads);
    }
  }
  for (int64_t h : {1, 127, 1024, 4096, 8192, 12288, 65536}) {
    NormSpecialization spec;
    spec.x = DType::BF16;
    spec.hidden = h;
    const NormLayout l = NormLayout::of(spec);
    INFO("H=" << h);
    CHECK(int64_t{l.threads} * l.vec * l.iters >= h);
    CHECK(int64_t{l.threads} * l.vec * (l.iters - 1) < h);
    CHECK(l.iters * l.vec <= 64);
    CHECK(l.rows_per_chunk >= 4);
    CHECK(l.rows_per_chunk <= 64);
  }
}
