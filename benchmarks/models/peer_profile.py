"""Traces torch.compile's calls of suite models with torch.profiler (kineto, GPU kernels included), as
bench_models --profile traces jitc's: after compiling and two warm-up calls, three calls into
DIR/<model>_tc.trace (chrome format), read with trace_summary.py.

    /opt/torch/.venv/bin/python3 benchmarks/models/peer_profile.py DIR --only bert_base_b8 --mode reduce-overhead
    OMP_NUM_THREADS=2 ~/.cache/jitc-setup/venv/bin/python benchmarks/models/peer_profile.py DIR --only unet_b1 --device cpu --dtype float
"""
import argparse
import os

import torch
from torch import nn

import peer_models

PROFILED_CALLS = 3


def profile(name, make_input, model, mode, device, dtype, out_dir):
    if isinstance(model, nn.Module):
        model.eval().to(device, dtype)
    x = make_input()
    inner = torch.compile(model, mode=mode)

    def compiled():
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        return inner(x)
    on_gpu = device == "cuda"
    for _ in range(3):
        compiled()
    if on_gpu:
        torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if on_gpu else [])
    with torch.profiler.profile(activities=activities) as trace:
        for _ in range(PROFILED_CALLS):
            compiled()
        if on_gpu:
            torch.cuda.synchronize()
    trace.export_chrome_trace(os.path.join(out_dir, f"{name}_tc.trace"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--only", required=True)
    parser.add_argument("--mode", default="default")
    parser.add_argument("--dtype", default="bf16", choices=["float", "bf16", "half"])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args()
    dtype = {"float": torch.float32, "bf16": torch.bfloat16, "half": torch.float16}[args.dtype]
    os.makedirs(args.out_dir, exist_ok=True)
    only = args.only.split(",")
    with torch.inference_mode():
        for name, make_input, model in peer_models.models(args.device, dtype):
            if name in only:
                profile(name, make_input, model, args.mode, args.device, dtype, args.out_dir)


if __name__ == "__main__":
    main()
