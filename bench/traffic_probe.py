#!/usr/bin/env python3
"""What moving a case's bytes costs on this GPU with no arithmetic: the practical floor.

The floors of PERFORMANCE.md divide a case's bytes by the bandwidth of a 4 GiB copy. A kernel of
a case's size pays a launch, a ramp and a tail that a 4 GiB copy amortises. This script times
PyTorch's own elementwise kernels moving exactly a case's bytes, with switchyard-bench's
protocol (CUDA events, the L2 flushed by a 256 MiB write and the stream held before every rep,
median of --reps), so a backend's time can be read against what the same traffic costs here:

  norm forward   y = x * 2          read 1 tensor, write 1
  norm backward  dx = x + dy        read 2, write 1
  ce forward     logits.amax(-1)    read the logits
  ce 2-pass      grad = logits * 2  read the logits, write the gradient

Run on the GPU machine:  python3 bench/traffic_probe.py [--json OUT]
"""

import argparse
import json
import statistics
import sys


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--hold-us", type=float, default=1000.0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch

    dev = torch.device("cuda")
    flush_buffer = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    count = [0]

    def flush():
        count[0] += 1
        flush_buffer.fill_((count[0] & 0xFF) | 1)

    # A GPU-side wait so the host has queued the timed region before the GPU reaches it.
    cycles_per_us = torch.cuda.get_device_properties(dev).clock_rate / 1000.0  # kHz -> per us

    def hold():
        torch.cuda._sleep(int(args.hold_us * cycles_per_us))

    def time_ms(fn):
        for _ in range(3):
            fn()
        samples = []
        for _ in range(args.reps):
            flush()
            hold()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        return statistics.median(samples), min(samples)

    def rand(shape):
        return torch.rand(shape, device=dev, dtype=torch.float32).to(torch.bfloat16) + 0.5

    results = []

    def report(case, op, nbytes, fn):
        median, best = time_ms(fn)
        gbps = nbytes / (median * 1e6)
        results.append(dict(case=case, op=op, bytes=nbytes, median_ms=median, min_ms=best,
                            gb_per_s=gbps))
        print(f"{case:16s} {op:28s} {nbytes / 2**20:8.0f} MiB  median {median:.4f} ms  "
              f"min {best:.4f}  {gbps:7.1f} GB/s", flush=True)

    big = torch.empty(4 << 30, dtype=torch.uint8, device=dev)
    big_out = torch.empty_like(big)
    report("copy 4 GiB", "copy_ (read 1, write 1)", 2 * big.numel(), lambda: big_out.copy_(big))
    del big, big_out

    for hidden in (4096, 8192):
        x, dy = rand((16384, hidden)), rand((16384, hidden))
        out = torch.empty_like(x)
        t = x.numel() * 2
        case = f"norm [16384,{hidden}]"
        report(case, "fwd: y = x * 2", 2 * t, lambda: torch.mul(x, 2.0, out=out))
        report(case, "bwd: dx = x + dy", 3 * t, lambda: torch.add(x, dy, out=out))
        del x, dy, out

    logits = rand((2048, 131072))
    grad = torch.empty_like(logits)
    t = logits.numel() * 2
    report("ce [2048,131072]", "fwd: amax(-1)", t, lambda: logits.amax(-1))
    report("ce [2048,131072]", "2-pass: grad = logits * 2", 2 * t,
           lambda: torch.mul(logits, 2.0, out=grad))

    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(dev), reps=args.reps,
                           results=results), f, indent=1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
