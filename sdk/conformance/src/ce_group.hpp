// The ranks of one cross-entropy run: each bound to its own problem through the Runtime, with
// its own buffers; forward on every rank at once (one thread per rank over a ThreadGroup),
// backward rank by rank.
#ifndef SWITCHYARD_CONFORMANCE_CE_GROUP_HPP
#define SWITCHYARD_CONFORMANCE_CE_GROUP_HPP

#include <memory>
#include <optional>
#include <string>
#include <switchyard/comm.hpp>
#include <vector>

#include "case.hpp"
#include "ce_case.hpp"
#include "ce_data.hpp"
#include "tensor_buffer.hpp"

namespace switchyard::conformance {

class CeGroup {
 public:
  struct Outputs {
    std::vector<double> loss, lse, grad;  // grad: [rows, Vp], from forward or backward
    std::vector<int64_t> argmax;
  };

  CeGroup(const Runtime& runtime, const CeSpec& spec, const CeData& data);

  size_t ranks() const { return ranks_.size(); }

  std::vector<CallError> forward();

  // lse and grad_loss: [rows], the same on every rank.
  std::vector<CallError> backward(const std::vector<double>& lse,
                                  const std::vector<double>& grad_loss);

  Outputs outputs(size_t r) const;

  int64_t vocab_local(size_t r) const { return ranks_[r].vocab_local; }
  int64_t vocab_start(size_t r) const { return ranks_[r].vocab_start; }

  // Inputs unchanged (logits survive forward unless they receive the gradient); nothing
  // written outside the outputs' elements.
  void check_forward_buffers(Failures& failures) const;

  void check_backward_buffers(Failures& failures) const;

  // The plugin states how many collectives a forward issues; the thread group counts them.
  void check_collectives(Failures& failures) const;

 private:
  struct Rank {
    sy_ce_problem problem{};
    std::optional<CrossEntropy> op;
    int64_t vocab_local = 0;
    int64_t vocab_start = 0;
    std::unique_ptr<TensorBuffer> logits, labels, loss, lse, argmax, grad_scale, grad_logits,
        workspace, lse_in, grad_loss, grad_out;
    TensorBuffer* forward_grad = nullptr;   // where forward writes the gradient, if it does
    TensorBuffer* backward_grad = nullptr;  // where backward writes it
    int64_t collectives = 0;
  };

  void synchronize() const;

  static void report_change(Failures& failures, const std::string& who, const TensorBuffer& b,
                            bool elements, const std::string& why);

  std::vector<TensorBuffer*> forward_buffers(Rank& k);

  void allocate_forward(Rank& k);

  const CeSpec& spec_;
  const CeData& data_;
  std::unique_ptr<ThreadGroup> group_;
  std::vector<Rank> ranks_;
};

}  // namespace switchyard::conformance

#endif
