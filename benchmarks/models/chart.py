"""The model suite as a chart: per model, jitc's and torch.compile's speedup over eager (each over its own
process's eager time), from bench_models' JSON and peer_models.py's JSON (each argument may list several
files, comma-separated: rows measured in separate runs). Writes a PNG.

    ~/.cache/jitc-setup/venv/bin/pip install matplotlib    # once: the venv has no plotting package
    ~/.cache/jitc-setup/venv/bin/python benchmarks/models/chart.py benchmarks/models/models_cpu.json \\
        benchmarks/models/peer_cpu.json benchmarks/models/chart_cpu.png "CPU, 2 threads, float32"
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402


def rows(paths, key):
    """The rows of several files (comma-separated paths), by name; a later file's row wins."""
    out = {}
    for path in paths.split(","):
        with open(path) as f:
            out.update({r["name"]: r for r in json.load(f)[key] if not r.get("error")})
    return out


def speedups(jitc_paths, peer_paths):
    jitc = rows(jitc_paths, "models")
    peer = rows(peer_paths, "workloads")
    names = [n for n in jitc if n in peer]
    ours = [jitc[n]["eager_ms"] / jitc[n]["jitc_ms"] for n in names]
    theirs = [peer[n]["eager_us"] / peer[n]["compiled_us"] for n in names]
    return names, ours, theirs


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    names, ours, theirs = speedups(sys.argv[1], sys.argv[2])
    title = sys.argv[4] if len(sys.argv) > 4 else ""
    fig, ax = plt.subplots(figsize=(max(6, len(names) * 0.9), 4))
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], ours, width=0.4, label="jitc")
    ax.bar([i + 0.2 for i in x], theirs, width=0.4, label="torch.compile")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(names, rotation=35, ha="right")
    ax.set_ylabel("speedup over eager")
    ax.set_title(f"Model suite: {title}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=120)
    print(f"wrote {sys.argv[3]}: {len(names)} models")


if __name__ == "__main__":
    main()
