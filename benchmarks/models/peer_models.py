"""torch.compile on the model suite of bench_models (issue 25): the same models as benchmarks/models/*.cpp
(names, architectures, shapes, dtypes: change both together), random weights, eval mode, timed as
bench_models times them: under torch.inference_mode(), two warm-up calls, then rounds in which eager and
the compiled model take turns (order reversed every other round), the median per call. compile_s is the
wall time of torch.compile's first call with a fresh Inductor cache (a cold compile) unless
TORCHINDUCTOR_CACHE_DIR is set. Writes the JSON that bench_models reads with --peer (times in µs).

Usage, from the repository root (2 threads on the developer machine, as bench_models runs there):
    OMP_NUM_THREADS=2 ~/.cache/jitc-setup/venv/bin/python benchmarks/models/peer_models.py benchmarks/models/peer_cpu.json [--only a,b] [--mode default|reduce-overhead|max-autotune]
On the GPU host (benchmarks/gpu_check.sh models): --device cuda --dtype bf16; a synchronize closes each timed
call; reduce-overhead marks a new CUDA-graph step before each call.
Needs g++ and the interpreter's Python.h (Inductor's CPU backend compiles C++), as peer_torch_compile.py.
"""
import argparse
import atexit
import json
import math
import os
import platform
import shutil
import statistics
import tempfile
import time

if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="peer_models_")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def conv_bn(cin, cout, k, stride=1, act="none", groups=1):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act == "relu":
        layers.append(nn.ReLU())
    if act == "relu6":
        layers.append(nn.Hardtanh(0, 6))
    return nn.Sequential(*layers)


class Residual(nn.Module):
    def __init__(self, cin, planes, stride, bottleneck):
        super().__init__()
        out = planes * 4 if bottleneck else planes
        if bottleneck:
            self.body = nn.Sequential(conv_bn(cin, planes, 1, 1, "relu"), conv_bn(planes, planes, 3, stride, "relu"), conv_bn(planes, out, 1))
        else:
            self.body = nn.Sequential(conv_bn(cin, planes, 3, stride, "relu"), conv_bn(planes, planes, 3))
        self.shortcut = conv_bn(cin, out, 1, stride) if stride != 1 or cin != out else None

    def forward(self, x):
        return F.relu(self.body(x) + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet(nn.Module):
    def __init__(self, blocks, bottleneck, width, classes):
        super().__init__()
        self.stem = conv_bn(3, width, 7, 2, "relu")
        layers, cin = [], width
        for stage, n in enumerate(blocks):
            planes = width << stage
            for b in range(n):
                layers.append(Residual(cin, planes, 2 if b == 0 and stage > 0 else 1, bottleneck))
                cin = planes * 4 if bottleneck else planes
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        y = F.max_pool2d(self.stem(x), 3, 2, 1)
        return self.fc(F.adaptive_avg_pool2d(self.layers(y), (1, 1)).flatten(1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [conv_bn(cin, hidden, 1, 1, "relu6")] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, "relu6", hidden), conv_bn(hidden, cout, 1)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    def __init__(self, divisor, classes):
        super().__init__()
        settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
        cin = 32 // divisor
        layers = [conv_bn(3, cin, 3, 2, "relu6")]
        for t, c, n, s in settings:
            for i in range(n):
                layers.append(InvertedResidual(cin, c // divisor, s if i == 0 else 1, t))
                cin = c // divisor
        layers.append(conv_bn(cin, 1280 // divisor, 1, 1, "relu6"))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280 // divisor, classes)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


def shuffle_channels(x, groups):
    b, c, h, w = x.shape
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous().view(b, c, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        branch = cout // 2
        self.stride = stride
        if stride > 1:
            self.branch1 = nn.Sequential(conv_bn(cin, cin, 3, stride, "none", cin), conv_bn(cin, branch, 1, 1, "relu"))
        cin2 = cin if stride > 1 else branch
        self.branch2 = nn.Sequential(conv_bn(cin2, branch, 1, 1, "relu"), conv_bn(branch, branch, 3, stride, "none", branch),
                                     conv_bn(branch, branch, 1, 1, "relu"))

    def forward(self, x):
        if self.stride == 1:
            a, b = x.chunk(2, 1)
            return shuffle_channels(torch.cat([a, self.branch2(b)], 1), 2)
        return shuffle_channels(torch.cat([self.branch1(x), self.branch2(x)], 1), 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, divisor, classes):
        super().__init__()
        repeats, channels = [4, 8, 4], [24, 116, 232, 464, 1024]
        self.stem = conv_bn(3, channels[0], 3, 2, "relu")
        units, cin = [], channels[0]
        for s in range(3):
            for i in range(repeats[s]):
                out = channels[s + 1] // divisor // 2 * 2
                units.append(ShuffleUnit(cin, out, 2 if i == 0 else 1))
                cin = out
        self.stages = nn.Sequential(*units)
        self.head = conv_bn(cin, channels[4] // divisor, 1, 1, "relu")
        self.fc = nn.Linear(channels[4] // divisor, classes)

    def forward(self, x):
        y = self.stages(F.max_pool2d(self.stem(x), 3, 2, 1))
        return self.fc(self.head(y).mean((2, 3)))


class UNet(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        block = lambda cin, cout: nn.Sequential(conv_bn(cin, cout, 3, 1, "relu"), conv_bn(cout, cout, 3, 1, "relu"))  # noqa: E731
        self.down, self.up, cin = nn.ModuleList(), nn.ModuleList(), 3
        for d in range(depth + 1):
            self.down.append(block(cin, width << d))
            cin = width << d
        for d in reversed(range(depth)):
            self.up.append(block(cin + (width << d), width << d))
            cin = width << d
        self.out = nn.Conv2d(cin, 1, 1)

    def forward(self, x):
        skips, y = [], x
        for d, block in enumerate(self.down):
            if d > 0:
                y = F.max_pool2d(y, 2, 2)
            y = block(y)
            skips.append(y)
        for u, block in enumerate(self.up):
            y = F.interpolate(y, scale_factor=2, mode="nearest")
            y = block(torch.cat([y, skips[len(skips) - 2 - u]], 1))
        return self.out(y)


class GptBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = (p.view(b, t, self.heads, c // self.heads).transpose(1, 2) for p in self.qkv(x).split(c, 2))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril().logical_not()
        y = torch.softmax(scores.masked_fill(causal, float("-inf")), -1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def forward(self, x):
        h = x + self.attention(self.ln1(x))
        return h + self.out(F.gelu(self.fc(self.ln2(h)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, width, heads, vocab, context):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(GptBlock(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln(x), self.tokens.weight)


class Decoder(nn.Module):
    """models_text.cpp's Decoder: one token per call, static KV cache written in place at `pos`."""

    def __init__(self, layers, width, heads, vocab, context, batch):
        super().__init__()
        self.heads = heads
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(GptBlock(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        for l in range(layers):
            self.register_buffer(f"keys{l}", torch.zeros(batch, heads, context, width // heads))
            self.register_buffer(f"values{l}", torch.zeros(batch, heads, context, width // heads))
        self.register_buffer("pos", torch.zeros(1, dtype=torch.long))

    def attention(self, block, l, x):
        b, _, c = x.shape
        d = c // self.heads
        q, k, v = (p.view(b, 1, self.heads, d).transpose(1, 2) for p in block.qkv(x).split(c, 2))
        keys, values = getattr(self, f"keys{l}"), getattr(self, f"values{l}")
        keys.index_copy_(2, self.pos, k)
        values.index_copy_(2, self.pos, v)
        scores = (q @ keys.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        unwritten = torch.arange(keys.shape[2], device=self.pos.device) > self.pos
        y = torch.softmax(scores.masked_fill(unwritten, float("-inf")), -1) @ values
        return block.proj(y.transpose(1, 2).reshape(b, 1, c))

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(self.pos)
        for l, block in enumerate(self.blocks):
            x = x + self.attention(block, l, block.ln1(x))
            x = x + block.out(F.gelu(block.fc(block.ln2(x)), approximate="tanh"))
        nxt = F.linear(self.ln(x), self.tokens.weight).argmax(-1)
        self.pos.add_(1).remainder_(self.keys0.shape[2])
        return nxt


def rms_norm(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight


def rotate_half(x):
    a, b = x.chunk(2, -1)
    return torch.cat([-b, a], -1)


class LlamaBlock(nn.Module):
    def __init__(self, width, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.q = nn.Linear(width, width, bias=False)
        self.kv = nn.Linear(width, 2 * kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(width, width, bias=False)
        self.gate_up = nn.Linear(width, 2 * 4 * width, bias=False)
        self.down = nn.Linear(4 * width, width, bias=False)
        self.norm1, self.norm2 = nn.Parameter(torch.ones(width)), nn.Parameter(torch.ones(width))

    def attention(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2 * self.kv_heads, self.head_dim).transpose(1, 2).chunk(2, 1)
        rotate = lambda h: h * cos + rotate_half(h) * sin  # noqa: E731
        rep = self.heads // self.kv_heads
        y = F.scaled_dot_product_attention(rotate(q), rotate(k).repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))

    def forward(self, x, cos, sin):
        h = x + self.attention(rms_norm(x, self.norm1), cos, sin)
        gate, up = self.gate_up(rms_norm(h, self.norm2)).chunk(2, -1)
        return h + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, layers, width, heads, kv_heads, vocab):
        super().__init__()
        self.head_dim = width // heads
        self.tokens = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(LlamaBlock(width, heads, kv_heads) for _ in range(layers))
        self.head = nn.Linear(width, vocab, bias=False)
        self.norm = nn.Parameter(torch.ones(width))

    def forward(self, ids):
        device, dtype = self.norm.device, self.norm.dtype
        inverse = torch.pow(10000.0, -torch.arange(0, self.head_dim, 2, dtype=torch.float, device=device) / self.head_dim)
        angles = torch.outer(torch.arange(ids.shape[1], dtype=torch.float, device=device), inverse)
        both = torch.cat([angles, angles], -1)
        cos, sin = both.cos().to(dtype), both.sin().to(dtype)
        x = self.tokens(ids)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(rms_norm(x, self.norm))


class BertLayer(nn.Module):
    def __init__(self, width, heads, hidden):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj, self.ln1 = nn.Linear(width, 3 * width), nn.Linear(width, width), nn.LayerNorm(width)
        self.fc, self.out, self.ln2 = nn.Linear(width, hidden), nn.Linear(hidden, width), nn.LayerNorm(width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (p.view(b, t, self.heads, c // self.heads).transpose(1, 2) for p in self.qkv(x).split(c, 2))
        y = F.scaled_dot_product_attention(q, k, v)
        h = self.ln1(x + self.proj(y.transpose(1, 2).reshape(b, t, c)))
        return self.ln2(h + self.out(F.gelu(self.fc(h))))


class Bert(nn.Module):
    def __init__(self, layers, width, heads, hidden, vocab, context):
        super().__init__()
        self.tokens, self.positions, self.ln = nn.Embedding(vocab, width), nn.Embedding(context, width), nn.LayerNorm(width)
        self.pooler = nn.Linear(width, width)
        self.blocks = nn.ModuleList(BertLayer(width, heads, hidden) for _ in range(layers))

    def forward(self, ids):
        x = self.ln(self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device)))
        for block in self.blocks:
            x = block(x)
        return torch.tanh(self.pooler(x[:, 0]))


class LstmLm(nn.Module):
    def __init__(self, vocab, width, layers):
        super().__init__()
        self.embed, self.lstm, self.head = nn.Embedding(vocab, width), nn.LSTM(width, width, layers, batch_first=True), nn.Linear(width, vocab)

    def forward(self, ids):
        return self.head(self.lstm(self.embed(ids))[0])


class Vae(nn.Module):
    def __init__(self, pixels, hidden, latent):
        super().__init__()
        self.fc1, self.mu, self.logvar = nn.Linear(pixels, hidden), nn.Linear(hidden, latent), nn.Linear(hidden, latent)
        self.fc3, self.fc4 = nn.Linear(latent, hidden), nn.Linear(hidden, pixels)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        m, lv = self.mu(h), self.logvar(h)
        z = m + torch.randn_like(m) * torch.exp(0.5 * lv)
        recon = torch.sigmoid(self.fc4(F.relu(self.fc3(z))))
        return F.binary_cross_entropy(recon, x, reduction="sum") - 0.5 * torch.sum(1 + lv - m.pow(2) - lv.exp())


def dqn(size, actions):
    after = ((size - 8) // 4 + 1 - 4) // 2 + 1 - 2
    return nn.Sequential(nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
                         nn.Conv2d(64, 64, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64 * after * after, 512), nn.ReLU(),
                         nn.Linear(512, actions))


class MnistNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 10, 5), nn.Conv2d(10, 20, 5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1, self.fc2 = nn.Linear(320, 50), nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = F.relu(self.fc1(x.view(-1, 320)))
        x = self.fc2(F.dropout(x, 0.5, self.training))
        return F.log_softmax(x, 1)


class MiniGridAc(nn.Module):
    def __init__(self, actions):
        super().__init__()
        self.image = nn.Sequential(nn.Conv2d(3, 16, 2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 2), nn.ReLU(),
                                   nn.Conv2d(32, 64, 2), nn.ReLU())
        self.actor = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, actions))
        self.critic = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))

    def forward(self, observation):
        embedding = self.image(observation).reshape(observation.size(0), -1)
        return torch.cat([F.log_softmax(self.actor(embedding), 1), self.critic(embedding)], 1)


def mlp(widths, last_relu):
    layers = []
    for k in range(len(widths) - 1):
        layers.append(nn.Linear(widths[k], widths[k + 1]))
        if k + 2 < len(widths) or last_relu:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Dlrm(nn.Module):
    def __init__(self, batch, dense, tables, rows, dim, bag):
        super().__init__()
        self.bottom = mlp([dense, 4 * dim, 2 * dim, dim], True)
        self.top = mlp([dim + (tables + 1) * tables // 2, 4 * dim, 2 * dim, 1], False)
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        self.register_buffer("dense", torch.randn(batch, dense))
        features = tables + 1
        self.register_buffer("pairs", torch.tensor([i * features + j for i in range(features) for j in range(i)]))

    def forward(self, ids):
        d = self.bottom(self.dense)
        everything = torch.stack([d] + [table(ids[:, t]) for t, table in enumerate(self.tables)], 1)
        interactions = torch.bmm(everything, everything.transpose(1, 2)).flatten(1).index_select(1, self.pairs)
        return torch.sigmoid(self.top(torch.cat([d, interactions], 1)))


def resnet18_parameter_shapes(width, classes):
    """ResNet-18's parameter shapes (torchvision's layout), as models_optim.cpp lists them."""
    shapes = [(width, 3, 7, 7), (width,), (width,)]

    def conv_bn(out, inp, k):
        shapes.extend([(out, inp, k, k), (out,), (out,)])
    inp = width
    for stage in range(4):
        out = width << stage
        for block in range(2):
            block_in = inp if block == 0 else out
            conv_bn(out, block_in, 3)
            conv_bn(out, out, 3)
            if block == 0 and block_in != out:
                conv_bn(out, block_in, 1)
        inp = out
    return shapes + [(classes, inp), (classes,)]


class ParameterList:
    """Parameters, gradients and two float32 state tensors each (models_optim.cpp)."""

    def __init__(self, device, width=64, classes=1000):
        self.params, self.grads, self.first, self.second = [], [], [], []
        for shape in resnet18_parameter_shapes(width, classes):
            self.params.append(torch.randn(shape, device=device) * 0.05)
            self.grads.append(torch.randn(shape, device=device) * 1e-3)
            self.first.append(torch.zeros(shape, device=device))
            self.second.append(torch.zeros(shape, device=device))


def adamw_step(device):
    state = ParameterList(device)

    def step(corrections):
        neg_step_size, bias2_sqrt = corrections[0], corrections[1]
        for p, g, m, v in zip(state.params, state.grads, state.first, state.second):
            p.mul_(1 - 1e-3 * 0.01)
            m.lerp_(g, 1 - 0.9)
            v.mul_(0.999).addcmul_(g, g, value=1 - 0.999)
            p.add_(m / (v.sqrt() / bias2_sqrt).add_(1e-8) * neg_step_size)
        return state.params[-1]
    return step


def sgd_momentum_step(device):
    state = ParameterList(device)

    def step(lr):
        for p, g, buf in zip(state.params, state.grads, state.first):
            buf.mul_(0.9).add_(g.add(p, alpha=1e-4))
            p.sub_(buf * lr)
        return state.params[-1]
    return step


def clip_grad_norm(device):
    state = ParameterList(device)
    initial = [g.clone() * 1e3 for g in state.grads]

    def clip(scale):
        norms = [torch.linalg.vector_norm(g.copy_(g0).mul_(scale)) for g, g0 in zip(state.grads, initial)]
        total = torch.linalg.vector_norm(torch.stack(norms))
        coefficient = torch.clamp_max(1.0 / (total + 1e-6), 1.0)
        for g in state.grads:
            g.mul_(coefficient)
        return total
    return clip


def models(device, dtype):
    """bench_models' benchmark list (models.cpp), in table order: (name, make_input, module)."""
    torch.manual_seed(0)
    targets = torch.randint(32000, (256,), device=device)
    images = lambda b, s: (lambda: torch.randn(b, 3, s, s, device=device, dtype=dtype))  # noqa: E731
    tokens = lambda b, t, v: (lambda: torch.randint(v, (b, t), device=device))  # noqa: E731
    return [
        ("resnet18_b1", images(1, 224), ResNet([2, 2, 2, 2], False, 64, 1000)),
        ("resnet18_b32", images(32, 224), ResNet([2, 2, 2, 2], False, 64, 1000)),
        ("resnet50_b1", images(1, 224), ResNet([3, 4, 6, 3], True, 64, 1000)),
        ("mobilenet_v2_b1", images(1, 224), MobileNetV2(1, 1000)),
        ("shufflenet_v2_b1", images(1, 224), ShuffleNetV2(1, 1000)),
        ("unet_b1", images(1, 256), UNet(32, 3)),
        ("gpt2_prefill_b1", tokens(1, 256, 50257), Gpt(12, 768, 12, 50257, 1024)),
        ("gpt2_decode_b1", tokens(1, 1, 50257), Decoder(12, 768, 12, 50257, 1024, 1)),
        ("gpt2_decode_b8", tokens(8, 1, 50257), Decoder(12, 768, 12, 50257, 1024, 8)),
        ("llama_prefill_b1", tokens(1, 256, 32000), Llama(4, 512, 8, 2, 32000)),
        ("cross_entropy", lambda: torch.randn(256, 32000, device=device, dtype=dtype), lambda logits: F.cross_entropy(logits, targets)),
        ("bert_base_b8", tokens(8, 128, 30522), Bert(12, 768, 12, 3072, 30522, 512)),
        ("lstm_lm_b8", tokens(8, 35, 10000), LstmLm(10000, 650, 2)),
        ("vae_b128", lambda: torch.rand(128, 784, device=device, dtype=dtype), Vae(784, 400, 20)),
        ("dlrm_b512", lambda: torch.randint(100000, (512, 8, 8), device=device), Dlrm(512, 13, 8, 100000, 64, 8)),
        ("policy_mlp_b1", lambda: torch.randn(1, 64, device=device, dtype=dtype),
         nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 8))),
        ("dqn_atari_b1", lambda: torch.rand(1, 4, 84, 84, device=device, dtype=dtype), dqn(84, 6)),
        ("mnist_cnn_b1", lambda: torch.rand(1, 1, 28, 28, device=device, dtype=dtype), MnistNet()),
        ("minigrid_ac_b1", lambda: torch.rand(1, 3, 7, 7, device=device, dtype=dtype), MiniGridAc(7)),
        ("mse_loss", lambda: torch.randn(256, 32000, device=device, dtype=dtype),
         (lambda t: lambda p: F.mse_loss(p, t))(torch.randn(256, 32000, device=device, dtype=dtype))),
        ("label_smoothing_ce", lambda: torch.randn(256, 32000, device=device, dtype=dtype),
         lambda logits: F.cross_entropy(logits, targets, label_smoothing=0.1)),
        ("adamw_step", lambda: torch.tensor([-1e-3, 0.0316], device=device), adamw_step(device)),
        ("sgd_momentum_step", lambda: torch.tensor(0.1, device=device), sgd_momentum_step(device)),
        ("clip_grad_norm", lambda: torch.tensor(1.0, device=device), clip_grad_norm(device)),
    ]


ON_GPU = False


def synchronize():
    if ON_GPU:
        torch.cuda.synchronize()


def timed(f):
    synchronize()
    start = time.perf_counter()
    f()
    synchronize()
    return time.perf_counter() - start


def measure(name, make_input, model, rounds, mode, device, dtype):
    if isinstance(model, nn.Module):
        model.eval().to(device, dtype)
    x = make_input()
    inner = torch.compile(model, mode=mode)

    def compiled(x):
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        return inner(x)
    compile_s = timed(lambda: compiled(x))
    torch.manual_seed(0)  # the same draws for a model that draws (the VAE's noise)
    expected = model(x)
    torch.manual_seed(0)
    got = compiled(x).clone()  # a CUDA graph overwrites its outputs on the next replay
    diff = (got.double() - expected.double()).abs().max().item()  # for a decoder: one step further than eager
    for _ in range(2):
        model(x), compiled(x)
    eager, comp = [], []
    for r in range(rounds):
        pair = [(eager, model), (comp, compiled)]
        for times, f in pair if r % 2 == 0 else reversed(pair):
            times.append(timed(lambda: f(x)))
    return {"name": name, "eager_us": statistics.median(eager) * 1e6, "compiled_us": statistics.median(comp) * 1e6,
            "compile_s": compile_s, "match": bool(torch.allclose(got.float(), expected.float(), rtol=1e-3 if dtype == torch.float32 else 2e-2, atol=1e-3)), "max_abs_diff": diff}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="benchmarks/models/peer_cpu.json")
    parser.add_argument("--only", default="")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--mode", default="default")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float", choices=["float", "bf16", "half"])
    args = parser.parse_args()
    global ON_GPU
    ON_GPU = args.device.startswith("cuda")
    dtype = {"float": torch.float32, "bf16": torch.bfloat16, "half": torch.float16}[args.dtype]
    only = [n for n in args.only.split(",") if n]
    rows = []
    with torch.inference_mode():
        for name, make_input, model in models(args.device, dtype):
            if only and name not in only:
                continue
            print(name, "...", flush=True)
            try:
                rows.append(measure(name, make_input, model, args.rounds, args.mode, args.device, dtype))
            except Exception as e:  # a model torch.compile fails on is a row with its error
                rows.append({"name": name, "error": f"{type(e).__name__}: {e}"})
            print(json.dumps(rows[-1]), flush=True)
    machine = {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(), "torch": torch.__version__,
               "mode": args.mode, "device": torch.cuda.get_device_name() if ON_GPU else "cpu", "dtype": args.dtype}
    with open(args.out, "w") as f:
        json.dump({"machine": machine, "workloads": rows}, f, indent=1)


if __name__ == "__main__":
    main()
