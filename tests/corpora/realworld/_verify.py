"""Compare every rNN_*.py in this folder with PyTorch's max_pool2d gradient.

Run: /work/main/.venv/bin/python /work/realworld/_verify.py
Rules checked (Part B of the notebook): dx is an ndarray of x's shape; dtype is x's when x is
floating, float64 for integer x; values equal autograd of F.max_pool2d (ceil_mode when
d_output's grid is the ceil-mode one; ties -> first max, as PyTorch); x and d_output unchanged.
"""
import glob
import importlib.util
import json
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)


def pair(v):
    return (int(v), int(v)) if np.isscalar(v) else (int(v[0]), int(v[1]))


def grid(size, pool, stride, ceil):
    if not ceil:
        return (size - pool) // stride + 1
    count = -(-(size - pool) // stride) + 1
    return count - 1 if (count - 1) * stride >= size else count


def reference(d_output, x, pool_size, stride):
    ph, pw = pair(pool_size)
    sh, sw = (ph, pw) if stride is None else pair(stride)
    H, W = x.shape[-2:]
    floor = (grid(H, ph, sh, False), grid(W, pw, sw, False))
    ceil = tuple(d_output.shape[-2:]) != floor
    tdtype = {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32,
              np.dtype(np.float16): torch.float16}.get(x.dtype, torch.float64)
    xt = torch.tensor(np.ascontiguousarray(x).astype(np.float64)).to(tdtype).reshape(-1, 1, H, W)
    xt.requires_grad_(True)
    out = F.max_pool2d(xt, (ph, pw), (sh, sw), ceil_mode=ceil)
    assert tuple(out.shape[-2:]) == tuple(d_output.shape[-2:]), (out.shape, d_output.shape)
    out.backward(torch.tensor(np.asarray(d_output, dtype=np.float64)).to(tdtype).reshape(out.shape))
    expected_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)
    return xt.grad.reshape(x.shape).to(torch.float64).numpy(), expected_dtype


def out_shape(x_shape, pool_size, stride, ceil):
    ph, pw = pair(pool_size)
    sh, sw = (ph, pw) if stride is None else pair(stride)
    return tuple(x_shape[:-2]) + (grid(x_shape[-2], ph, sh, ceil), grid(x_shape[-1], pw, sw, ceil))


# ---------------------------------------------------------------- probes (small, named)
def probes():
    P = []
    f = lambda a, dt=np.float64: np.array(a, dtype=dt)
    P.append(("2x2 x, pool 2, no tie", f([[1, 3], [2, 0]]), f([[1.5]]), 2, None))
    P.append(("1x3 x, pool (1, 2), stride 1 (overlap, shared max)", f([[1, 3, 2]]), f([[1.0, 1.0]]), (1, 2), 1))
    P.append(("2x2 x, pool 2, tied max [[1,1],[0,0]]", f([[1, 1], [0, 0]]), f([[1.0]]), 2, None))
    P.append(("2x2 int64 x, pool 2, d_output 0.5", f([[1, 2], [3, 4]], np.int64), f([[0.5]]), 2, None))
    P.append(("2x2 float32 x, pool 2", f([[1, 2], [3, 4]], np.float32), f([[0.5]]), 2, None))
    P.append(("1x2 x, pool (1, 2), stride (1, 2)", f([[1, 3]]), f([[2.0]]), (1, 2), (1, 2)))
    P.append(("2x3 x, pool (2, 3)", f([[1, 2, 3], [4, 6, 5]]), f([[1.0]]), (2, 3), None))
    P.append(("3x2 x (H != W), pool (3, 2)", f([[1, 2], [6, 3], [4, 5]]), f([[1.0]]), (3, 2), None))
    P.append(("2x4 x (non-square plane), pool 2", f([[1, 2, 3, 4], [8, 7, 6, 5]]), f([[1.0, 2.0]]), 2, None))
    P.append(("1x3 x, pool (1, 1), stride (1, 2) (stride > pool)", f([[1, 2, 3]]), f([[1.0, 2.0]]), (1, 1), (1, 2)))
    P.append(("3x3 x, pool 3", f([[1, 2, 3], [4, 9, 5], [6, 7, 8]]), f([[1.0]]), 3, None))
    P.append(("3x3 x, pool 2, stride 1 (overlap, distinct)", f([[1, 2, 3], [4, 9, 5], [6, 7, 8]]),
              f([[1.0, 2.0], [3.0, 4.0]]), 2, 1))
    P.append(("2x3 x, pool 2, ceil grid 1x2 (column-clipped window, max in row 1)",
              f([[1, 2, 0], [3, 4, 5]]), f([[1.0, 2.0]]), 2, None))
    P.append(("3x3 int x, pool 2, ceil grid 2x2 (the forum example)",
              f([[2, -3, 5], [-1, 4, -6], [7, 0, -2]], np.int64), np.array([[1, -2], [3, 4]]), 2, None))
    P.append(("2x2 x transposed view (non-contiguous), pool 2", f([[1, 4], [2, 3]]).T, f([[1.0]]), 2, None))
    P.append(("x of shape (1, 1, 1, 2, 2) (3 leading axes), pool 2", f([[[[[1, 3], [2, 0]]]]]), f([[[[[1.0]]]]]), 2, None))
    P.append(("3x4 x, pool 2, stride (1, 2)", f([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]),
              f([[1.0, 2.0], [3.0, 4.0]]), 2, (1, 2)))
    P.append(("x of shape (2, 2, 2), pool 2 (1 leading axis)", f([[[1, 3], [2, 0]], [[5, 4], [6, 7]]]), f([[[1.0]], [[2.0]]]), 2, None))
    return P


# ---------------------------------------------------------------- random cases
DTYPES = [np.float64] * 8 + [np.float32] * 4 + [np.float16] + [np.int64] * 3 + [np.int32] * 2 + [np.int16, np.uint8]


def random_case(rng, i):
    nlead = int(rng.integers(0, 4))
    while True:
        lead = tuple(int(v) for v in rng.integers(1, 4, nlead))
        if int(np.prod(lead)) <= 12:
            break
    square = rng.random() < 0.4
    ph = int(rng.integers(1, 4)); pw = ph if square else int(rng.integers(1, 4))
    r = rng.random()
    if r < 0.25:
        stride = None; sh, sw = ph, pw
    else:
        if r < 0.5:   # overlap
            sh, sw = int(rng.integers(1, ph + 1)), int(rng.integers(1, pw + 1))
        else:
            sh, sw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        if square and rng.random() < 0.6:
            sw = sh
        stride = sh if (sh == sw and rng.random() < 0.5) else ((sh, sw) if rng.random() < 0.8 else [sh, sw])
    pool_size = ph if (ph == pw and rng.random() < 0.6) else ((ph, pw) if rng.random() < 0.8 else [ph, pw])
    H = int(rng.integers(ph, ph + 6)); W = int(rng.integers(pw, pw + 6))
    if rng.random() < 0.15 and ph == pw:
        W = H = max(H, W)
    ceil = rng.random() < 0.35
    shape = lead + (H, W)
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    n = int(np.prod(shape))
    kind = rng.choice(["distinct", "ties", "negative", "const", "ties"])
    if kind == "distinct":
        vals = rng.permutation(n).reshape(shape) + 1
    elif kind == "negative":
        vals = -(rng.permutation(n).reshape(shape) + 1) * (1 if dtype in (np.int16, np.uint8, np.float16) else 7)
    elif kind == "ties":
        vals = rng.integers(-2, 3, size=shape)
    else:
        vals = np.full(shape, -3)
    if dtype == np.uint8:
        vals = vals - vals.min()
        vals = np.minimum(vals, 255)
    x = vals.astype(dtype)
    view = None
    if rng.random() < 0.2:
        view = rng.choice(["swapaxes", "step", "offset", "fortran"])
        if view == "swapaxes":
            x = np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
        elif view == "step":
            base = np.zeros(lead + (H, 2 * W), dtype=dtype); base[..., ::2] = x; x = base[..., ::2]
        elif view == "offset":
            base = np.zeros(lead + (H + 1, W + 2), dtype=dtype); base[..., 1:, 1:-1] = x; x = base[..., 1:, 1:-1]
        else:
            x = np.asfortranarray(x)
    oshape = out_shape(shape, pool_size, stride, ceil)
    dk = rng.random()
    if dk < 0.6:
        d = rng.integers(-8, 9, size=oshape) / 4.0
    elif dk < 0.75:
        d = rng.integers(-3, 4, size=oshape)          # integer d_output
    elif dk < 0.9:
        d = rng.standard_normal(oshape)
    else:
        d = (rng.integers(-8, 9, size=oshape) / 4.0).astype(np.float32)
    desc = (f"random #{i}: x {x.dtype} shape {x.shape}{' (' + view + ' view)' if view else ''} values={kind}, "
            f"pool_size={pool_size!r}, stride={stride!r}, d_output {d.dtype} shape {d.shape}"
            f"{' (ceil grid)' if ceil and oshape != out_shape(shape, pool_size, stride, False) else ''}")
    return desc, x, d, pool_size, stride


def tolerance(dtype):
    return {np.dtype(np.float16): 2e-2, np.dtype(np.float32): 1e-5}.get(np.dtype(dtype), 1e-9)


def check(fn, d_output, x, pool_size, stride, expected, expected_dtype):
    x_given, d_given = x.copy(order="K"), d_output.copy(order="K")
    x_arg, d_arg = x, d_output
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            dx = fn(d_arg, x_arg, pool_size, stride)
        except Exception as e:  # noqa
            return f"raised {type(e).__name__}: {str(e).strip().splitlines()[0][:120] if str(e).strip() else ''}"
    if not (x_arg.shape == x_given.shape and x_arg.dtype == x_given.dtype and np.array_equal(x_arg, x_given)):
        return f"x was changed by the call (now shape {x_arg.shape})"
    if not (d_arg.shape == d_given.shape and np.array_equal(d_arg, d_given)):
        return f"d_output was changed by the call (now shape {d_arg.shape})"
    if not isinstance(dx, np.ndarray):
        return f"returned {type(dx).__name__}, not ndarray"
    if dx.shape != x.shape:
        return f"dx shape {dx.shape} != x shape {x.shape}"
    if dx.dtype != expected_dtype:
        return f"dx dtype {dx.dtype}, expected {expected_dtype}"
    got = dx.astype(np.float64)
    tol = tolerance(expected_dtype)
    if not np.allclose(got, expected, rtol=tol, atol=tol):
        bad = tuple(int(i) for i in np.argwhere(~np.isclose(got, expected, rtol=tol, atol=tol))[0])
        return f"values differ from PyTorch, e.g. dx{list(bad)} = {got[bad]:.6g}, PyTorch {expected[bad]:.6g}"
    return None


def show(a):
    return np.array2string(np.asarray(a), separator=",").replace("\n", "")


def main():
    # every case is a builder: each file gets fresh arrays (a file may change its inputs)
    builders = [(lambda k=k: (lambda t: (f"probe: {t[0]}",) + t[1:])(probes()[k])) for k in range(len(probes()))]
    n_random = int(sys.argv[1]) if len(sys.argv) > 1 else 330      # optional: number of random cases
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 12345        # optional: seed
    builders += [(lambda i=i: random_case(np.random.default_rng([seed, i]), i)) for i in range(n_random)]
    cases = [b() for b in builders]
    refs = [reference(d, x, p, s) for (_, x, d, p, s) in cases]

    manifest = {}
    mpath = os.path.join(HERE, "MANIFEST.json")
    if os.path.exists(mpath):
        manifest = {m["file"]: m for m in json.load(open(mpath))}

    print(f"{len(cases)} cases ({len(probes())} named probes + {len(cases) - len(probes())} random), "
          f"torch {torch.__version__}, numpy {np.__version__}\n")
    consistent = True
    for path in sorted(glob.glob(os.path.join(HERE, "r[0-9][0-9]_*.py"))):
        fname = os.path.basename(path)
        spec = importlib.util.spec_from_file_location(fname[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn = mod.max_pool_backward
        t0 = time.time()
        first, nfail, failed_probes = None, 0, []
        for build, (exp, edt) in zip(builders, refs):
            desc, x, d, p, s = build()
            problem = check(fn, d, x, p, s, exp, edt)
            if problem:
                nfail += 1
                if desc.startswith("probe: "):
                    failed_probes.append(desc[7:])
                if first is None:
                    _, x, d, _, _ = build()   # the arrays as given (the call may have changed them)
                    small = x.size <= 16
                    first = f"{desc}" + (f"\n      x={show(x)} d_output={show(d)}" if small else "") + f"\n      -> {problem}"
        status = "PASS" if nfail == 0 else "FAIL"
        marked = manifest.get(fname, {}).get("correct")
        agree = "" if marked is None else ("  [as marked]" if marked == (nfail == 0) else "  [!! MANIFEST DISAGREES]")
        if marked is not None and marked != (nfail == 0):
            consistent = False
        print(f"{fname}: {status} ({len(cases) - nfail}/{len(cases)} cases, {time.time() - t0:.1f}s){agree}")
        if first:
            print(f"    first failing case: {first}")
            print(f"    failing probes ({len(failed_probes)}/{len(probes())}): " + "; ".join(failed_probes))
    print("\nall files agree with MANIFEST.json" if consistent else "\nSOME FILES DISAGREE WITH MANIFEST.json")
    return 0 if consistent else 1


if __name__ == "__main__":
    sys.exit(main())
