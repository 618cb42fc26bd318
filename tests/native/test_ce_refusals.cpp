// Every cross-entropy refusal: status and the message naming the argument.
#include "ce_harness.hpp"

#include <switchyard/comm.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>
#include <utility>

using namespace native_test;

namespace {

// A modified copy of a tensor descriptor (same memory), owning its shape and strides.
struct Altered {
  std::array<int64_t, 2> shape{};
  std::array<int64_t, 2> strides{};
  DLTensor tensor{};
  explicit Altered(const DLTensor& original) {
    tensor = original;
    for (int d = 0; d < original.ndim; ++d) {
      shape[static_cast<size_t>(d)] = original.shape[d];
      strides[static_cast<size_t>(d)] = original.strides != nullptr ? original.strides[d] : 1;
    }
    if (original.strides == nullptr && original.ndim == 2) strides[0] = original.shape[1];
    tensor.shape = shape.data();
    tensor.strides = strides.data();
  }
};

sy_status supports(const sy_ce_problem& p, sy_error* err) { return ce().supports(&p, err); }

// A forward whose args were modified by `alter`; returns the status, err holds the message.
sy_status forward_with(CeSetup& s, const std::function<void(sy_ce_forward_args&)>& alter,
                       sy_error* err) {
  sy_ce_forward_args a = s.forward_args();
  alter(a);
  return ce().forward(&a, err);
}

// One tensor field of the forward args, read and replaced through these.
struct Slot {
  std::function<const DLTensor*(const sy_ce_forward_args&)> get;
  std::function<void(sy_ce_forward_args&, const DLTensor*)> set;
};

template <class Field>
Slot slot(Field sy_ce_forward_args::*field) {
  using Pointer = std::remove_reference_t<decltype(std::declval<sy_ce_forward_args&>().*field)>;
  return {[field](const sy_ce_forward_args& a) -> const DLTensor* { return a.*field; },
          [field](sy_ce_forward_args& a, const DLTensor* t) {
            a.*field = const_cast<Pointer>(t);  // the plugin only reads what it must
          }};
}

// For a tensor slot of the forward args: NULL, wrong shape, wrong dtype, wrong device.
void check_tensor_slot(const char* name, const Slot& slot, bool required) {
  const sy_ce_problem p = make_ce_problem(4, 10, sy::kF32,
                                          SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD);
  CeSetup s(p, random_ce_data(4, 10, sy::kF32, 1));
  sy_error err = make_error();
  CAPTURE(name);
  if (required) {
    const sy_status got = forward_with(s, [&](sy_ce_forward_args& a) { slot.set(a, nullptr); }, &err);
    check_refusal(got, err, SY_ERR_INVALID_ARGUMENT, {name, "NULL"});
  }
  std::vector<Altered> keep;
  keep.reserve(4);
  auto altered = [&](const std::function<void(Altered&)>& change) {
    return forward_with(s, [&](sy_ce_forward_args& a) {
      keep.emplace_back(*slot.get(a));
      change(keep.back());
      slot.set(a, &keep.back().tensor);
    }, &err);
  };
  check_refusal(altered([](Altered& t) { t.shape[0] += 1; }), err, SY_ERR_INVALID_ARGUMENT,
                {name, "has shape", "expected"});
  check_refusal(altered([](Altered& t) { t.tensor.dtype = sy::kF64; }), err,
                SY_ERR_INVALID_ARGUMENT, {name, "has dtype float64", "expected"});
  check_refusal(altered([](Altered& t) { t.tensor.device = DLDevice{kDLCUDA, 0}; }), err,
                SY_ERR_INVALID_ARGUMENT, {name, "is on device cuda:0, expected cpu:0"});
}

}  // namespace

TEST_CASE("supports() refuses impossible problems with a reason naming the field") {
  load_native();
  sy_error err = make_error();
  const sy_ce_problem good = make_ce_problem(4, 10);
  CHECK(supports(good, &err) == SY_OK);
  CHECK(err.status == SY_OK);

  CHECK(ce().supports(nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(err.message).find("problem is NULL") != std::string::npos);

  auto refused = [&](const std::function<void(sy_ce_problem&)>& change, sy_status status,
                     std::initializer_list<const char*> fragments) {
    sy_ce_problem p = good;
    change(p);
    check_refusal(supports(p, &err), err, status, fragments);
    // The same problem is refused by workspace_size, and by forward before any tensor is read.
    int64_t bytes = 0;
    sy_error err2 = make_error();
    check_refusal(ce().workspace_size(&p, &bytes, &err2), err2, status, fragments);
  };
  refused([](sy_ce_problem& p) { p.struct_size = 16; }, SY_ERR_INVALID_ARGUMENT,
          {"problem.struct_size = 16", "smaller"});
  refused([](sy_ce_problem& p) { p.rows = -1; }, SY_ERR_INVALID_ARGUMENT, {"problem.rows = -1"});
  refused([](sy_ce_problem& p) { p.vocab_local = 0; }, SY_ERR_INVALID_ARGUMENT,
          {"problem.vocab_local = 0"});
  refused([](sy_ce_problem& p) { p.tp_size = 0; }, SY_ERR_INVALID_ARGUMENT,
          {"problem.tp_size = 0"});
  refused([](sy_ce_problem& p) { p.vocab_local = 6; }, SY_ERR_INVALID_ARGUMENT,
          {"tp_size = 1", "vocab_local = 6", "whole vocabulary"});
  refused([](sy_ce_problem& p) { p.tp_size = 2; }, SY_ERR_INVALID_ARGUMENT,
          {"vocab_local = vocab_size = 10", "tp_size = 2", "gathered"});
  refused([](sy_ce_problem& p) { p.tp_size = 2; p.vocab_local = 6; p.vocab_start = 5; },
          SY_ERR_INVALID_ARGUMENT, {"vocab_start + vocab_local = 5 + 6", "vocab_size = 10"});
  refused([](sy_ce_problem& p) { p.label_smoothing = 1.0f; }, SY_ERR_INVALID_ARGUMENT,
          {"problem.label_smoothing = 1 must", "[0, 1)"});
  refused([](sy_ce_problem& p) { p.label_smoothing = -0.1f; }, SY_ERR_INVALID_ARGUMENT,
          {"problem.label_smoothing = -0.1", "[0, 1)"});
  refused([](sy_ce_problem& p) { p.label_smoothing = std::numeric_limits<float>::quiet_NaN(); },
          SY_ERR_INVALID_ARGUMENT, {"problem.label_smoothing = nan", "[0, 1)"});
  refused([](sy_ce_problem& p) { p.smoothing = 7; }, SY_ERR_INVALID_ARGUMENT,
          {"problem.smoothing = 7"});
  refused([](sy_ce_problem& p) { p.flags = 1u << 9; }, SY_ERR_UNSUPPORTED,
          {"problem.flags", "0x200"});
  refused([](sy_ce_problem& p) { p.logits_dtype = sy::kF64; }, SY_ERR_UNSUPPORTED,
          {"problem.logits_dtype = float64", "float32, bfloat16, float16"});
  refused([](sy_ce_problem& p) { p.grad_dtype = sy::kI32; }, SY_ERR_UNSUPPORTED,
          {"problem.grad_dtype = int32"});
  refused([](sy_ce_problem& p) { p.label_dtype = sy::kF32; }, SY_ERR_INVALID_ARGUMENT,
          {"problem.label_dtype = float32", "int64 or int32"});
  // A device type native has no path for (CUDA problems: test_cuda_path.cpp).
  refused([](sy_ce_problem& p) { p.device = DLDevice{kDLROCM, 0}; }, SY_ERR_UNSUPPORTED,
          {"problem.device = device_type_10:0", "native runs on"});
}

TEST_CASE("forward refuses each tensor that is missing, mis-shaped, mis-typed or elsewhere") {
  load_native();
  check_tensor_slot("logits", slot(&sy_ce_forward_args::logits), true);
  check_tensor_slot("labels", slot(&sy_ce_forward_args::labels), true);
  check_tensor_slot("loss", slot(&sy_ce_forward_args::loss), true);
  check_tensor_slot("lse", slot(&sy_ce_forward_args::lse), true);
  check_tensor_slot("argmax", slot(&sy_ce_forward_args::argmax), true);
  check_tensor_slot("grad_scale", slot(&sy_ce_forward_args::grad_scale), true);
  check_tensor_slot("grad_logits", slot(&sy_ce_forward_args::grad_logits), true);
}

TEST_CASE("forward refusals beyond tensor descriptors") {
  load_native();
  const sy_ce_problem p = make_ce_problem(4, 10, sy::kF32, SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD);
  CeSetup s(p, random_ce_data(4, 10, sy::kF32, 1, false));
  sy_error err = make_error();

  SUBCASE("strides") {
    std::vector<Altered> keep;
    keep.reserve(2);
    check_refusal(forward_with(s, [&](sy_ce_forward_args& a) {
                    keep.emplace_back(*a.logits);
                    keep.back().strides[1] = 2;
                    a.logits = &keep.back().tensor;
                  }, &err),
                  err, SY_ERR_INVALID_ARGUMENT, {"logits has last-dimension stride 2", "expected 1"});
    check_refusal(forward_with(s, [&](sy_ce_forward_args& a) {
                    keep.emplace_back(*a.grad_logits);
                    keep.back().strides[0] = 5;
                    a.grad_logits = &keep.back().tensor;
                  }, &err),
                  err, SY_ERR_INVALID_ARGUMENT, {"grad_logits has row stride 5", "row length 10"});
  }
  SUBCASE("flags that need a tensor") {
    check_refusal(forward_with(s, [](sy_ce_forward_args& a) { a.argmax = nullptr; }, &err), err,
                  SY_ERR_INVALID_ARGUMENT, {"argmax is NULL", "SY_CE_ARGMAX"});
    check_refusal(forward_with(s, [](sy_ce_forward_args& a) { a.grad_scale = nullptr; }, &err),
                  err, SY_ERR_INVALID_ARGUMENT, {"grad_scale is NULL", "SY_CE_GRAD_IN_FORWARD"});
    check_refusal(forward_with(s, [](sy_ce_forward_args& a) { a.grad_logits = nullptr; }, &err),
                  err, SY_ERR_INVALID_ARGUMENT, {"grad_logits is NULL", "SY_CE_GRAD_IN_FORWARD"});
  }
  SUBCASE("workspace") {
    check_refusal(forward_with(s, [](sy_ce_forward_args& a) { a.workspace_bytes -= 8; }, &err),
                  err, SY_ERR_INVALID_ARGUMENT,
                  {("workspace_bytes = " + std::to_string(s.workspace_bytes - 8)).c_str(),
                   ("needs " + std::to_string(s.workspace_bytes) + " bytes").c_str()});
    check_refusal(forward_with(s, [](sy_ce_forward_args& a) { a.workspace = nullptr; }, &err),
                  err, SY_ERR_INVALID_ARGUMENT, {"workspace is NULL"});
    CHECK(s.workspace_bytes >= 4 * 10 * 4);  // at least the fp32 copy of the logits
  }
  SUBCASE("struct sizes and NULLs") {
    check_refusal(forward_with(s, [](sy_ce_forward_args& a) { a.struct_size = 8; }, &err), err,
                  SY_ERR_INVALID_ARGUMENT, {"args.struct_size = 8", "smaller"});
    check_refusal(forward_with(s, [](sy_ce_forward_args& a) { a.problem = nullptr; }, &err), err,
                  SY_ERR_INVALID_ARGUMENT, {"args.problem is NULL"});
    check_refusal(ce().forward(nullptr, &err), err, SY_ERR_INVALID_ARGUMENT, {"args is NULL"});
    check_refusal(ce().backward(nullptr, &err), err, SY_ERR_INVALID_ARGUMENT, {"args is NULL"});
    // err itself may be NULL
    CHECK(ce().forward(nullptr, nullptr) == SY_ERR_INVALID_ARGUMENT);
  }
  SUBCASE("grad_logits partly overlapping the logits") {
    Tensor wide(sy::kF32, {4, 11});
    Altered shifted(*wide.dl());
    shifted.shape[1] = 10;
    shifted.tensor.byte_offset = 4;  // columns 1..10 of a [4, 11] buffer
    Altered base(*wide.dl());
    base.shape[1] = 10;  // columns 0..9
    check_refusal(forward_with(s, [&](sy_ce_forward_args& a) {
                    a.logits = &base.tensor;
                    a.grad_logits = &shifted.tensor;
                  }, &err),
                  err, SY_ERR_INVALID_ARGUMENT, {"grad_logits partly overlaps logits"});
  }
  SUBCASE("logits and gradient side by side in one buffer are disjoint, hence fine") {
    const sy_ce_problem q = make_ce_problem(4, 5, sy::kF32, SY_CE_GRAD_IN_FORWARD);
    CeSetup t(q, random_ce_data(4, 5, sy::kF32, 2, false));
    Tensor both(sy::kF32, {4, 10});
    Altered left(*both.dl());
    left.shape[1] = 5;
    Altered right(*both.dl());
    right.shape[1] = 5;
    right.tensor.byte_offset = 5 * 4;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 5; ++j) both.set(i, j, t.logits.get(i, j));
    sy_ce_forward_args a = t.forward_args();
    a.logits = &left.tensor;
    a.grad_logits = &right.tensor;
    CHECK_MESSAGE(ce().forward(&a, &err) == SY_OK, err.message);
    CHECK(!std::isnan(both.get(3, 9)));
  }
}

TEST_CASE("tensor-parallel communicator refusals") {
  load_native();
  sy_ce_problem p = make_ce_problem(3, 10, sy::kF32, 0);
  p.tp_size = 2;
  p.vocab_local = 4;
  p.vocab_start = 6;
  CeSetup s(p, random_ce_data(3, 10, sy::kF32, 1, false));
  sy_error err = make_error();
  check_refusal(forward_with(s, [](sy_ce_forward_args& a) { a.tp = nullptr; }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"tp is NULL", "tp_size = 2"});
  switchyard::ThreadGroup three(3, 2000);
  check_refusal(forward_with(s, [&](sy_ce_forward_args& a) { a.tp = three.comm(0); }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"tp->size = 3", "tp_size = 2"});
  CHECK(three.collectives(0) == 0);  // refused before any collective
  sy_ce_problem single = make_ce_problem(3, 10, sy::kF32, 0);
  CeSetup s1(single, random_ce_data(3, 10, sy::kF32, 1, false));
  check_refusal(forward_with(s1, [&](sy_ce_forward_args& a) { a.tp = three.comm(1); }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"tp->size = 3", "tp_size = 1"});
}

TEST_CASE("SY_CE_CHECK_LABELS names the row and the value, and writes nothing") {
  load_native();
  const sy_ce_problem p = make_ce_problem(5, 10, sy::kF32,
                                          SY_CE_CHECK_LABELS | SY_CE_IGNORE_INDEX | SY_CE_ARGMAX |
                                              SY_CE_GRAD_IN_FORWARD);
  CeData data = random_ce_data(5, 10, sy::kF32, 3, false);
  data.labels[1] = -100;  // ignored: fine
  data.labels[3] = 10;
  data.labels[4] = -7;
  CeSetup s(p, data);
  sy_error err = make_error();
  sy_ce_forward_args a = s.forward_args();
  check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"labels[3] = 10", "[0, 10)", "SY_CE_CHECK_LABELS"});
  for (int64_t i = 0; i < 5; ++i) {
    CHECK(std::isnan(s.loss.get(i)));
    CHECK(std::isnan(s.lse.get(i)));
    CHECK(std::isnan(s.grad.get(i, 0)));
  }
}

TEST_CASE("backward refusals") {
  load_native();
  const sy_ce_problem p = make_ce_problem(4, 10, sy::kBF16, 0);
  CeSetup s(p, random_ce_data(4, 10, sy::kBF16, 1, false));
  sy_error err = make_error();
  auto backward_with = [&](const std::function<void(sy_ce_backward_args&)>& alter) {
    sy_ce_backward_args a = s.backward_args();
    alter(a);
    return ce().backward(&a, &err);
  };
  check_refusal(backward_with([](sy_ce_backward_args& a) { a.lse = nullptr; }), err,
                SY_ERR_INVALID_ARGUMENT, {"lse is required but NULL"});
  check_refusal(backward_with([](sy_ce_backward_args& a) { a.grad_loss = nullptr; }), err,
                SY_ERR_INVALID_ARGUMENT, {"grad_loss is required but NULL"});
  Tensor wrong(sy::kF32, {4, 10});
  check_refusal(backward_with([&](sy_ce_backward_args& a) { a.grad_logits = wrong.dl(); }), err,
                SY_ERR_INVALID_ARGUMENT, {"grad_logits has dtype float32, expected bfloat16"});
  Tensor short_loss(sy::kF32, {3});
  check_refusal(backward_with([&](sy_ce_backward_args& a) { a.grad_loss = short_loss.dl(); }), err,
                SY_ERR_INVALID_ARGUMENT, {"grad_loss has shape [3], expected [4]"});
  check_refusal(backward_with([](sy_ce_backward_args& a) { a.struct_size = 8; }), err,
                SY_ERR_INVALID_ARGUMENT, {"args.struct_size = 8"});

  // In place with a wider gradient dtype over the same memory cannot work.
  sy_ce_problem wide = p;
  wide.grad_dtype = sy::kF32;
  CeSetup w(wide, random_ce_data(4, 10, sy::kBF16, 1, false));
  // A float32 view of the bfloat16 logits' memory: refused before anything is written.
  Altered alias(*w.logits.dl());
  alias.tensor.dtype = sy::kF32;
  sy_ce_backward_args a = w.backward_args();
  a.grad_logits = &alias.tensor;
  check_refusal(ce().backward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"grad_logits partly overlaps logits", "float32", "bfloat16"});
}
