"""oneDNN convolutions in eager PyTorch, channels-last input against NCHW, over layers of ResNet, MobileNetV2
and VGG-like shapes: the measurement behind inductor/channels_last.cpp choosing the layout by the ratio of
input elements to weight elements (benchmarks/RESULTS.md, model suite, session 20).

    OMP_NUM_THREADS=2 ~/.cache/jitc-setup/venv/bin/python benchmarks/models/conv_layouts.py
"""
import torch, time
torch.set_num_threads(2)
def bench(f, n=15):
    for _ in range(3): f()
    ts=[]
    for _ in range(n):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    ts.sort(); return ts[len(ts)//2]*1e3
for (n,ci,co,hw,k,g) in [(1,256,64,56,1,1),(1,1024,256,14,1,1),(1,128,128,28,3,1),(8,128,128,28,3,1),(1,256,256,14,3,1),(8,256,256,14,3,1),(1,96,96,56,3,96),(1,576,576,14,3,576),(32,64,64,32,3,1),(8,512,512,7,3,1),(32,512,512,7,3,1),(1,3,64,224,7,1)]:
    x=torch.randn(n,ci,hw,hw); xc=x.contiguous(memory_format=torch.channels_last)
    w=torch.randn(co,ci//g,k,k)
    b=bench(lambda: torch.conv2d(xc, w, padding=k//2, groups=g))
    c_=bench(lambda: torch.conv2d(x, w, padding=k//2, groups=g))
    print(f"{n}x{ci}->{co} {hw}x{hw} k{k} g{g}: ratio in/w {x.numel()/w.numel():.2f}; CL {b:.3f}; NCHW {c_:.3f} -> {'CL' if b<c_ else 'NCHW'} {c_/b:.2f}")
