"""torch.compile on the workloads of bench_workloads (issue 3): the peer that jitc is measured against.

The same workloads as benchmarks/workloads.cpp (names, shapes, ops, seeds: change both together), timed
the same way as bench_workloads: under torch.inference_mode(), LibTorch's default thread count, three
warm-up calls, then the median of 9 batches of >= 20 ms each. torch.compile runs with its defaults
(mode "default", the Inductor CPU backend); compile_s is the wall time of its first call, with a fresh
Inductor cache directory (a cold compile) unless TORCHINDUCTOR_CACHE_DIR is set.

Usage, from the repository root (writes benchmarks/peer.json unless given a path):
    ~/.cache/jitc-setup/venv/bin/python benchmarks/peer_torch_compile.py benchmarks/peer_cpu.json [--only a,b]
then merge: ./build/benchmarks/bench_workloads benchmarks/workloads.json --peer benchmarks/peer_cpu.json

Needs: Inductor's CPU backend compiles the C++ it generates at run time, so a C++ compiler (g++) and the
Python.h of the interpreter that runs this script must be present. The venv's interpreter (pyenv 3.11)
ships its own headers; with Debian's python3 install python3-dev (apt-get install -y python3-dev g++).
NumPy is not needed (torch warns once that it is missing).
"""
import atexit
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time

COLD_CACHE = "TORCHINDUCTOR_CACHE_DIR" not in os.environ
if COLD_CACHE:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="peer_inductor_")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)

import torch  # noqa: E402  (the cache directory must be set before Inductor reads its config)
import torch.nn.functional as F  # noqa: E402

REPEATS = 9
BATCH_SECONDS = 0.02
RTOL, ATOL = 1e-4, 1e-5
CONTENDED_CORES = 0.25  # other processes' cores above which a row's times are not representative
ROWS, COLS = 4096, 1024
INPUT_SEED, WEIGHT_SEED = 0, 1


def randn_inputs(*shapes):
    def make():
        torch.manual_seed(INPUT_SEED)
        return [torch.randn(shape) for shape in shapes]

    return make


def mlp_block():
    tokens, hidden = 256, 4096
    torch.manual_seed(WEIGHT_SEED)
    scale_in, scale_hidden = 1 / math.sqrt(COLS), 1 / math.sqrt(hidden)
    w1 = torch.randn(hidden, COLS) * scale_in
    b1 = torch.randn(hidden) * scale_in
    w2 = torch.randn(COLS, hidden) * scale_hidden
    b2 = torch.randn(COLS) * scale_hidden

    def fn(x):
        return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2) + x

    return randn_inputs((tokens, COLS)), fn


def attention():
    heads, seq, dim = 8, 256, 64
    scale = 1 / math.sqrt(dim)

    def fn(q, k, v):
        return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) * scale, -1), v)

    return randn_inputs(*[(heads, seq, dim)] * 3), fn


def resnet_block():
    batch, channels, side = 8, 64, 56
    torch.manual_seed(WEIGHT_SEED)
    conv_scale = math.sqrt(2.0 / (channels * 9))
    conv1 = torch.randn(channels, channels, 3, 3) * conv_scale
    conv2 = torch.randn(channels, channels, 3, 3) * conv_scale
    bn = []  # per batch norm: weight, bias, running mean, running variance, in workloads.cpp's order
    for _ in range(2):
        bn.append(torch.rand(channels) + 0.5)
        bn.append(torch.randn(channels) * 0.1)
        bn.append(torch.randn(channels) * 0.1)
        bn.append(torch.rand(channels) + 0.5)

    def batch_norm(t, i):
        weight, bias, mean, var = bn[4 * i: 4 * i + 4]
        return F.batch_norm(t, mean, var, weight, bias, training=False, momentum=0.1, eps=1e-5)

    def fn(x):
        y = torch.relu(batch_norm(F.conv2d(x, conv1, None, 1, 1), 0))
        return torch.relu(batch_norm(F.conv2d(y, conv2, None, 1, 1), 1) + x)

    return randn_inputs((batch, channels, side, side)), fn


def make_workloads():
    """(name, make_inputs, fn) in bench_workloads' table order."""
    return [
        ("pointwise_chain", randn_inputs((4 << 20,)), lambda x: (torch.sin(x) + torch.cos(x)).relu()),
        ("bias_gelu", randn_inputs((ROWS, COLS), (COLS,)), lambda x, b: F.gelu(x + b)),
        ("softmax", randn_inputs((ROWS, COLS)), lambda x: torch.softmax(x, -1)),
        ("layer_norm", randn_inputs((ROWS, COLS), (COLS,), (COLS,)),
         lambda x, w, b: F.layer_norm(x, (COLS,), w, b, 1e-5)),
        ("rms_norm_residual", randn_inputs((ROWS, COLS), (ROWS, COLS), (COLS,)),
         lambda x, y, w: x + (y * torch.rsqrt((y * y).mean(-1, keepdim=True) + 1e-6)) * w),
        ("row_sum_squares", randn_inputs((ROWS, COLS)), lambda x: (x * x).sum(-1)),
        ("mlp_block", *mlp_block()),
        ("attention", *attention()),
        ("tiny_chain", randn_inputs((16,)),
         lambda x: torch.sigmoid(torch.tanh(((x * 2 + 1).sin() - 0.5).abs().sqrt() * x) + x)),
        ("resnet_block", *resnet_block()),
    ]


def seconds_per_call(f):
    """Batches of >= BATCH_SECONDS, median of REPEATS: the same estimator as bench_workloads."""
    for _ in range(3):
        f()
    start = time.perf_counter()
    f()
    one = max(time.perf_counter() - start, 1e-9)
    calls = min(max(int(BATCH_SECONDS / one), 1), 1_000_000)
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(calls):
            f()
        samples.append((time.perf_counter() - start) / calls)
    return sorted(samples)[REPEATS // 2]


def busy_ticks():
    """CPU ticks busy machine-wide (/proc/stat: user nice system idle iowait irq softirq steal)."""
    with open("/proc/stat") as stat:
        user, nice, system, _, _, irq, softirq, steal = (int(v) for v in stat.readline().split()[1:9])
    return user + nice + system + irq + softirq + steal


class ContentionMeter:
    """Cores that other processes used while timing (bench_workloads' ContentionMeter). Only the timing
    windows count: Inductor's compiler subprocesses are this script's own work."""

    def __init__(self):
        self.other_ticks, self.seconds = 0, 0.0

    def timed(self, f):
        ticks, own, start = busy_ticks(), sum(os.times()[:2]), time.perf_counter()
        result = seconds_per_call(f)
        own_ticks = (sum(os.times()[:2]) - own) * os.sysconf("SC_CLK_TCK")
        self.other_ticks += busy_ticks() - ticks - own_ticks
        self.seconds += time.perf_counter() - start
        return result

    def other_cores(self):
        return max(0.0, self.other_ticks / os.sysconf("SC_CLK_TCK") / self.seconds) if self.seconds else 0.0


def measure(name, make_inputs, fn):
    inputs = make_inputs()
    contention = ContentionMeter()
    row = {"name": name, "eager_us": contention.timed(lambda: fn(*inputs)) * 1e6,
           "eager_checksum": fn(*inputs).double().abs().sum().item()}  # bench_workloads checks it is its own
    try:
        compiled = torch.compile(fn)
        start = time.perf_counter()
        compiled(*inputs)
        row["compile_s"] = time.perf_counter() - start
        expected, actual = fn(*inputs), compiled(*inputs)
        row["match"] = bool(torch.allclose(actual, expected, rtol=RTOL, atol=ATOL))
        row["max_abs_diff"] = (actual - expected).abs().max().item()
        row["compiled_us"] = contention.timed(lambda: compiled(*inputs)) * 1e6
        row["speedup"] = row["eager_us"] / row["compiled_us"]
    except Exception as e:  # one failing workload must not hide the others' results
        row["error"] = f"{type(e).__name__}: {e}"
    row["other_cores"] = contention.other_cores()
    return row


def startup_compile_s():
    """Inductor's one-time set-up (imports, compiler probe, the C++ prelude) would otherwise land on the
    first workload's compile_s; bench_workloads does the same for jitc."""
    compiled = torch.compile(lambda x: x + 1)
    start = time.perf_counter()
    compiled(torch.ones(16))
    return time.perf_counter() - start


def cpu_model():
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def parse_args(argv):
    out, only, i = "benchmarks/peer.json", None, 0
    while i < len(argv):
        if argv[i] == "--only" and i + 1 < len(argv):
            only, i = set(argv[i + 1].split(",")), i + 2
        elif argv[i].startswith("--"):
            sys.exit(f"unknown flag {argv[i]}; usage: peer_torch_compile.py [out.json] [--only name1,name2]")
        else:
            out, i = argv[i], i + 1
    return out, only


def print_table(machine, rows):
    """Prints the markdown table and the failures; returns whether any workload failed or mismatched."""
    print(f"CPU: {machine['cpu']}; threads: {machine['threads']}; torch {machine['torch']}; "
          f"load average at start {machine['load_average']:.2f}; "
          f"torch.compile start-up compile (x+1) {machine['startup_compile_s']:.1f} s")
    print("| workload | eager µs | torch.compile µs | speedup | first call s | matches eager |")
    print("|---|---:|---:|---:|---:|---|")
    failed = False
    for r in rows:
        name = r["name"] + (" !" if r["other_cores"] > CONTENDED_CORES else "")
        if r["other_cores"] > CONTENDED_CORES:
            print(f"CONTENDED {r['name']}: other processes used {r['other_cores']:.2f} cores while it ran; its "
                  "times are not representative, run again on a quiet machine", file=sys.stderr)
        if "error" in r:
            failed = True
            print(f"| {name} | {r['eager_us']:.2f} | error | – | – | ERROR |")
            print(f"ERROR {r['name']}: torch.compile failed: {r['error']}", file=sys.stderr)
            continue
        failed |= not r["match"]
        match = "yes" if r["match"] else f"MISMATCH {r['max_abs_diff']:.3g}"
        print(f"| {name} | {r['eager_us']:.2f} | {r['compiled_us']:.2f} | {r['speedup']:.2f} "
              f"| {r['compile_s']:.2f} | {match} |")
    print(f"! other processes used > {CONTENDED_CORES} cores while it ran: its times are not representative.")
    return failed


def main():
    out, only = parse_args(sys.argv[1:])
    workloads = [w for w in make_workloads() if only is None or w[0] in only]
    if only and len(workloads) != len(only):
        sys.exit(f"--only: unknown workload in {sorted(only)}; known: {[w[0] for w in make_workloads()]}")
    cache = "fresh (cold compile)" if COLD_CACHE else os.environ["TORCHINDUCTOR_CACHE_DIR"]
    machine = {"cpu": cpu_model(), "threads": torch.get_num_threads(), "torch": torch.__version__,
               "python": platform.python_version(), "inductor_cache": cache,
               "load_average": os.getloadavg()[0]}
    rows = []
    with torch.inference_mode():
        machine["startup_compile_s"] = startup_compile_s()
        for name, make_inputs, fn in workloads:
            print(f"running {name}", file=sys.stderr, flush=True)
            rows.append(measure(name, make_inputs, fn))
    failed = print_table(machine, rows)
    with open(out, "w") as f:
        json.dump({"machine": machine, "workloads": rows}, f, indent=1)
        f.write("\n")
    print(f"wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
