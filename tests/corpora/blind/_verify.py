"""Compare every solution in this folder with PyTorch's max_pool2d backward.

Usage: /tmp/blind/venv/bin/python _verify.py [file.py ...]
Each solution is executed in a fresh namespace holding the notebook's provided code
cells (np, _pair, output_size, max_pool_forward, ...). A case fails when the call
raises, returns something other than an ndarray of x's shape, returns the wrong
dtype (x's dtype for floating x, float64 for integer x), returns values that differ
from torch (integer x compared as float64), or changes x or d_output.
"""
import glob
import json
import os
import sys
import traceback
import warnings

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOK = "/tmp/blind/release.ipynb"


def notebook_prelude():
    nb = json.load(open(NOTEBOOK))
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        if "YOUR CODE HERE" in src:
            break
        cells.append(src)
    return "\n\n".join(cells)


PRELUDE = notebook_prelude()
BASE_NS = {"__name__": "__notebook__"}
exec(compile(PRELUDE, "<notebook cells>", "exec"), BASE_NS)
_pair = BASE_NS["_pair"]
output_size = BASE_NS["output_size"]


def load(path):
    ns = {"__name__": "__notebook__"}
    exec(compile(PRELUDE, "<notebook cells>", "exec"), ns)
    exec(compile(open(path).read(), path, "exec"), ns)
    return ns["max_pool_backward"]


# ----------------------------------------------------------------------------- reference
def grid(shape, pool, stride, ceil):
    ph, pw = _pair(pool)
    sh, sw = _pair(pool if stride is None else stride)
    return (output_size(shape[-2], ph, sh, ceil), output_size(shape[-1], pw, sw, ceil))


def torch_dx(d, x, pool, stride):
    ph, pw = _pair(pool)
    sh, sw = _pair(pool if stride is None else stride)
    H, W = x.shape[-2:]
    ceil = tuple(d.shape[-2:]) != grid(x.shape, pool, stride, False)
    xt = torch.tensor(np.array(x, dtype=np.float64)).reshape(-1, 1, H, W).requires_grad_()
    out = F.max_pool2d(xt, (ph, pw), (sh, sw), ceil_mode=ceil)
    assert tuple(out.shape[-2:]) == tuple(d.shape[-2:]), (out.shape, d.shape)
    out.backward(torch.tensor(np.array(d, dtype=np.float64)).reshape(out.shape))
    return xt.grad.numpy().reshape(x.shape)


def expected_dtype(x):
    return x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)


# ----------------------------------------------------------------------------- layouts
def make_layout(a, layout):
    """A fresh array equal to a, with the memory layout asked for."""
    a = np.asarray(a)
    if layout == "C":
        return a.copy()
    if layout == "F":
        return np.array(a, order="F")
    if layout == "T":  # a transposed view of a contiguous buffer
        return np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)
    if layout == "step":  # every other element of a bigger buffer
        big = np.zeros(a.shape[:-2] + (2 * a.shape[-2], 2 * a.shape[-1]), dtype=a.dtype)
        big[..., ::2, ::2] = a
        return big[..., ::2, ::2]
    if layout == "offset":  # a slice that starts inside a bigger buffer
        big = np.zeros(a.shape[:-2] + (a.shape[-2] + 1, a.shape[-1] + 2), dtype=a.dtype)
        big[..., 1:, 1:-1] = a
        return big[..., 1:, 1:-1]
    raise ValueError(layout)


# ----------------------------------------------------------------------------- cases
def case(name, x, d, pool, stride=None, layout="C", d_layout="C"):
    return dict(name=name, x=np.asarray(x), d=np.asarray(d), pool=pool, stride=stride,
                layout=layout, d_layout=d_layout)


def upstream(x_shape, pool, stride, ceil, rng, kind="normal"):
    shape = tuple(x_shape[:-2]) + grid(x_shape, pool, stride, ceil)
    if kind == "normal":
        return rng.standard_normal(shape)
    if kind == "float32":
        return rng.standard_normal(shape).astype(np.float32)
    if kind == "int":
        return rng.integers(-5, 6, size=shape)
    if kind == "tenths":
        return rng.integers(-9, 10, size=shape) / 10
    raise ValueError(kind)


def targeted_cases():
    rng = np.random.default_rng(1234)
    out = []
    v1 = np.array([[2, 9, 4, 1], [6, 3, 8, 5], [1, 7, 0, 2], [4, 5, 3, 6]], dtype=float)
    out.append(case("visible test 1 (4x4 float, pool 2)", v1, [[0.5, -1.0], [2.0, 0.25]], 2))
    forum = np.array([[2, -3, 5], [-1, 4, -6], [7, 0, -2]])
    out.append(case("visible forum example (3x3 int, pool 2, ceil)", forum, [[1, -2], [3, 4]], 2))
    out.append(case("same shape again, other values (4x4 float)", v1[::-1, ::-1].copy(),
                    [[0.5, -1.0], [2.0, 0.25]], 2))
    out.append(case("forum shape again, other values", -forum, [[1, -2], [3, 4]], 2))
    xi = rng.permutation(16).reshape(4, 4) - 8
    out.append(case("int64 x, fractional d_output", xi, [[0.1, -0.7], [0.25, 1.5]], 2))
    out.append(case("int32 x, fractional d_output", xi.astype(np.int32), [[0.1, -0.7], [0.25, 1.5]], 2))
    out.append(case("uint8 x (with 0), ceil 5x5 pool 2", rng.permutation(25).reshape(5, 5).astype(np.uint8),
                    rng.standard_normal((3, 3)), 2))
    out.append(case("int8 x with -128, ceil 3x3 pool 2", np.array([[-128, 5, -128], [3, -7, -128], [-128, -128, -128]], np.int8),
                    [[1.0, 2.0], [3.0, 4.0]], 2))
    x32 = rng.permutation(30).reshape(5, 6).astype(np.float32)
    out.append(case("float32 x, float64 d_output", x32, upstream(x32.shape, 2, 1, False, rng), 2, 1))
    x16 = rng.permutation(30).reshape(5, 6).astype(np.float16)
    out.append(case("float16 x, float64 d_output", x16, upstream(x16.shape, 2, 1, False, rng), 2, 1))
    x66 = rng.permutation(36).reshape(6, 6).astype(float)
    out.append(case("pool (2, 3), stride None", x66, upstream(x66.shape, (2, 3), None, False, rng), (2, 3)))
    x55 = rng.permutation(25).reshape(5, 5).astype(float)
    out.append(case("ceil 5x5 pool 2", x55, upstream(x55.shape, 2, None, True, rng), 2))
    out.append(case("ceil 3x3, column-clipped window with max in its 2nd row",
                    [[0., 1., 2.], [3., 4., 9.], [5., 6., 7.]], [[1., 2.], [3., 4.]], 2))
    out.append(case("tie across rows/cols [[0,5],[5,0]]", [[0., 5.], [5., 0.]], [[1.5]], 2))
    out.append(case("all-tied window", [[5., 5.], [5., 5.]], [[1.5]], 2))
    x344 = np.stack([rng.permutation(16).reshape(4, 4) for _ in range(12)]).reshape(3, 4, 4, 4).astype(float)
    out.append(case("4-D x (3, 4, 4, 4), planes differ", x344, upstream(x344.shape, 2, None, False, rng), 2))
    out.append(case("1x3 x, pool (1, 2), stride 1 (shared max)", [[1., 3., 2.]], [[0.5, 2.0]], (1, 2), 1))
    xo = rng.permutation(25).reshape(5, 5).astype(float)
    out.append(case("overlap 5x5 pool 3 stride 1", xo, upstream(xo.shape, 3, 1, False, rng), 3, 1))
    xb = -1e10 * (1 + rng.permutation(25).reshape(5, 5))
    out.append(case("ceil 5x5 pool 2, values below -1e9", xb, upstream(xb.shape, 2, None, True, rng), 2))
    xt = rng.standard_normal((6, 7))
    out.append(case("transposed view, floor 6x7 pool 2", xt, upstream(xt.shape, 2, None, False, rng), 2, None, "T"))
    out.append(case("Fortran-order 3-D x, pool 2 stride 1", rng.standard_normal((2, 5, 6)),
                    upstream((2, 5, 6), 2, 1, False, rng), 2, 1, "F"))
    out.append(case("strided view x[::2, ::2], pool (2, 3)", rng.standard_normal((4, 6, 9)),
                    upstream((4, 6, 9), (2, 3), None, False, rng), (2, 3), None, "step"))
    xn = -(1.0 + rng.permutation(16).reshape(4, 4))
    out.append(case("all-negative x 4x4 pool 2", xn, upstream(xn.shape, 2, None, False, rng), 2))
    x6 = rng.permutation(36).reshape(6, 6).astype(float)
    out.append(case("ceil 6x6 pool 3 stride 2 (overlap + border)", x6, upstream(x6.shape, 3, 2, True, rng), 3, 2))
    out.append(case("pool (2, 3) stride (2, 3)", x66, upstream(x66.shape, (2, 3), (2, 3), False, rng), (2, 3), (2, 3)))
    x57 = rng.permutation(35).reshape(5, 7).astype(float)
    out.append(case("pool 2, stride (1, 2)", x57, upstream(x57.shape, 2, (1, 2), False, rng), 2, (1, 2)))
    out.append(case("pool (3, 2), stride (2, 1)", x57, upstream(x57.shape, (3, 2), (2, 1), False, rng), (3, 2), (2, 1)))
    out.append(case("close values 1000 vs 1000.001", [[1000.0, 1000.001], [999.9995, 1000.0005]], [[2.0]], 2))
    out.append(case("floor 5x5 pool 2 (grid 2x2, not ceil)", x55, upstream(x55.shape, 2, None, False, rng), 2))
    out.append(case("float64 x, d_output 0.1", x55, np.full((2, 2), 0.1), 2))
    out.append(case("pool given as lists", x57, upstream(x57.shape, (2, 3), (1, 2), True, rng), [2, 3], [1, 2]))
    out.append(case("-inf window (all -inf)", [[-np.inf, -np.inf, 1.0], [-np.inf, -np.inf, 2.0]], [[1.0, 2.0]], 2))
    out.append(case("integer d_output, float x", x57, upstream(x57.shape, 3, 2, True, rng, "int"), 3, 2))
    out.append(case("stride larger than pool, ceil", x57, upstream(x57.shape, (1, 2), 3, True, rng), (1, 2), 3))
    out.append(case("H=1 3-D x (2, 1, 5), pool (1, 2)", rng.standard_normal((2, 1, 5)),
                    upstream((2, 1, 5), (1, 2), None, True, rng), (1, 2)))
    out.append(case("W=1 2-D x (4, 1), pool (2, 1) stride 1", rng.standard_normal((4, 1)),
                    upstream((4, 1), (2, 1), 1, False, rng), (2, 1), 1))
    return out


DTYPES = ["float64", "float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8"]
VALUE_KINDS = ["distinct", "ties", "normal", "negative", "large", "tiny", "neginf", "range"]


def random_values(shape, dtype, kind, rng):
    dt = np.dtype(dtype)
    size = int(np.prod(shape))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -10**15), min(info.max, 10**15)
        if kind == "ties":
            v = rng.integers(0, 3, size=size) + (0 if dt.kind == "u" else -1)
        elif kind == "range":
            v = rng.integers(lo, hi, size=size, endpoint=True)
            v[rng.random(size) < 0.3] = lo
        elif kind == "negative" and dt.kind == "i":
            v = -rng.permutation(size) - 1
            v = np.maximum(v, lo)
        elif kind == "large":
            v = rng.integers(lo, hi, size=size, endpoint=True)
        else:
            v = rng.permutation(size) + (lo if dt.kind == "u" else 0)
            v = np.minimum(v, hi)
        return v.reshape(shape).astype(dt)
    big = {"float64": 1e300, "float32": 1e37, "float16": 6e4}[dtype]
    tiny = {"float64": 1e-300, "float32": 1e-37, "float16": 1e-4}[dtype]
    if kind == "distinct":
        v = rng.permutation(size) - size / 2
    elif kind == "ties":
        v = rng.integers(-2, 2, size=size).astype(float)
    elif kind == "negative":
        v = -np.abs(rng.standard_normal(size)) * 50 - 1
    elif kind == "large":
        v = rng.uniform(-1, 1, size) * big
    elif kind == "tiny":
        v = rng.standard_normal(size) * tiny
    elif kind == "neginf":
        v = rng.standard_normal(size)
        v[rng.random(size) < 0.5] = -np.inf
        if rng.random() < 0.2:
            v[rng.integers(size)] = np.inf
    else:
        v = rng.standard_normal(size) * 10
    return v.reshape(shape).astype(dt)


def random_cases(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        lead = tuple(int(s) for s in rng.integers(1, 4, size=rng.integers(0, 3)))
        ph, pw = (int(v) for v in rng.integers(1, 4, size=2))
        if rng.random() < 0.4:
            pw = ph
        choice = rng.integers(3)
        if choice == 0:
            stride, (sh, sw) = None, (ph, pw)
        elif choice == 1:
            sh = sw = int(rng.integers(1, 5))
            stride = sh
        else:
            sh, sw = (int(v) for v in rng.integers(1, 5, size=2))
            stride = (sh, sw)
        pool = ph if (ph == pw and rng.random() < 0.6) else (ph, pw)
        if stride is not None and not isinstance(stride, int) and sh == sw and rng.random() < 0.5:
            stride = sh
        H, W = int(rng.integers(ph, ph + 6)), int(rng.integers(pw, pw + 6))
        if rng.random() < 0.1:
            H, ph = 1, 1
            pool = (1, pw)
        ceil = bool(rng.random() < 0.5)
        dtype = str(rng.choice(DTYPES))
        kind = str(rng.choice(VALUE_KINDS))
        x = random_values(lead + (H, W), dtype, kind, rng)
        dkind = str(rng.choice(["normal", "normal", "float32", "int", "tenths"]))
        d = upstream(x.shape, pool, stride, ceil, rng, dkind)
        layout = str(rng.choice(["C", "C", "C", "F", "T", "step", "offset"]))
        d_layout = str(rng.choice(["C", "C", "F", "T"]))
        g = d.shape[-2:]
        mode = "ceil" if tuple(g) != grid(x.shape, pool, stride, False) else "floor"
        name = (f"random #{i}: x {dtype} {x.shape} {kind} {layout}, pool={pool!r} stride={stride!r}, "
                f"{mode}, d {dkind} {d.shape}")
        out.append(case(name, x, d, pool, stride, layout, d_layout))
        if rng.random() < 0.25:  # the same configuration again with new values
            x2 = random_values(x.shape, dtype, kind, rng)
            d2 = upstream(x.shape, pool, stride, ceil, rng, dkind)
            out.append(case(name + " (repeat, new values)", x2, d2, pool, stride, layout, d_layout))
    return out


def tolerance(dtype):
    return {"float64": 1e-10, "float32": 2e-5, "float16": 4e-3}.get(np.dtype(dtype).name, 1e-10)


# ----------------------------------------------------------------------------- checking
def run_case(fn, c):
    x = make_layout(c["x"], c["layout"])
    d = make_layout(c["d"], c["d_layout"])
    x_keep, d_keep = x.copy(), d.copy()
    ref = torch_dx(c["d"], c["x"], c["pool"], c["stride"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dx = fn(d, x, c["pool"], c["stride"])
    except Exception as e:  # noqa: BLE001
        return f"raised {type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
    if x.shape != x_keep.shape or not np.array_equal(x, x_keep, equal_nan=True):
        return "x was changed"
    if d.shape != d_keep.shape or not np.array_equal(d, d_keep):
        return "d_output was changed"
    if not isinstance(dx, np.ndarray):
        return f"returned {type(dx).__name__}"
    if dx.shape != x.shape:
        return f"dx shape {dx.shape} != x shape {x.shape}"
    want = expected_dtype(c["x"])
    if dx.dtype != want:
        return f"dx dtype {dx.dtype} != {want}"
    tol = tolerance(want)
    scale = max(1.0, float(np.abs(ref).max(initial=0)))
    got = dx.astype(np.float64)
    if not np.allclose(got, ref, rtol=tol, atol=tol * scale):
        bad = np.argwhere(~np.isclose(got, ref, rtol=tol, atol=tol * scale))[0]
        return f"dx differs from torch, first at {tuple(int(b) for b in bad)}: {got[tuple(bad)]!r} vs {ref[tuple(bad)]!r}"
    return None


def all_cases():
    return targeted_cases() + random_cases(400, seed=7)


def main(paths):
    cases = all_cases()
    results = {}
    for path in paths:
        name = os.path.basename(path)
        try:
            fn = load(path)
        except Exception:  # noqa: BLE001
            results[name] = {"passed": 0, "failed": len(cases), "failures": ["load error: " + traceback.format_exc(limit=1)]}
            continue
        passed, failures = 0, []
        for c in cases:
            problem = run_case(fn, c)
            if problem is None:
                passed += 1
            else:
                failures.append(f"{c['name']}: {problem}")
        results[name] = {"passed": passed, "failed": len(failures), "failures": failures}
        print(f"{name:32s} passed {passed:4d}  failed {len(failures):4d}"
              + (f"   first: {failures[0][:150]}" if failures else ""))
    manifest_path = os.path.join(HERE, "MANIFEST.json")
    if os.path.exists(manifest_path) and len(paths) > 1:
        manifest = json.load(open(manifest_path))
        bad = []
        for entry in manifest:
            r = results.get(entry["file"])
            if r is None:
                bad.append(f"{entry['file']}: not run")
            elif entry["correct"] and r["failed"]:
                bad.append(f"{entry['file']}: marked correct but failed {r['failed']}")
            elif not entry["correct"] and not r["failed"]:
                bad.append(f"{entry['file']}: marked buggy but passed every case")
        missing = set(results) - {e["file"] for e in manifest}
        bad += [f"{m}: not in MANIFEST.json" for m in sorted(missing)]
        print("MANIFEST check:", "OK" if not bad else "\n  " + "\n  ".join(bad))
    json.dump(results, open(os.path.join(HERE, "_verify_results.json"), "w"), indent=1)
    return results


if __name__ == "__main__":
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "s*.py")))
    main(files)
