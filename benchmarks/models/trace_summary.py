"""Sums a chrome trace written by bench_models --profile by event name: the top events by total time, for an
eager trace and a jitc trace side by side (the two calls of one model).

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
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            sums[e["name"]] += e["dur"]
            counts[e["name"]] += 1
    return sums, counts


def main():
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    for path in sys.argv[1:3]:
        sums, counts = totals(path)
        print(f"{path}: top {top} events by total µs (nested events count in their parents too)")
        for name, us in sums.most_common(top):
            print(f"  {us:12.0f} µs  {counts[name]:5d}x  {name[:90]}")


if __name__ == "__main__":
    main()
