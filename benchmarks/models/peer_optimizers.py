"""torch.compile's optimizer steps for bench_optimizers (bench_optimizers.cpp keeps the same list): each
torch.optim optimizer over ResNet-18's 62 parameter shapes (float32, gradients set once), its step eager
and one parameter at a time (foreach=False, as LibTorch's torch::optim) against torch.compile of the step
(PyTorch's recipe for compiled optimizers). Eager and compiled steps alternate over the rounds. Prints one
JSON line per optimizer and writes the run to the given file.
  python benchmarks/models/peer_optimizers.py OUT.json [--device cuda] [--rounds N] [--only adamw,sgd_momentum]
"""
import argparse
import json
import platform
import statistics

import torch

import peer_models

OPTIMIZERS = {
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01, foreach=False),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-3, foreach=False),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-4, foreach=False),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-3, foreach=False),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-2, foreach=False),
}


def parameters(device):
    torch.manual_seed(0)
    params = []
    for shape in peer_models.resnet18_parameter_shapes(64, 1000):
        p = (torch.randn(shape, device=device) * 0.05).requires_grad_(True)
        p.grad = torch.randn(shape, device=device) * 1e-3
        params.append(p)
    return params


def measure(name, rounds):
    eager_opt, opt = OPTIMIZERS[name](parameters(DEVICE)), OPTIMIZERS[name](parameters(DEVICE))
    update = torch.compile(opt.step)
    first = peer_models.timed(update) + peer_models.timed(update)
    for _ in range(3):
        eager_opt.step()
        update()
    eager, comp = [], []
    for r in range(rounds):
        pair = [(eager, eager_opt.step), (comp, update)]
        for times, f in pair if r % 2 == 0 else reversed(pair):
            times.append(peer_models.timed(f))
    return {"name": name, "eager_us": statistics.median(eager) * 1e6, "compiled_us": statistics.median(comp) * 1e6, "compile_s": first}


def main():
    global DEVICE
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--only", default="")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    DEVICE = args.device
    peer_models.ON_GPU = args.device.startswith("cuda")  # timed() synchronizes
    only = [n for n in args.only.split(",") if n]
    rows = []
    for name in OPTIMIZERS:
        if only and name not in only:
            continue
        try:
            rows.append(measure(name, args.rounds))
        except Exception as e:  # an optimizer torch.compile fails on is a row with its error
            rows.append({"name": name, "error": f"{type(e).__name__}: {e}"})
        print(json.dumps(rows[-1]), flush=True)
    machine = {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(), "torch": torch.__version__,
               "device": torch.cuda.get_device_name() if peer_models.ON_GPU else "cpu"}
    with open(args.out, "w") as f:
        json.dump({"machine": machine, "workloads": rows}, f, indent=1)


if __name__ == "__main__":
    main()
