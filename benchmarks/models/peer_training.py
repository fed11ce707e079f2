"""torch.compile's training step for bench_training's models (bench_training.cpp keeps the same list): the
loss function (forward, cross-entropy) compiled, backward through AOTAutograd's compiled backward, AdamW
eager and one parameter at a time (foreach=False), as LibTorch's torch::optim::AdamW on jitc's side. Prints one JSON line per model and writes the run to the given file.

Usage: ~/.cache/jitc-setup/venv/bin/python benchmarks/models/peer_training.py out.json [--device cuda --dtype bf16 --scale gpu]
       [--optimizer compiled]  (opt.step through torch.compile too: bench_training's --optimizer written)
"""
import argparse
import json
import platform
import statistics

import torch
import torch.nn.functional as F

import peer_models
from peer_models import Gpt, Llama, MobileNetV2, ResNet, timed


def specs(gpu, device, dtype):
    images = lambda b, s, c: (lambda: (torch.randn(b, 3, s, s, device=device, dtype=dtype), torch.randint(c, (b,), device=device)))  # noqa: E731
    tokens = lambda b, t, v: (lambda: (torch.randint(v, (b, t), device=device), torch.randint(v, (b * t,), device=device)))  # noqa: E731
    if gpu:
        return [("resnet18_b32", lambda: ResNet([2, 2, 2, 2], False, 64, 1000), images(32, 224, 1000)),
                ("mobilenet_v2_b32", lambda: MobileNetV2(1, 1000), images(32, 224, 1000)),
                ("gpt2_b8", lambda: Gpt(12, 768, 12, 50257, 1024), tokens(8, 256, 50257)),
                ("llama_b8", lambda: Llama(4, 512, 8, 2, 32000), tokens(8, 256, 32000))]
    return [("resnet18_b8", lambda: ResNet([2, 2, 2, 2], False, 64, 10), images(8, 64, 10)),
            ("mobilenet_v2_b8", lambda: MobileNetV2(1, 10), images(8, 64, 10)),
            ("gpt_mini_b4", lambda: Gpt(4, 256, 4, 8192, 256), tokens(4, 128, 8192)),
            ("llama_mini_b4", lambda: Llama(2, 256, 4, 2, 8192), tokens(4, 128, 8192))]


def trainer(build, device, dtype):
    torch.manual_seed(0)
    model = build().train().to(device, dtype)
    # foreach=False: LibTorch's torch::optim::AdamW updates one parameter at a time, and the optimizer is
    # not what the comparison is about (both sides run it eagerly); with --optimizer compiled the compiled
    # copy's step goes through torch.compile (PyTorch's recipe for compiled optimizers).
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)

    def loss(x, y):
        logits = model(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), y)
    return model, optimizer, loss


def step(optimizer, update, loss, x, y):
    optimizer.zero_grad()
    value = loss(x, y)
    value.backward()
    update()
    return value.item()


def measure(name, build, batch, rounds, device, dtype, compile_optimizer):
    _, eager_opt, eager_loss = trainer(build, device, dtype)
    _, opt, loss = trainer(build, device, dtype)
    compiled = torch.compile(loss)
    update = torch.compile(opt.step) if compile_optimizer else opt.step
    torch.manual_seed(1)
    x, y = batch()
    first = timed(lambda: step(opt, update, compiled, x, y)) + timed(lambda: step(opt, update, compiled, x, y))
    for _ in range(2):
        step(eager_opt, eager_opt.step, eager_loss, x, y)
    eager, comp = [], []
    for r in range(rounds):
        pair = [(eager, eager_opt, eager_opt.step, eager_loss), (comp, opt, update, compiled)]
        for times, o, u, f in pair if r % 2 == 0 else reversed(pair):
            times.append(timed(lambda: step(o, u, f, x, y)))
    return {"name": name, "eager_us": statistics.median(eager) * 1e6, "compiled_us": statistics.median(comp) * 1e6, "compile_s": first}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="benchmarks/models/peer_training_cpu.json")
    parser.add_argument("--only", default="")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float", choices=["float", "bf16"])
    parser.add_argument("--scale", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--optimizer", default="eager", choices=["eager", "compiled"])
    args = parser.parse_args()
    peer_models.ON_GPU = args.device.startswith("cuda")  # timed() synchronizes
    dtype = {"float": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    only = [n for n in args.only.split(",") if n]
    rows = []
    for name, build, batch in specs(args.scale == "gpu", args.device, dtype):
        if only and name not in only:
            continue
        try:
            rows.append(measure(name, build, batch, args.rounds, args.device, dtype, args.optimizer == "compiled"))
        except Exception as e:  # a model torch.compile fails on is a row with its error
            rows.append({"name": name, "error": f"{type(e).__name__}: {e}"})
        print(json.dumps(rows[-1]), flush=True)
    machine = {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(), "torch": torch.__version__,
               "device": torch.cuda.get_device_name() if peer_models.ON_GPU else "cpu", "dtype": args.dtype}
    with open(args.out, "w") as f:
        json.dump({"machine": machine, "workloads": rows}, f, indent=1)


if __name__ == "__main__":
    main()
