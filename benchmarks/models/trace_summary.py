"""Sums a chrome trace written by bench_models --profile by event name: the top events by total time, for an
eager trace and a jitc trace side by side (the same calls of one model), and the GPU's device time in
kernels where the trace holds it. A torch.compile trace from peer_profile.py reads the same way.

    python3 benchmarks/models/trace_summary.py DIR/unet_b1_eager.trace DIR/unet_b1_jitc.trace [top]
"""
import collections
import json
import sys


def totals(path):
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    sums, counts = collections.Counter(), collections.Counter()
    kernels = collections.Counter()  # device time of GPU kernels (kineto's category "kernel") and copies
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            sums[e["name"]] += e["dur"]
            counts[e["name"]] += 1
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
                kernels[e["name"]] += e["dur"]
    return sums, counts, kernels


def main():
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    for path in sys.argv[1:3]:
        sums, counts, kernels = totals(path)
        print(f"{path}: top {top} events by total µs (nested events count in their parents too)")
        for name, us in sums.most_common(top):
            print(f"  {us:12.0f} µs  {counts[name]:5d}x  {name[:90]}")
        if kernels:
            print(f"  GPU: {sum(kernels.values()):.0f} µs of device time in {sum(counts[n] for n in kernels)} kernels and copies; the top {top}:")
            for name, us in kernels.most_common(top):
                print(f"  {us:12.0f} µs  {counts[name]:5d}x  {name[:90]}")


if __name__ == "__main__":
    main()
