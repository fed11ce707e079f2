"""The CUDA workloads of benchmarks/bench_cuda.cpp for peer_torch_compile.py --device cuda (same keys, names,
shapes, dtypes, ops and calls per round: change both together), and the ResNet basic block that both the
CPU and the CUDA workloads run."""
import torch
import torch.nn.functional as F


def basic_block(x, conv1, conv2, *bn):
    """conv3x3-bn-relu-conv3x3-bn + x, relu; bn: per batch norm its weight, bias, running mean and variance."""
    def batch_norm(t, i):
        weight, bias, mean, var = bn[4 * i: 4 * i + 4]
        return F.batch_norm(t, mean, var, weight, bias, training=False, momentum=0.1, eps=1e-5)
    y = torch.relu(batch_norm(F.conv2d(x, conv1, None, 1, 1), 0))
    return torch.relu(batch_norm(F.conv2d(y, conv2, None, 1, 1), 1) + x)


def cuda_workloads(device, shrink=1):
    """(key, name, calls per round, make_inputs, fn) in bench_cuda's order; shrink divides the large dims
    (--debug-cpu only)."""
    def randn(*shape, dtype=torch.float32, scale=None):
        t = torch.randn(shape, device=device, dtype=dtype)
        return t * scale if scale is not None else t

    rows, cols, square = 8192 // shrink, 4096 // shrink, 4096 // shrink
    mlp_rows, mlp_cols = 4096 // shrink, 1024 // shrink

    def rms_norm_residual(a, b, w):
        h = a + b
        return h * torch.rsqrt((h * h).mean(-1, keepdim=True) + 1e-6) * w

    def tiny_chain(x):
        for _ in range(10):
            x = x * 1.01 + 0.1
        return x.relu()

    def resnet_block_inputs():
        inputs = [randn(32, 64, 56, 56), randn(64, 64, 3, 3, scale=0.06), randn(64, 64, 3, 3, scale=0.06)]
        for _ in range(2):  # per batch norm: weight, bias, running mean, running variance
            inputs += [randn(64).abs() + 0.5, randn(64, scale=0.1), randn(64, scale=0.1), randn(64).abs() + 0.5]
        return inputs

    return [
        ("pointwise", "pointwise (sin+cos).relu 4096x4096", 50, lambda: [randn(square, square)],
         lambda x: (x.sin() + x.cos()).relu()),
        ("bias_gelu", "bias + tanh-GELU * 0.5 + x 8192x4096", 50, lambda: [randn(rows, cols), randn(cols)],
         lambda x, b: F.gelu(x + b, approximate="tanh") * 0.5 + x),
        ("softmax", "softmax(x*0.125, -1) 8192x4096", 50, lambda: [randn(rows, cols)],
         lambda x: torch.softmax(x * 0.125, -1)),
        ("layer_norm", "layer_norm 8192x4096", 50, lambda: [randn(rows, cols), randn(cols), randn(cols)],
         lambda x, w, b: F.layer_norm(x, (cols,), w, b)),
        ("rms_norm_residual", "RMSNorm + residual (1 output) 8192x4096", 50,
         lambda: [randn(rows, cols), randn(rows, cols), randn(cols)], rms_norm_residual),
        ("row_sum_squares", "(x*x).sum(1) 8192x4096", 50, lambda: [randn(rows, cols)], lambda x: (x * x).sum(1)),
        ("column_sum", "x.sum(0) 8192x4096", 50, lambda: [randn(rows, cols)], lambda x: x.sum(0)),
        ("full_mean_squares", "(x*x).mean() 8192x4096", 50, lambda: [randn(rows, cols)], lambda x: (x * x).mean()),
        ("mlp", "MLP linear-gelu-linear + x 4096x1024", 50,
         lambda: [randn(mlp_rows, mlp_cols), randn(mlp_rows, mlp_cols, scale=0.03), randn(mlp_cols, mlp_rows, scale=0.03)],
         lambda x, w1, w2: F.linear(F.gelu(F.linear(x, w1)), w2) + x),
        ("attention", "attention softmax(qk^T/8)v 8x16x512x64", 50,
         lambda: [randn(8, 16, 512 // shrink, 64) for _ in range(3)],
         lambda q, k, v: torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / 8.0, -1), v)),
        ("tiny_chain", "tiny chain 10x(x*1.01+0.1), relu 16", 50, lambda: [randn(16)], tiny_chain),
        ("bf16_silu", "bf16 sigmoid(x)*x 8192x8192", 50, lambda: [randn(rows, rows, dtype=torch.bfloat16)],
         lambda x: x.sigmoid() * x),
        ("resnet_block", "ResNet basic block (eval) 32x64x56x56", 50, resnet_block_inputs, basic_block),
        ("full_var", "x.var() 8192x4096", 50, lambda: [randn(rows, cols)], lambda x: x.var()),
    ]
