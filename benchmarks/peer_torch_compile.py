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

--device cuda runs instead the CUDA workloads of benchmarks/bench_cuda.cpp (peer_cuda_workloads.py: same keys, names, shapes, dtypes,
ops and calls per round: change both together) through torch.compile in mode "default" and mode
"reduce-overhead" (CUDA graphs), timed as bench_cuda times them: three warm-up calls, then calls queued back
to back and one synchronize, the best of 5 rounds of N calls. Per mode it records the wall time of the first
three calls (compile, and CUDA-graph warm-up and recording for reduce-overhead) plus a synchronize, the peak
of torch.cuda.max_memory_allocated over one steady-state call (after reset_peak_memory_stats, less what was
allocated before), the memory the compiled function keeps reserved after its warm-up (memory_reserved
growth, after empty_cache, before and after: the CUDA-graph pool for reduce-overhead) and max |diff| vs
eager. reduce-overhead is called with the same input tensors every call (like a serving loop), with
torch.compiler.cudagraph_mark_step_begin() before each call; cudagraph trees still copy such inputs into
their static buffers on each replay, so a third run, "reduce-overhead-static-inputs", marks the inputs with
torch._dynamo.mark_static_address (no copy). Also: the host cost of one call on a 16-element tensor,
(x*2+1).relu(), without synchronize in the loop (bench_cuda's measure), and the copy bandwidth. Then:
    /opt/torch/.venv/bin/python3 benchmarks/peer_torch_compile.py --device cuda peer_cuda.json
    build-gpu/benchmarks/bench_cuda cuda_bench.json --peer peer_cuda.json
(benchmarks/gpu_check.sh bench runs both). --dry-run lists the workloads; --debug-cpu runs the CUDA code
path on the CPU with shapes divided by 16 (no timings worth reading: only to check that the script runs).
"""
import atexit
import gc
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import statistics
import time

COLD_CACHE = "TORCHINDUCTOR_CACHE_DIR" not in os.environ
if COLD_CACHE:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="peer_inductor_")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)

import torch  # noqa: E402  (the cache directory must be set before Inductor reads its config)
import torch.nn.functional as F  # noqa: E402
from peer_cuda_workloads import basic_block, cuda_workloads  # noqa: E402

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
    bn = []  # in workloads.cpp's order
    for _ in range(2):
        bn += [torch.rand(channels) + 0.5, torch.randn(channels) * 0.1, torch.randn(channels) * 0.1, torch.rand(channels) + 0.5]
    return randn_inputs((batch, channels, side, side)), lambda x: basic_block(x, conv1, conv2, *bn)


def make_workloads():
    """(name, make_inputs, fn) in bench_workloads' table order."""
    return [
        ("pointwise_chain", randn_inputs((4 << 20,)), lambda x: (torch.sin(x) + torch.cos(x)).relu()),
        ("bias_gelu", randn_inputs((ROWS, COLS), (COLS,)), lambda x, b: F.gelu(x + b)),
        ("softmax", randn_inputs((ROWS, COLS)), lambda x: torch.softmax(x, -1)),
        ("softmax_dim0", randn_inputs((ROWS, COLS)), lambda x: torch.softmax(x, 0)),
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


# ---- CUDA: the workloads of bench_cuda.cpp ---------------------------------------------------------------

CUDA_ROUNDS, CUDA_WARMUP, FIRST_CALLS = 5, 3, 3
HOST_WARMUP, HOST_ROUNDS, HOST_CALLS = 1000, 50, 200
CUDA_MODES = ("default", "reduce-overhead", "reduce-overhead-static-inputs")


class Gpu:
    """synchronize and the caching allocator's counters; on the CPU (--debug-cpu) they do nothing."""

    def __init__(self, device):
        self.cuda = device == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def reserved_after_empty_cache(self):
        gc.collect()
        self.sync()
        if not self.cuda:
            return 0
        torch.cuda.empty_cache()
        return torch.cuda.memory_reserved()

    def peak_bytes(self, f):
        """Peak allocated over one call, less what was allocated before it (bench_cuda's peak_bytes)."""
        self.sync()
        if not self.cuda:
            f()
            return 0
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        f()
        self.sync()
        return torch.cuda.max_memory_allocated() - before

    def ms_per_call(self, f, calls):
        """bench_cuda's ms_per_call: calls queued back to back, one synchronize; the best of 5 rounds."""
        for _ in range(CUDA_WARMUP):
            f()
        self.sync()
        best = math.inf
        for _ in range(CUDA_ROUNDS):
            start = time.perf_counter()
            for _ in range(calls):
                f()
            self.sync()
            best = min(best, (time.perf_counter() - start) * 1e3 / calls)
        return best

    def host_us(self, f, rounds=HOST_ROUNDS, calls=HOST_CALLS):
        """bench_cuda's host cost: rounds of `calls` calls with a synchronize between rounds (not timed),
        median round; a long unsynchronized loop would fill the launch queue and time the GPU instead."""
        for _ in range(HOST_WARMUP):
            f()
        self.sync()
        per_round = []
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(calls):
                f()
            per_round.append((time.perf_counter() - start) * 1e6 / calls)
            self.sync()
        return statistics.median(per_round)


def inputs_for(mode, inputs):
    """reduce-overhead-static-inputs gets copies marked with mark_static_address (CUDA graphs read them in
    place); the caller's tensors stay unmarked for the other modes."""
    if mode != "reduce-overhead-static-inputs":
        return inputs
    copies = [t.clone() for t in inputs]
    for t in copies:
        torch._dynamo.mark_static_address(t)
    return copies


def compile_for(mode, fn, inputs):
    """A no-argument callable running fn compiled in this mode on these inputs (fresh Dynamo state)."""
    torch._dynamo.reset()
    if mode == "default":
        compiled = torch.compile(fn)
        return lambda: compiled(*inputs)
    compiled = torch.compile(fn, mode="reduce-overhead")

    def call():
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(*inputs)

    return call


def tolerance(dtype):
    return (2e-2, 2e-2) if dtype in (torch.bfloat16, torch.float16) else (1e-3, 1e-3)


def measure_cuda_mode(gpu, mode, fn, inputs, expected, calls):
    row = {}
    try:
        skips = torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]
        inputs = inputs_for(mode, inputs)
        reserved = gpu.reserved_after_empty_cache()  # held_bytes: what compiling and warming up keep
        call = compile_for(mode, fn, inputs)
        start = time.perf_counter()
        for _ in range(FIRST_CALLS):
            call()
        gpu.sync()
        row["first_calls_s"] = time.perf_counter() - start
        actual = call()
        rtol, atol = tolerance(expected.dtype)
        row["max_abs_diff"] = (actual.double() - expected.double()).abs().max().item()
        row["match"] = bool(torch.allclose(actual, expected, rtol=rtol, atol=atol))
        del actual
        row["held_bytes"] = gpu.reserved_after_empty_cache() - reserved
        row["ms"] = gpu.ms_per_call(call, calls)
        row["peak_bytes"] = gpu.peak_bytes(call)
        row["cudagraph_skips"] = torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] - skips
    except Exception as e:  # one failing mode must not hide the others' results
        row["error"] = f"{type(e).__name__}: {e}"
    torch._dynamo.reset()
    return row


def measure_cuda(gpu, key, name, calls, make_inputs, fn, modes):
    inputs = make_inputs()
    expected = fn(*inputs)
    row = {"name": name, "calls": calls, "eager_ms": gpu.ms_per_call(lambda: fn(*inputs), calls),
           "peak_bytes_eager": gpu.peak_bytes(lambda: fn(*inputs)),
           "bytes_moved": expected.numel() * expected.element_size()
           + sum(t.numel() * t.element_size() for t in inputs), "modes": {}}
    for mode in modes:
        print(f"running {key} {mode}", file=sys.stderr, flush=True)
        row["modes"][mode] = measure_cuda_mode(gpu, mode, fn, inputs, expected, calls)
    return row


def cuda_host_us(gpu, device, modes):
    """Host cost of one call on 16 elements, (x*2+1).relu(): Python eager and each torch.compile mode."""
    x = torch.randn(16, device=device)

    def f(t):
        return (t * 2 + 1).relu()

    out = {"eager": gpu.host_us(lambda: f(x))}
    for mode in modes:
        try:
            out[mode] = gpu.host_us(compile_for(mode, f, inputs_for(mode, [x])))
        except Exception as e:
            print(f"ERROR host cost, {mode}: {type(e).__name__}: {e}", file=sys.stderr)
        torch._dynamo.reset()
    return out


def copy_gbs(gpu, device, elements):
    src, dst = torch.randn(elements, device=device), torch.empty(elements, device=device)
    ms = gpu.ms_per_call(lambda: dst.copy_(src), 50)
    return 2.0 * elements * 4 / (ms * 1e-3) / 1e9


def run_cuda(out, only, debug_cpu, modes):
    device = "cpu" if debug_cpu else "cuda"
    # convolutions in full float32, as bench_cuda runs them (cuDNN's default TF32 differs by about 1e-3)
    torch.backends.cudnn.allow_tf32 = False
    if not debug_cpu and not torch.cuda.is_available():
        sys.exit("peer_torch_compile.py --device cuda: torch.cuda.is_available() is False (torch "
                 f"{torch.__version__}, built with CUDA {torch.version.cuda}): run it on the GPU host, e.g. with "
                 "/opt/torch/.venv/bin/python3 (--debug-cpu runs the code path on the CPU, for testing only)")
    gpu = Gpu(device)
    workloads = [w for w in cuda_workloads(device, 16 if debug_cpu else 1) if only is None or w[0] in only]
    if only and len(workloads) != len(only):
        sys.exit(f"--only: unknown workload in {sorted(only)}; known: {[w[0] for w in cuda_workloads('meta')]}")
    triton = None
    try:
        import triton as triton_module
        triton = triton_module.__version__
    except ImportError:
        pass
    machine = {"gpu": torch.cuda.get_device_name() if gpu.cuda else f"CPU ({cpu_model()}), --debug-cpu",
               "torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton,
               "python": platform.python_version(),
               "inductor_cache": "fresh (cold compile)" if COLD_CACHE else os.environ["TORCHINDUCTOR_CACHE_DIR"],
               "tf32_matmul": torch.backends.cuda.matmul.allow_tf32}
    result = {"device": device, "machine": machine, "modes": list(modes), "workloads": {}}
    with torch.inference_mode():
        result["copy_gbs"] = copy_gbs(gpu, device, (64 << 20) // (16 if debug_cpu else 1))
        torch._dynamo.reset()
        start = time.perf_counter()
        torch.compile(lambda t: t + 1)(torch.ones(16, device=device))
        gpu.sync()
        result["startup_compile_s"] = time.perf_counter() - start  # Inductor's one-time set-up, kept apart
        torch._dynamo.reset()
        for key, name, calls, make_inputs, fn in workloads:
            result["workloads"][key] = measure_cuda(gpu, key, name, calls, make_inputs, fn, modes)
            gc.collect()
        result["host_us"] = cuda_host_us(gpu, device, modes)
    failed = print_cuda_table(result)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"wrote {out}")
    return 1 if failed else 0


def print_cuda_table(result):
    m = result["machine"]
    print(f"{m['gpu']}; torch {m['torch']} (CUDA {m['cuda']}, triton {m['triton']}); copy bandwidth "
          f"{result['copy_gbs']:.0f} GB/s; torch.compile start-up compile (x+1) {result['startup_compile_s']:.1f} s")
    modes = result["modes"]
    print("| workload | eager ms | " + " | ".join(f"{mode} ms" for mode in modes) + " | first 3 calls s | "
          "peak MB eager / " + " / ".join(modes) + " | max abs diff |")
    print("|---|---:|" + "---:|" * len(modes) + "---:|---:|---:|")
    failed = False

    def each(rows, fmt):
        return " / ".join("error" if "error" in r else fmt(r) for r in rows)

    for key, w in result["workloads"].items():
        rows = [w["modes"][mode] for mode in modes]
        for mode, r in zip(modes, rows):
            if "error" in r:
                failed = True
                print(f"ERROR {key} {mode}: {r['error']}", file=sys.stderr)
            elif not r["match"]:
                failed = True
                print(f"MISMATCH {key} {mode}: max abs diff {r['max_abs_diff']:.3g}", file=sys.stderr)
            elif r.get("cudagraph_skips"):
                print(f"NOTE {key} {mode}: Inductor skipped CUDA graphs ({r['cudagraph_skips']})", file=sys.stderr)
        times = " | ".join("error" if "error" in r else f"{r['ms']:.4f}" for r in rows)
        first = each(rows, lambda r: f"{r['first_calls_s']:.2f}")
        peaks = each(rows, lambda r: f"{r['peak_bytes'] / 1e6:.0f}")
        diffs = each(rows, lambda r: f"{r['max_abs_diff']:.2g}")
        print(f"| {w['name']} | {w['eager_ms']:.4f} | {times} | {first} | {w['peak_bytes_eager'] / 1e6:.0f} / {peaks} "
              f"| {diffs} |")
    host = result.get("host_us", {})
    print("host cost of one call on 16 elements, (x*2+1).relu(): " +
          ", ".join(f"{mode} {us:.2f} us" for mode, us in host.items()))
    return failed


def parse_args(argv):
    usage = ("usage: peer_torch_compile.py [out.json] [--only name1,name2] [--device cpu|cuda] [--dry-run] "
             "[--debug-cpu] [--modes default,reduce-overhead,...]")
    args = {"out": None, "only": None, "device": "cpu", "dry_run": False, "debug_cpu": False, "modes": CUDA_MODES}
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag in ("--only", "--device", "--modes") and i + 1 < len(argv):
            value, i = argv[i + 1], i + 2
            if flag == "--only":
                args["only"] = set(value.split(","))
            elif flag == "--device":
                if value not in ("cpu", "cuda"):
                    sys.exit(f"--device {value}: cpu or cuda; {usage}")
                args["device"] = value
            else:
                args["modes"] = tuple(value.split(","))
                if not set(args["modes"]) <= set(CUDA_MODES):
                    sys.exit(f"--modes: known modes are {','.join(CUDA_MODES)}")
        elif flag in ("--dry-run", "--debug-cpu"):
            args[flag[2:].replace("-", "_")], i = True, i + 1
        elif flag.startswith("--") or flag == "-h":
            sys.exit(f"unknown flag {flag}; {usage}")
        else:
            args["out"], i = flag, i + 1
    if args["debug_cpu"]:
        args["device"] = "cuda"  # the CUDA workloads and code path, run on the CPU
    if args["out"] is None:
        args["out"] = "benchmarks/peer_cuda.json" if args["device"] == "cuda" else "benchmarks/peer.json"
    return args


def main():
    args = parse_args(sys.argv[1:])
    only = args["only"]
    if args["dry_run"]:
        if args["device"] == "cuda":
            for key, name, calls, _, _ in cuda_workloads("meta"):
                print(f"{key}\t{name}\t{calls} calls per round")
            print(f"modes: {', '.join(args['modes'])}")
        else:
            for name, _, _ in make_workloads():
                print(name)
        return 0
    if args["device"] == "cuda":
        return run_cuda(args["out"], only, args["debug_cpu"], args["modes"])
    out = args["out"]
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
