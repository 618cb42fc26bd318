#!/usr/bin/env python3
"""PyTorch peers of switchyard-bench: the same cases, the same protocol, the same JSON schema.

Run it on the GPU machine (its python3 has torch 2.11) in the same job as switchyard-bench:

    python3 bench/peers.py --json OUT/peers.json

Peers (PERFORMANCE.md):
  cross entropy, per-token grad_output, on every per_token case (TP2 cases: the per-rank shape
  at TP1, as switchyard-bench does on one GPU):
    megatron_eager     Megatron-LM's _VocabParallelCrossEntropy at TP1, op by op (float upcast,
                       max, subtract, gather target, exp, sum, log; backward softmax - onehot,
                       times grad_output), an autograd.Function as in Megatron
    torch_compile_ce   torch.compile of the same op sequence as one function (backward from
                       AOTAutograd: softmax - onehot)
    torch_cross_entropy  F.cross_entropy(logits, target, reduction='none') on the bf16 logits
  norms, forward + backward (dweight/dbias included):
    torch_rms_norm / torch_layer_norm                   F.rms_norm / F.layer_norm, eager
    torch_compile_rms_norm / torch_compile_layer_norm   torch.compile of the same call
    liger_rms_norm / liger_layer_norm                   Liger-Kernel's own autograd functions
                       (LigerRMSNormFunction: casting mode "llama", offset 0, in place, dx
                       written over dy, which is re-copied before every rep outside the
                       window; LigerLayerNormFunction), their Triton kernels; skipped with the
                       reason when liger_kernel cannot be imported (bench/run_gpu.sh installs
                       it from the repository's .whl folder)

Protocol: CUDA events around forward and backward after warm-up, median of >= 20 reps, the L2
flushed by a write of max(256 MiB, 2 x L2) before every rep and the stream held for --hold-us
(a GPU sleep) so that the host has queued the whole rep before the GPU reaches the first event
(GPU-only times, as switchyard-bench does), fresh gradients (x.grad = None) outside the
window, never zeros. Extra memory is the
torch.cuda.max_memory_allocated() delta of one forward + backward, less the outputs a caller
needs anyway (loss; for norms y, dx, dweight, dbias, mean, rstd); the gradient of the logits
counts as extra, since it can be written in place. Correctness: float64 reference on a sample
of rows (all rows for dweight/dbias), norm-relative error ||got - ref|| / ||ref|| against
METHOD.md's bounds (1e-2 for 16-bit outputs, 1e-4 for fp32).
"""

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import traceback

SCHEMA = "switchyard-bench/1"
REFERENCE_COPY_GBPS = 4280.0


# ---- cases: kept equal to bench/src/cases.cpp (tests/bench checks they agree) ----------------

def all_cases(small):
    ce_rows = 16 if small else 2048
    vocab_tp1 = 1024 if small else 131072
    vocab_tp2 = vocab_tp1 // 2
    norm_rows = 64 if small else 16384
    hidden_a = 256 if small else 4096
    hidden_b = 512 if small else 8192

    def ce(name, cols, tp, path):
        return dict(name=name, family="ce", path=path, rows=ce_rows, cols=cols, tp_size=tp)

    def norm(name, hidden, kind):
        return dict(name=name, family="norm", path="fwd_bwd", rows=norm_rows, cols=hidden,
                    tp_size=1, kind=kind)

    return [
        ce("ce_tp1_per_token", vocab_tp1, 1, "per_token"),
        ce("ce_tp1_grad_in_forward", vocab_tp1, 1, "grad_in_forward"),
        ce("ce_tp2_per_token", vocab_tp2, 2, "per_token"),
        ce("ce_tp2_grad_in_forward", vocab_tp2, 2, "grad_in_forward"),
        norm("rmsnorm_4096", hidden_a, "rms"),
        norm("rmsnorm_8192", hidden_b, "rms"),
        norm("layernorm_4096", hidden_a, "layer"),
        norm("layernorm_8192", hidden_b, "layer"),
    ]


def floors(case, element_bytes=2):
    tensor = case["rows"] * case["cols"] * element_bytes
    if case["family"] == "norm":
        return ("5x tensor", 5 * tensor), None
    two = ("2-pass", 2 * tensor)
    if case["path"] == "per_token":
        return ("3-pass", 3 * tensor), two
    return two, two


PEERS = {
    "ce": ["megatron_eager", "torch_compile_ce", "torch_cross_entropy"],
    "rms": ["torch_rms_norm", "torch_compile_rms_norm", "liger_rms_norm"],
    "layer": ["torch_layer_norm", "torch_compile_layer_norm", "liger_layer_norm"],
}


class PeerUnavailable(Exception):
    """A peer whose library cannot be loaded here: reported as skipped, with this reason."""


_liger = {}


def load_liger():
    """Liger-Kernel's RMSNorm and LayerNorm autograd functions (its default Triton kernels, the
    ones LigerRMSNorm runs on CUDA) and where they come from, imported once; raises
    PeerUnavailable with the reason when liger_kernel cannot be imported. Needs no GPU."""
    if not _liger:
        try:
            from liger_kernel.ops.layer_norm import LigerLayerNormFunction
            from liger_kernel.ops.rms_norm import LigerRMSNormFunction
            import liger_kernel
        except Exception as e:  # ImportError, or a Triton/torch it does not work with
            _liger["error"] = "liger_kernel not importable: %s: %s" % (type(e).__name__, e)
        else:
            try:
                from importlib.metadata import version
                liger_version = version("liger-kernel")
            except Exception:
                liger_version = getattr(liger_kernel, "__version__", "unknown")
            try:
                import triton
                triton_version = triton.__version__
            except Exception:
                triton_version = "unknown"
            _liger.update(rms=LigerRMSNormFunction, layer=LigerLayerNormFunction,
                          version=liger_version, triton=triton_version,
                          path=os.path.dirname(liger_kernel.__file__))
    if "error" in _liger:
        raise PeerUnavailable(_liger["error"])
    return _liger


def liger_norm_fn(name, eps):
    """liger_rms_norm / liger_layer_norm as norm_peer_fn gives a peer: (fn(x, w, b) -> y,
    whether its backward writes dx over the dy it is given)."""
    liger = load_liger()
    if name == "liger_rms_norm":
        # LigerRMSNorm's defaults, spelled out: offset 0, casting mode "llama", in place (dx
        # over dy), row_mode None (Liger picks its row or its block kernel).
        rms = liger["rms"]
        return (lambda x, w, b: rms.apply(x, w, eps, 0.0, "llama", True, None)), True
    if name == "liger_layer_norm":
        layer = liger["layer"]
        return (lambda x, w, b: layer.apply(x, w, b, eps)), False
    raise KeyError(name)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", help="write the results as JSON to this file")
    p.add_argument("--family", choices=["ce", "norm", "all"], default="all")
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--peers", default="",
                   help="comma-separated peer names (default: all): %s"
                        % ", ".join(n for group in PEERS.values() for n in group))
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--small", action="store_true", help="tiny shapes, same case names")
    p.add_argument("--check-rows", type=int, default=32)
    p.add_argument("--copy-bytes", type=int, default=0,
                   help="copy-bandwidth buffer (0: 4 GiB, 64 MiB with --small)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--hold-us", type=int, default=1000,
                   help="hold the stream this long (a GPU sleep) before each timed rep, so the "
                        "host queues the whole rep and the events time the GPU alone (0: off)")
    p.add_argument("--list-cases", action="store_true",
                   help="print the cases (as JSON with --json -) and exit; needs no torch")
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error("--reps must be at least 1, got %d" % args.reps)
    return args


def select_cases(args):
    cases = all_cases(args.small)
    known = [c["name"] for c in cases]
    wanted = [n for n in args.cases.split(",") if n]
    for name in wanted:
        if name not in known:
            sys.exit("peers.py: error: --cases: unknown case '%s'; known cases: %s"
                     % (name, ", ".join(known)))
    out = [c for c in cases
           if (args.family in ("all", c["family"])) and (not wanted or c["name"] in wanted)]
    if not out:
        sys.exit("peers.py: error: no case matches --family and --cases together")
    return out


def list_cases(cases, as_json):
    if as_json:
        print(json.dumps([dict(name=c["name"], family=c["family"], path=c["path"],
                               shape=[c["rows"], c["cols"]], tp_size=c["tp_size"])
                          for c in cases], indent=2))
        return
    for c in cases:
        print("%-24s %-5s %-16s [%d, %d] tp%d" % (c["name"], c["family"], c["path"], c["rows"],
                                                 c["cols"], c["tp_size"]))


# ---- everything below needs torch --------------------------------------------------------------

def run(args, cases):
    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        sys.exit("peers.py: error: torch sees no CUDA device; run on the GPU machine")
    torch.cuda.set_device(args.gpu)
    device = torch.device("cuda", args.gpu)
    props = torch.cuda.get_device_properties(device)
    l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0)
    flush_bytes = max(256 << 20, 2 * l2_bytes)
    flush_buffer = torch.empty(flush_bytes, dtype=torch.uint8, device=device)
    flush_count = [0]

    def flush():
        flush_count[0] += 1
        flush_buffer.fill_((flush_count[0] & 0xFF) | 1)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    # torch.cuda._sleep spins for a number of GPU cycles: measure cycles per microsecond (after
    # a few spins, so that the clocks have ramped up) to hold the stream for --hold-us.
    def calibrate_sleep():
        cycles = 1_000_000
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            torch.cuda._sleep(cycles)
            b.record()
            b.synchronize()
        return cycles / max(a.elapsed_time(b) * 1000.0, 1e-3)

    hold_cycles = int(args.hold_us * calibrate_sleep()) if args.hold_us > 0 else 0

    def hold():
        if hold_cycles > 0:
            torch.cuda._sleep(hold_cycles)

    # ---- copy bandwidth, measured in this run --------------------------------------------
    copy_bytes = args.copy_bytes or ((64 << 20) if args.small else (4 << 30))
    log("measuring copy bandwidth (%d MiB)..." % (copy_bytes >> 20))
    src = torch.full((copy_bytes,), 0xA5, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    copy_ms = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        copy_ms.append(a.elapsed_time(b))
    del src, dst
    torch.cuda.empty_cache()
    copy_median = statistics.median(copy_ms)
    copy_gbps = 2.0 * copy_bytes / (copy_median * 1e6)

    def floor_ms(nbytes):
        return nbytes / (copy_gbps * 1e6)

    # ---- timing ------------------------------------------------------------------------------
    def time_steps(prepare, forward, backward):
        """Events around forward and backward; returns (total, fwd, bwd) lists of ms."""
        marks = []
        for i in range(-args.warmup, args.reps):
            prepare()
            flush()
            hold()
            e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            if i >= 0:
                e[0].record()
            out = forward()
            if i >= 0:
                e[1].record()
            backward(out)
            if i >= 0:
                e[2].record()
                marks.append(e)
            del out
        torch.cuda.synchronize()
        fwd = [m[0].elapsed_time(m[1]) for m in marks]
        bwd = [m[1].elapsed_time(m[2]) for m in marks]
        return [f + b for f, b in zip(fwd, bwd)], fwd, bwd

    def peak_extra(prepare, forward, backward, required_bytes):
        """One forward + backward: allocator high-water mark above what was allocated
        before, less the outputs a caller needs anyway."""
        prepare()
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        out = forward()
        backward(out)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated(device) - base
        return out, peak, max(0, peak - required_bytes)

    def rel_error(got, ref):
        got = got.double()
        if not torch.isfinite(got).all():
            return math.inf
        denom = ref.norm().item()
        diff = (got - ref).norm().item()
        return diff / denom if denom > 0 else diff

    def bound(dtype):
        return 1e-4 if dtype == torch.float32 else 1e-2

    def check_outputs(pairs, rows):
        outputs, passed = [], True
        for name, got, ref in pairs:
            err = rel_error(got, ref)
            ok = err <= bound(got.dtype)
            passed = passed and ok
            outputs.append(dict(tensor=name, rel_error=err if math.isfinite(err) else None,
                                passed=ok,
                                tolerance="||got - ref|| / ||ref|| <= %g (%s output)"
                                          % (bound(got.dtype), str(got.dtype).replace("torch.", "")),
                                worst=""))
        finite = [o["rel_error"] for o in outputs if o["rel_error"] is not None]
        return dict(ran=True, passed=passed, rows=rows,
                    max_rel_error=(max(finite) if len(finite) == len(outputs) else None),
                    outputs=outputs, error="")

    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)

    def uniform(shape, lo, hi, dtype):
        t = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
        t = (lo + (hi - lo) * t).to(dtype)
        t[t == 0] = (hi if hi > 0 else lo) * 0.5  # never zeros
        return t

    def sample_rows(n):
        k = min(args.check_rows, n)
        picked = {0, n - 1} if k >= 2 else {0}
        extra = torch.randperm(n, generator=gen, device=device)[: k + 2].tolist()
        for r in extra:
            if len(picked) >= k:
                break
            picked.add(r)
        return sorted(picked)

    # ---- cross entropy peers -------------------------------------------------------------
    class MegatronVocabParallelCE(torch.autograd.Function):
        """megatron/core/tensor_parallel/cross_entropy.py at TP1: the all-reduces over the
        tensor-parallel group (MAX of the row max, SUM of predicted logits and of sum_exp)
        are identities with one rank and are left out."""

        @staticmethod
        def forward(ctx, vocab_parallel_logits, target):
            vocab_parallel_logits = vocab_parallel_logits.float()
            logits_max = torch.max(vocab_parallel_logits, dim=-1)[0]
            vocab_parallel_logits -= logits_max.unsqueeze(dim=-1)
            vocab_start_index, vocab_end_index = 0, vocab_parallel_logits.size(-1)
            target_mask = (target < vocab_start_index) | (target >= vocab_end_index)
            masked_target = target.clone() - vocab_start_index
            masked_target[target_mask] = 0
            logits_2d = vocab_parallel_logits.view(-1, vocab_parallel_logits.size(-1))
            masked_target_1d = masked_target.view(-1)
            arange_1d = torch.arange(start=0, end=logits_2d.size(0), device=logits_2d.device)
            predicted_logits_1d = logits_2d[arange_1d, masked_target_1d].clone().contiguous()
            predicted_logits = predicted_logits_1d.view_as(target)
            predicted_logits[target_mask] = 0.0
            exp_logits = vocab_parallel_logits
            torch.exp(vocab_parallel_logits, out=exp_logits)
            sum_exp_logits = exp_logits.sum(dim=-1)
            loss = torch.log(sum_exp_logits) - predicted_logits
            exp_logits.div_(sum_exp_logits.unsqueeze(dim=-1))
            ctx.save_for_backward(exp_logits, target_mask, masked_target_1d)
            return loss

        @staticmethod
        def backward(ctx, grad_output):
            softmax, target_mask, masked_target_1d = ctx.saved_tensors
            grad_input = softmax
            grad_2d = grad_input.view(-1, softmax.size(-1))
            arange_1d = torch.arange(start=0, end=grad_2d.size(0), device=grad_2d.device)
            softmax_update = 1.0 - target_mask.view(-1).float()
            grad_2d[arange_1d, masked_target_1d] -= softmax_update
            grad_input.mul_(grad_output.unsqueeze(dim=-1))
            return grad_input, None

    def megatron_ops(logits, target):
        # The same op sequence as one differentiable function, for torch.compile.
        x = logits.float()
        x = x - x.max(dim=-1, keepdim=True)[0].detach()
        predicted = x.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        return x.exp().sum(dim=-1).log() - predicted

    compiled_ce = {}

    def ce_peer_fn(name):
        if name == "megatron_eager":
            return MegatronVocabParallelCE.apply
        if name == "torch_compile_ce":
            if "ce" not in compiled_ce:
                compiled_ce["ce"] = torch.compile(megatron_ops, dynamic=False)
            return compiled_ce["ce"]
        if name == "torch_cross_entropy":
            return lambda z, t: F.cross_entropy(z, t, reduction="none")
        raise KeyError(name)

    def run_ce_case(case, peers):
        n, v = case["rows"], case["cols"]
        logits = uniform((n, v), -6.0, 6.0, torch.bfloat16)
        target = torch.randint(0, v, (n,), generator=gen, device=device)
        grad_loss = uniform((n,), 0.5 / n, 1.5 / n, torch.float32)
        rows = sample_rows(n)
        z = logits[rows].double()
        lse = torch.logsumexp(z, dim=-1)
        t = target[rows]
        ref_loss = lse - z.gather(-1, t.unsqueeze(-1)).squeeze(-1)
        ref_grad = torch.softmax(z, dim=-1)
        ref_grad[torch.arange(len(rows), device=device), t] -= 1.0
        ref_grad *= grad_loss[rows].double().unsqueeze(-1)

        results = []
        for name in peers:
            r = result_skeleton(case, name)
            log("%s / %s" % (case["name"], name))
            try:
                fn = ce_peer_fn(name)
                x = logits.clone().requires_grad_()

                def prepare():
                    x.grad = None

                def forward():
                    return fn(x, target)

                def backward(loss):
                    loss.backward(grad_loss.to(loss.dtype))

                total, fwd, bwd = time_steps(prepare, forward, backward)
                loss, peak, _ = peak_extra(prepare, forward, backward, 0)
                required = loss.numel() * loss.element_size()
                fill_timing(r, case, total, fwd, bwd)
                r["memory"] = dict(workspace_bytes=0, growth_bytes=peak,
                                   caller_extra_bytes=0, extra_bytes=max(0, peak - required))
                r["check"] = check_outputs([("loss", loss.detach()[rows], ref_loss),
                                            ("grad", x.grad[rows], ref_grad)], len(rows))
                if loss.dtype != torch.float32:
                    r["notes"].append("loss in %s (the dtype of the logits)"
                                      % str(loss.dtype).replace("torch.", ""))
                del x, loss
            except Exception as e:  # a peer that fails is reported, not fatal
                r.update(status="error", reason="%s: %s" % (type(e).__name__, e))
                traceback.print_exc()
            torch.cuda.empty_cache()
            results.append(r)
        del logits
        return results

    # ---- norm peers ----------------------------------------------------------------------
    compiled_norm = {}

    def norm_peer_fn(name, hidden, eps):
        """(fn(x, w, b) -> y, whether its backward writes dx over the dy it is given)."""
        shape = (hidden,)
        if name == "torch_rms_norm":
            return (lambda x, w, b: F.rms_norm(x, shape, w, eps)), False
        if name == "torch_layer_norm":
            return (lambda x, w, b: F.layer_norm(x, shape, w, b, eps)), False
        if name in ("torch_compile_rms_norm", "torch_compile_layer_norm"):
            key = (name, hidden)
            if key not in compiled_norm:
                eager, _ = norm_peer_fn(name.replace("compile_", ""), hidden, eps)
                compiled_norm[key] = torch.compile(eager, dynamic=False)
            return compiled_norm[key], False
        if name.startswith("liger_"):
            return liger_norm_fn(name, eps)
        raise KeyError(name)

    def norm_reference(layer, x, dy, w, b, eps):
        """Float64 formulas of docs/semantics.md; x, dy [rows, H]; returns y, dx, dw, db."""
        x, dy, w = x.double(), dy.double(), w.double()
        mean = x.mean(-1, keepdim=True) if layer else torch.zeros_like(x[:, :1])
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        rstd = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mean) * rstd
        y = xhat * w + (b.double() if layer else 0.0)
        gh = dy * w
        dx = gh - xhat * (gh * xhat).mean(-1, keepdim=True)
        if layer:
            dx = dx - gh.mean(-1, keepdim=True)
        dx = dx * rstd
        return y, dx, (dy * xhat).sum(0), dy.sum(0)

    def run_norm_case(case, peers):
        n, h, eps = case["rows"], case["cols"], 1e-5
        layer = case["kind"] == "layer"
        x0 = uniform((n, h), -3.0, 3.0, torch.bfloat16)
        dy = uniform((n, h), -1.0, 1.0, torch.bfloat16)
        w0 = uniform((h,), 0.5, 1.5, torch.bfloat16)
        b0 = uniform((h,), -0.5, 0.5, torch.bfloat16) if layer else None
        rows = sample_rows(n)
        ref_y, ref_dx, _, _ = norm_reference(layer, x0[rows], dy[rows], w0, b0, eps)
        _, _, ref_dw, ref_db = norm_reference(layer, x0, dy, w0, b0, eps)  # all rows
        torch.cuda.empty_cache()

        results = []
        for name in peers:
            r = result_skeleton(case, name)
            log("%s / %s" % (case["name"], name))
            try:
                fn, dx_in_dy = norm_peer_fn(name, h, eps)
                x = x0.clone().requires_grad_()
                w = w0.clone().requires_grad_()
                b = b0.clone().requires_grad_() if layer else None
                # A backward that writes dx over dy gets a copy of dy, re-copied before every
                # rep outside the window (as switchyard-bench re-copies what a call overwrites).
                dy_in = torch.empty_like(dy) if dx_in_dy else dy

                def prepare():
                    x.grad = None
                    w.grad = None
                    if b is not None:
                        b.grad = None
                    if dx_in_dy:
                        dy_in.copy_(dy)

                def forward():
                    return fn(x, w, b)

                def backward(y):
                    y.backward(dy_in)

                total, fwd, bwd = time_steps(prepare, forward, backward)
                y, peak, _ = peak_extra(prepare, forward, backward, 0)
                tensor = n * h * 2
                # y and dx (dx lands in the dy copy when written in place), dweight (dbias),
                # rstd (mean) in fp32
                required = ((1 if dx_in_dy else 2) * tensor + (2 if layer else 1) * h * 2
                            + (2 if layer else 1) * n * 4)
                fill_timing(r, case, total, fwd, bwd)
                r["memory"] = dict(workspace_bytes=0, growth_bytes=peak, caller_extra_bytes=0,
                                   extra_bytes=max(0, peak - required))
                pairs = [("y", y.detach()[rows], ref_y), ("dx", x.grad[rows], ref_dx),
                         ("dweight", w.grad, ref_dw)]
                if layer:
                    pairs.append(("dbias", b.grad, ref_db))
                r["check"] = check_outputs(pairs, len(rows))
                if dx_in_dy:
                    r["notes"].append("dx written in place over dy (re-copied before every "
                                      "rep, outside the timed window)")
                del x, w, b, y, dy_in
            except PeerUnavailable as e:  # its library is missing here: skipped, not an error
                r.update(status="skipped", reason=str(e))
                log("  skipped: %s" % e)
            except Exception as e:
                r.update(status="error", reason="%s: %s" % (type(e).__name__, e))
                traceback.print_exc()
            torch.cuda.empty_cache()
            results.append(r)
        return results

    # ---- records in switchyard-bench's schema ----------------------------------------------
    def result_skeleton(case, name):
        library, version, notes = "torch", torch.__version__, []
        if name.startswith("liger_"):
            library, version = "liger_kernel", ""
            try:
                liger = load_liger()
                version = liger["version"]
                notes.append("liger_kernel %s from %s, triton %s, torch %s"
                             % (liger["version"], liger["path"], liger["triton"],
                                torch.__version__))
            except PeerUnavailable:
                pass  # the peer reports it (skipped)
        return {
            "case": case["name"], "family": case["family"], "path": case["path"],
            "kind": "peer", "name": name, "version": version, "library": library,
            "status": "ok", "reason": "", "notes": notes, "reps": 0, "warmup": args.warmup,
            "time_ms": None, "gb_per_s": None, "floor_ms": case_floor_ms(case)[0],
            "x_floor": None, "memory": None,
            "check": dict(ran=False, passed=False, rows=0, max_rel_error=None, outputs=[],
                          error=""),
        }

    def case_floor_ms(case):
        primary, two = floors(case)
        return floor_ms(primary[1]), (floor_ms(two[1]) if two else None)

    def fill_timing(r, case, total, fwd, bwd):
        med = statistics.median(total)
        primary, two = floors(case)
        r["reps"] = len(total)
        r["time_ms"] = dict(median=med, min=min(total), max=max(total),
                            forward_median=statistics.median(fwd),
                            backward_median=statistics.median(bwd), samples=total)
        r["gb_per_s"] = primary[1] / (med * 1e6)
        r["x_floor"] = med / floor_ms(primary[1])
        if two and case["family"] == "ce":
            r["floor_2pass_ms"] = floor_ms(two[1])
            r["x_floor_2pass"] = med / floor_ms(two[1])
        if case["family"] == "ce":
            r["collectives"] = dict(forward=None, backward=None, declared_forward=-1,
                                    declared_forward_tp2=-1)
        if case["tp_size"] > 1:
            r["notes"].append("TP%d per-rank shape at TP1: no collectives in the time"
                              % case["tp_size"])

    wanted_peers = [p for p in args.peers.split(",") if p]
    known_peers = sorted({p for group in PEERS.values() for p in group})
    for p in wanted_peers:
        if p not in known_peers:
            sys.exit("peers.py: error: --peers: unknown peer '%s'; known: %s"
                     % (p, ", ".join(known_peers)))

    def peers_for(case):
        group = PEERS["ce"] if case["family"] == "ce" else PEERS[case["kind"]]
        return [p for p in group if not wanted_peers or p in wanted_peers]

    results, case_list, not_run = [], [], []
    for case in cases:
        primary, two = floors(case)
        entry = dict(name=case["name"], family=case["family"], path=case["path"],
                     summary="", shape=[case["rows"], case["cols"]], dtype="bfloat16",
                     tp_size=case["tp_size"], ranks=1, tp_size_run=1,
                     tp_mode=("none" if case["family"] == "norm" else "tp1") if case["tp_size"] == 1
                     else "per-rank shape at tp_size 1",
                     tp_note="" if case["tp_size"] == 1 else
                     "TP%d per-rank shape run at TP1 (PyTorch peers run on one GPU)"
                     % case["tp_size"],
                     floor=dict(name=primary[0], bytes=primary[1], ms=floor_ms(primary[1])))
        if case["family"] == "ce":
            entry["floor_2pass"] = dict(name=two[0], bytes=two[1], ms=floor_ms(two[1]))
        case_list.append(entry)
        if case["family"] == "ce" and case["path"] != "per_token":
            not_run.append(dict(family="ce", name=case["name"],
                                reason="PyTorch peers have no grad-in-forward form; compare "
                                       "with the per_token case of the same shape"))
            continue
        peers = peers_for(case)
        if case["family"] == "ce":
            results += run_ce_case(case, peers)
        else:
            results += run_norm_case(case, peers)

    return {
        "schema": SCHEMA,
        "tool": "peers.py",
        "tool_version": "torch " + torch.__version__,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
        "device": dict(type="cuda", index=args.gpu, name=props.name,
                       multiprocessors=props.multi_processor_count, l2_bytes=l2_bytes,
                       memory_bytes=props.total_memory,
                       compute_capability="%d.%d" % (props.major, props.minor),
                       driver="torch %s, CUDA %s" % (torch.__version__, torch.version.cuda)),
        "settings": dict(reps=args.reps, warmup=args.warmup, small=args.small, dtype="bfloat16",
                         grad_buffer="separate", check_rows=args.check_rows, seed=args.seed,
                         cache_flush_bytes=flush_bytes, hold_us=args.hold_us,
                         timer="CUDA events (torch.cuda.Event)"),
        "copy_bandwidth": dict(bytes=copy_bytes, reps=len(copy_ms), median_ms=copy_median,
                               gb_per_s=copy_gbps, counts="bytes read + bytes written",
                               reference_gb_per_s=REFERENCE_COPY_GBPS,
                               reference="PERFORMANCE.md, H200, 4 GiB device-to-device copy; "
                                         "printed only, floors use the measured value"),
        "not_run": not_run,
        "cases": case_list,
        "results": results,
    }


def print_table(doc, out):
    headers = ["case", "peer", "median ms", "min", "max", "fwd", "bwd", "GB/s", "x floor",
               "extra MiB", "check"]
    rows = []
    for r in doc["results"]:
        if r["status"] != "ok":
            rows.append([r["case"], r["name"], r["status"]] + [""] * 7 + ["-"])
            continue
        t, c = r["time_ms"], r["check"]
        err = c.get("max_rel_error")
        rows.append([r["case"], r["name"], "%.4f" % t["median"], "%.4f" % t["min"],
                     "%.4f" % t["max"], "%.4f" % t["forward_median"],
                     "%.4f" % t["backward_median"], "%.1f" % r["gb_per_s"],
                     "%.2f" % r["x_floor"], "%.1f" % (r["memory"]["extra_bytes"] / 2**20),
                     ("PASS " if c["passed"] else "FAIL ")
                     + ("%.1e" % err if err is not None else "inf")])
    widths = [max(len(str(x[i])) for x in [headers] + rows) for i in range(len(headers))]
    print("copy bandwidth: %.1f GB/s measured (reference %.0f)"
          % (doc["copy_bandwidth"]["gb_per_s"], REFERENCE_COPY_GBPS), file=out)
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print("  ".join(str(x).rjust(w) if i >= 2 else str(x).ljust(w)
                        for i, (x, w) in enumerate(zip(row, widths))).rstrip(), file=out)
    for r in doc["results"]:
        if r["status"] != "ok":
            print("* %s / %s: %s" % (r["case"], r["name"], r["reason"]), file=out)
    for n in doc["not_run"]:
        print("* not run: %s: %s" % (n["name"], n["reason"]), file=out)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cases = select_cases(args)
    if args.list_cases:
        list_cases(cases, args.json == "-")
        return 0
    doc = run(args, cases)
    print_table(doc, sys.stdout)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print("\nJSON written to %s" % args.json)
    return exit_code(doc)


def exit_code(doc):
    """3 when a peer errored or computed a wrong result, else 0: a skipped peer (its library
    is missing here) is no failure."""
    failed = any(r["status"] == "error" or (r["status"] == "ok" and not r["check"]["passed"])
                 for r in doc["results"])
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
