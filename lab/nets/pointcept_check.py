#!/usr/bin/env python3
"""Run Pointcept's own PT-v3m1 (PyTorch, fp32, CPU) on a `f3dbench net --model ptv3 --save DIR` folder and
compare every level's output and the logits with the ones f3dbench saved.

The saved folder holds what the PyTorch run needs (docs/nets.md, "Comparing with Pointcept"): the input,
weights.safetensors under Pointcept's state_dict names, and orders.txt, the order each code row holds after the
shuffles; torch.randperm is made to return those permutations, so both forwards attend in the same patches.
Pointcept is used from a clone (--pointcept), never copied: only the PT-v3m1 module, its Point structure,
serialization and modules are imported; the registry, hooks and PDNorm are stubbed, and torch_scatter.segment_csr
falls back to torch.segment_reduce when the extension is absent. The attention takes Pointcept's flash path, as the
nuScenes configuration does (enable_flash): its padding, cu_seqlens and packed qkv, with flash_attn's
flash_attn_varlen_qkvpacked_func done in plain torch on the CPU (softmax(q k^T scale) v per sequence) and the path's
cast of qkv to bf16 made a no-op, so the comparison stays in fp32. --attention plain takes Pointcept's other path
instead, which shrinks every patch to the level's smallest cloud: it forms the flash path's patches for one cloud, or
for a batch whose clouds each hold at least --patch rows at every level (other batches are refused).
spconv's SubMConv3d sums differ from run to run with more than one thread (spconv issue 679, Pointcept issue
405; at 20k points two runs of the stem differed by 7.8% relative L2 on the CPU), so torch runs on one thread
unless --threads says otherwise.

--serialize CSV compares the codes of `f3dbench serialize` (every order, the batch bits included) with
Pointcept's own encode() of the same grid coordinates and depth, bit for bit.

--init-weights FILE writes the PyTorch initialisation of the same modules instead (state_dict names, with
BatchNorm's num_batches_tracked; the norms' scales, shifts and running statistics drawn at random so that a swapped
pair shows), for `net --weights FILE` to load: a file written by torch, not by f3dbench.

Needs: torch, spconv (its CPU wheel), timm, addict, safetensors, numpy. Exit 0 when every array is within the
tolerance, 1 when one is not, 2 on bad input."""

import argparse
import pathlib
import sys
import types

ORDERS = ["z", "z-trans", "hilbert", "hilbert-trans"]
LEVELS = ["enc0", "enc1", "enc2", "enc3", "enc4", "dec3", "dec2", "dec1", "dec0"]


def fail(msg):
    print(f"pointcept_check: {msg}", file=sys.stderr)
    sys.exit(2)


def import_ptv3(root):
    """Import pointcept.models.point_transformer_v3.point_transformer_v3m1_base from the clone at root
    without running the package __init__ files that import every model and the training engine."""
    import torch

    base = pathlib.Path(root) / "pointcept"
    if not (base / "models/point_transformer_v3/point_transformer_v3m1_base.py").is_file():
        fail(f"{root}: not a Pointcept clone (no pointcept/models/point_transformer_v3/"
             "point_transformer_v3m1_base.py)")

    def package(name, path):
        mod = types.ModuleType(name)
        mod.__path__ = [str(path)] if path else []
        sys.modules[name] = mod
        return mod

    package("pointcept", base)
    package("pointcept.models", base / "models")
    package("pointcept.models.point_transformer_v3", base / "models/point_transformer_v3")
    package("pointcept.engines", None)
    hooks = package("pointcept.engines.hooks", None)
    hooks.HookBase = type("HookBase", (), {})
    builder = package("pointcept.models.builder", None)

    class Registry:
        def register_module(self, name=None, module=None):
            return lambda cls: cls

    builder.MODELS = Registry()
    ppt = package("pointcept.models.point_prompt_training", None)
    ppt.PDNorm = None
    import importlib
    import importlib.util
    if importlib.util.find_spec("torch_scatter") is None:
        ts = types.ModuleType("torch_scatter")
        ts.segment_csr = lambda src, indptr, reduce="sum": torch.segment_reduce(
            src, reduce, offsets=indptr, axis=0)
        sys.modules["torch_scatter"] = ts
    sys.modules.pop("flash_attn", None)
    return importlib.import_module("pointcept.models.point_transformer_v3.point_transformer_v3m1_base")


def flash_on_cpu(torch, m1):
    """Give the module flash_attn's varlen function in plain torch (fp32) and a torch whose bfloat16 is float32 (the
    flash path casts qkv to bf16 first: here a no-op)."""
    def varlen_qkvpacked(qkv, cu_seqlens, max_seqlen=None, dropout_p=0.0, softmax_scale=None, **kw):
        out = torch.empty(qkv.shape[0], qkv.shape[2], qkv.shape[3], dtype=qkv.dtype)
        cu = cu_seqlens.tolist()
        for a, b in zip(cu, cu[1:]):
            q, k, v = qkv[a:b].permute(1, 2, 0, 3).unbind(0)  # (H, L, D) each
            w = torch.softmax((q * softmax_scale) @ k.transpose(-2, -1), dim=-1)
            out[a:b] = (w @ v).permute(1, 0, 2)
        return out

    fa = types.ModuleType("flash_attn")
    fa.flash_attn_varlen_qkvpacked_func = varlen_qkvpacked
    m1.flash_attn = fa

    class Torch(types.ModuleType):
        bfloat16 = torch.float32

        def __getattr__(self, name):
            return getattr(torch, name)

    m1.torch = Torch("torch")


def read_orders(path):
    """orders.txt -> the permutations Pointcept's randperm calls must return, in call order: level 0's row
    names as positions in the configured list, then each level's names as positions in its parent's row."""
    rows = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split()
        if len(f) != 5 or not f[0].isdigit() or sorted(f[1:]) != sorted(ORDERS):
            fail(f"{path}: a line that is not `level` and the four orders: {line!r}")
        rows[int(f[0])] = f[1:]
    if sorted(rows) != list(range(5)):
        fail(f"{path}: levels {sorted(rows)}, expected 0..4")
    perms = [[ORDERS.index(n) for n in rows[0]]]
    perms += [[rows[s - 1].index(n) for n in rows[s]] for s in range(1, 5)]
    return perms


def build_net(torch, m1, patch, flash=True):
    """PT-v3m1 in the nuScenes configuration (the project's `ptv3`; `ptv3-patch4096` with patch 4096) with
    DefaultSegmentorV2's names (backbone.*, seg_head.*); flash: the flash path (flash_on_cpu first), else the plain
    one."""
    class Segmentor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = m1.PointTransformerV3(
                in_channels=4, order=ORDERS, stride=(2, 2, 2, 2), enc_depths=(2, 2, 2, 6, 2),
                enc_channels=(32, 64, 128, 256, 512), enc_num_head=(2, 4, 8, 16, 32),
                enc_patch_size=(patch,) * 5, dec_depths=(2, 2, 2, 2), dec_channels=(64, 64, 128, 256),
                dec_num_head=(4, 4, 8, 16), dec_patch_size=(patch,) * 4, mlp_ratio=4, qkv_bias=True,
                drop_path=0.3, shuffle_orders=True, pre_norm=True, enable_rpe=False, enable_flash=flash,
                upcast_attention=False, upcast_softmax=False)
            self.seg_head = torch.nn.Linear(64, 16)

    return Segmentor()


def init_weights(torch, m1, path, seed):  # the weights do not depend on the patch size
    from safetensors.torch import save_file
    torch.manual_seed(seed)
    net = build_net(torch, m1, 1024, flash=False)
    with torch.no_grad():
        for mod in net.modules():
            if isinstance(mod, (torch.nn.BatchNorm1d, torch.nn.LayerNorm)):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.normal_(0.0, 0.1)
            if isinstance(mod, torch.nn.BatchNorm1d):
                mod.running_mean.normal_(0.0, 0.1)
                mod.running_var.uniform_(0.5, 2.0)
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, path)
    print(f"{path}: PT-v3m1's {len(net.state_dict())} tensors, torch's initialisation (seed {seed})")


def check_serialize(torch, path):
    """`f3dbench serialize --out CSV`'s codes against Pointcept's encode(): 0 when every code is equal."""
    import numpy as np
    from pointcept.models.utils.serialization import encode
    with open(path) as fh:
        head = fh.readline().strip().split(",")
    if head[:6] != ["cloud", "index", "gx", "gy", "gz", "depth"] or not head[6:] or \
            any(o not in ORDERS for o in head[6:]):
        fail(f"{path}: not a `f3dbench serialize` CSV (header {','.join(head)})")
    try:
        t = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    except ValueError as e:
        fail(f"{path}: {e}")
    if t.shape[0] == 0 or t.shape[1] != len(head):
        fail(f"{path}: no rows, or rows of other than {len(head)} columns")
    depth = int(t[0, 5])
    if (t[:, 5] != depth).any():
        fail(f"{path}: more than one depth")
    grid = torch.from_numpy(t[:, 2:5].copy())
    batch = torch.from_numpy(t[:, 0].copy())
    # Pointcept's Point.serialization: depth = bit_length(max grid coordinate + 1) over the batch
    want = int(grid.max() + 1).bit_length()
    print(f"{path}: {t.shape[0]} points in {int(batch.max()) + 1} cloud(s), depth {depth} (Pointcept's rule: {want})")
    bad = int(depth != want)
    for j, o in enumerate(head[6:]):
        ref = encode(grid, batch, depth, order=o).numpy()
        diff = int((ref != t[:, 6 + j]).sum())
        bad += diff
        print(f"{o:14} {t.shape[0] - diff:9d} codes equal, {diff} differ")
    print("PASS: bit for bit" if not bad else "FAIL")
    return 0 if not bad else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("save_dir", nargs="?", help="the folder `f3dbench net --model ptv3 --save DIR` wrote")
    ap.add_argument("--serialize", metavar="CSV", help="compare `f3dbench serialize --out CSV`'s codes and stop")
    ap.add_argument("--init-weights", metavar="FILE", help="write PyTorch-initialised weights to FILE and stop")
    ap.add_argument("--seed", type=int, default=0, help="torch seed of --init-weights (default 0)")
    ap.add_argument("--weights", metavar="FILE",
                    help="run Pointcept with FILE's weights instead of the save's weights.safetensors (the file "
                    "`net --weights FILE` was given: proof that f3dbench ran it)")
    ap.add_argument("--pointcept", required=True, help="a clone of Pointcept (d74c646 was checked)")
    ap.add_argument("--patch", type=int, default=1024,
                    help="the run's attention patch (default 1024; 4096 for ptv3-patch4096, or net's --patch K)")
    ap.add_argument("--attention", choices=["flash", "plain"], default="flash",
                    help="Pointcept's attention path (default flash, the nuScenes configuration's, done in fp32 torch)")
    ap.add_argument("--voxel", type=float, default=0.05, help="the run's --voxel (default 0.05)")
    ap.add_argument("--rtol", type=float, default=1e-4,
                    help="largest relative L2 error of an array (default 1e-4)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: spconv's CPU sums change from run to run on more)")
    a = ap.parse_args()

    import numpy as np
    import torch
    from safetensors.torch import load_file

    if a.serialize:
        import_ptv3(a.pointcept)
        return check_serialize(torch, a.serialize)
    if a.init_weights:
        init_weights(torch, import_ptv3(a.pointcept), a.init_weights, a.seed)
        return 0
    if not a.save_dir:
        fail("give the folder a ptv3 save wrote, --serialize CSV or --init-weights FILE")
    d = pathlib.Path(a.save_dir)
    need = ["input_xyz.npy", "input_feat.npy", "offset.txt", "orders.txt", "weights.safetensors", "logits.npy"]
    need += [f"{lv}.npy" for lv in LEVELS]
    missing = [n for n in need if not (d / n).is_file()]
    if missing:
        fail(f"{d}: missing {', '.join(missing)} (a ptv3 save writes them all)")
    if a.patch < 1:
        fail(f"--patch {a.patch}: at least 1")
    if a.threads < 1:
        fail(f"--threads {a.threads}: at least 1")
    torch.set_num_threads(a.threads)
    m1 = import_ptv3(a.pointcept)
    if a.attention == "flash":
        flash_on_cpu(torch, m1)

    xyz = np.load(d / "input_xyz.npy")
    feat = np.load(d / "input_feat.npy")
    offset = [int(t) for t in (d / "offset.txt").read_text().split()]
    if (len(offset) < 2 or offset[0] != 0 or offset[-1] != len(xyz) or len(feat) != len(xyz)
            or any(b <= c for c, b in zip(offset, offset[1:]))):
        fail(f"{d / 'offset.txt'}: not 0 then increasing cumulative rows ending at {len(xyz)}")
    grid = np.floor(xyz.astype(np.float64) / a.voxel).astype(np.int64)
    for c, b in zip(offset, offset[1:]):  # GridSample: each cloud's grid starts at 0
        grid[c:b] -= grid[c:b].min(0)

    perms = read_orders(d / "orders.txt")
    calls = iter(perms)
    real_randperm = torch.randperm

    def randperm(n, *args, **kw):
        if n != 4:
            return real_randperm(n, *args, **kw)
        try:
            return torch.tensor(next(calls), dtype=torch.long)
        except StopIteration:
            fail("Pointcept drew more order shuffles than orders.txt holds")

    torch.randperm = randperm

    net = build_net(torch, m1, a.patch, flash=a.attention == "flash").eval()
    # spconv's CPU build refuses a bias inside the convolution (only its CUDA kernels fuse one); in training mode it
    # adds the bias after the sum instead, and nothing else in a SubMConv3d depends on the mode
    import spconv.pytorch as spconv
    for mod in net.modules():
        if isinstance(mod, spconv.SubMConv3d):
            mod.train()
    wfile = pathlib.Path(a.weights) if a.weights else d / "weights.safetensors"
    if not wfile.is_file():
        fail(f"{wfile}: no such file")
    state = load_file(str(wfile))
    nparams = sum(p.numel() for p in net.parameters())
    try:
        net.load_state_dict(state, strict=True)
    except RuntimeError as e:
        fail(f"{wfile}: {e}")

    got = {}

    def keep(name):
        return lambda mod, inp, out: got.__setitem__(name, out.feat.detach().clone())

    for s in range(5):
        getattr(net.backbone.enc, f"enc{s}").register_forward_hook(keep(f"enc{s}"))
    for s in range(4):
        getattr(net.backbone.dec, f"dec{s}").register_forward_hook(keep(f"dec{s}"))

    data = dict(coord=torch.from_numpy(xyz.astype(np.float32)), grid_coord=torch.from_numpy(grid).int(),
                feat=torch.from_numpy(feat.astype(np.float32)), offset=torch.tensor(offset[1:]))
    with torch.no_grad():
        point = net.backbone(data)
        logits = net.seg_head(point.feat)
    got["logits"] = logits
    if next(calls, None) is not None:
        fail("Pointcept drew fewer order shuffles than orders.txt holds")
    # Pointcept's plain attention shrinks every patch to the level's smallest cloud; the flash path (and f3dbench)
    # keeps --patch and gives a smaller cloud one patch of its own: the two agree on one cloud, or on full patches
    short = sorted({m.patch_size for m in net.modules() if isinstance(m, m1.SerializedAttention)} - {a.patch})
    if a.attention == "plain" and len(offset) > 2 and short:
        fail(f"a level of some cloud holds under {a.patch} rows (patches of {short[0]} in Pointcept's plain "
             "attention, which flash_attn would not form): save a larger cloud or one cloud")

    print(f"Pointcept PT-v3m1: {nparams} parameters, {len(xyz)} points in {len(offset) - 1} cloud(s); "
          "f3dbench's arrays against it:")
    print(f"{'array':8} {'rows':>7} {'cols':>4} {'rel L2':>10} {'max |diff|':>11} {'max |ref|':>10}")
    worst = 0.0
    for name in LEVELS + ["logits"]:
        ours = np.load(d / f"{name}.npy").astype(np.float64)
        ref = got[name].numpy().astype(np.float64)
        if ours.shape != ref.shape:
            print(f"{name:8} shape {ours.shape} against Pointcept's {ref.shape}")
            worst = float("inf")
            continue
        rel = np.linalg.norm(ours - ref) / max(np.linalg.norm(ref), 1e-30)
        worst = max(worst, rel) if np.isfinite(rel) else float("inf")  # max() would pass over a NaN
        print(f"{name:8} {ref.shape[0]:7d} {ref.shape[1]:4d} {rel:10.2e} {np.abs(ours - ref).max():11.3e} "
              f"{np.abs(ref).max():10.3e}")
    ok = worst <= a.rtol
    print(f"{'PASS' if ok else 'FAIL'}: largest relative L2 error {worst:.2e} (tolerance {a.rtol:.0e})")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # an error (Pointcept's code, a file), not a verdict: exit 2, as for bad input
        import traceback
        traceback.print_exc()
        sys.exit(2)
