"""Check contract_mutants.py with PyTorch.

1. `correct` agrees with PyTorch's max_pool2d backward on many random inputs (all integer and
   floating dtypes of x and of d_output, 0..3 leading axes, size-1 axes, views / Fortran order /
   negative strides, negative, -inf, huge values, ties, int and pair pool/stride, floor and ceil
   grids), on every kind-specific input below, and on "plain" inputs.
2. Every mutant disagrees with PyTorch on at least one valid input of its stated kind.
3. Which mutants also disagree on plain inputs (float64 x, positive distinct values, 2-D,
   C-contiguous, int pool, stride None, floor grid, d_output in quarters).

Run: /tmp/mutants/venv/bin/python /tmp/mutants/verify.py
"""
import random
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

import contract_mutants as cm

torch.set_num_threads(1)
warnings.simplefilter("ignore")  # overflow of huge test values in casts is intended
np.seterr(all="ignore")
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
SIGNED = [np.int8, np.int16, np.int32, np.int64]
FLOATS = [np.float16, np.float32, np.float64]
ALL = INTS + FLOATS
MODES = ["distinct", "small", "negative", "very_negative", "neginf", "large", "equal", "normal"]
LAYOUTS = ["C", "F", "T", "step", "neg", "perm"]


# ---------------------------------------------------------------------------------------------
# PyTorch's answer
# ---------------------------------------------------------------------------------------------

def pair(v):
    return (int(v), int(v)) if isinstance(v, (int, np.integer)) else (int(v[0]), int(v[1]))


def out_size(size, pool, stride, ceil):
    """As the notebook's output_size (and PyTorch's pooling_output_shape, padding 0)."""
    if not ceil:
        return (size - pool) // stride + 1
    count = -(-(size - pool) // stride) + 1
    return count - 1 if (count - 1) * stride >= size else count


def expected_dtype(x):
    return x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)


def torch_dx(d, x, pool, stride):
    """dx from autograd through torch's max_pool2d, run on the ranks of x (order and ties kept
    exactly, whatever x's dtype), d_output in float64; cast to the dtype the rules ask for."""
    ph, pw = pair(pool)
    sh, sw = (ph, pw) if stride is None else pair(stride)
    H, W = x.shape[-2:]
    grid = d.shape[-2:]
    if grid == (out_size(H, ph, sh, False), out_size(W, pw, sw, False)):
        ceil = False
    elif grid == (out_size(H, ph, sh, True), out_size(W, pw, sw, True)):
        ceil = True
    else:
        raise ValueError(f"d_output grid {grid} is neither the floor nor the ceil grid")
    _, ranks = np.unique(np.asarray(x).reshape(-1), return_inverse=True)
    r = torch.tensor(ranks.reshape(-1, 1, H, W).astype(np.float64), requires_grad=True)
    out = F.max_pool2d(r, (ph, pw), (sh, sw), ceil_mode=ceil)
    assert tuple(out.shape[-2:]) == tuple(grid), (out.shape, grid)
    out.backward(torch.from_numpy(np.array(d, dtype=np.float64).reshape(out.shape)))
    return r.grad.numpy().reshape(x.shape).astype(expected_dtype(x)), ceil


def torch_native_dx(d, x, pool, stride, ceil):
    """torch on x's own floating dtype (a second opinion for floating x)."""
    ph, pw = pair(pool)
    sh, sw = (ph, pw) if stride is None else pair(stride)
    H, W = x.shape[-2:]
    t = torch.tensor(np.ascontiguousarray(x).reshape(-1, 1, H, W), requires_grad=True)
    out = F.max_pool2d(t, (ph, pw), (sh, sw), ceil_mode=ceil)
    out.backward(torch.tensor(np.array(d, dtype=x.dtype).reshape(out.shape)))
    return t.grad.numpy().reshape(x.shape)


TOL = {np.dtype(np.float16): 4e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-12}


def compare(res, exp, d):
    if not isinstance(res, np.ndarray):
        return f"returns {type(res).__name__}, not an ndarray"
    if res.shape != exp.shape:
        return f"shape {res.shape}, expected {exp.shape}"
    if res.dtype != exp.dtype:
        return f"dtype {res.dtype}, expected {exp.dtype}"
    a, b = res.astype(np.float64), exp.astype(np.float64)
    tol = TOL[exp.dtype]
    scale = max(1.0, float(np.abs(b[np.isfinite(b)]).max(initial=0)), float(np.abs(np.asarray(d, float)).max(initial=0)))
    if not np.allclose(a, b, rtol=tol, atol=tol * scale):
        return f"values differ (max |diff| {np.nanmax(np.abs(a - b)):.3g})"
    return None


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

def x_values(rng, shape, dtype, mode):
    n = int(np.prod(shape))
    perm = rng.permutation(n)
    dtype = np.dtype(dtype)
    py = random.Random(int(rng.integers(1 << 30)))
    if dtype.kind in "iu":
        lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
        if mode == "distinct":
            start = py.randint(lo, max(lo, hi - n))
            vals = [min(hi, start + int(p)) for p in perm]
        elif mode == "small":
            vals = [int(v) + (0 if dtype.kind == "i" else 3) for v in rng.integers(-3, 4, n)]
        elif mode == "negative" and dtype.kind == "i":
            vals = [max(lo, -1 - int(p) - py.randint(0, 50)) for p in perm]
        elif mode in ("very_negative", "neginf", "negative"):
            vals = [min(hi, lo + int(p)) for p in perm]        # holds the dtype's minimum
        elif mode == "large":
            vals = [max(lo, hi - int(p)) for p in perm]        # near the maximum, 1 apart
        elif mode == "equal":
            vals = [py.randint(lo, hi)] * n
        else:
            vals = [py.randint(lo, hi) for _ in range(n)]
        return np.array(vals, dtype=object).astype(dtype).reshape(shape)
    big = float(np.finfo(dtype).max)
    if mode == "distinct":
        v = perm * 0.5 + 1.0
    elif mode == "small":
        v = rng.integers(-3, 4, n).astype(float)
        v[(v == 0) & (rng.random(n) < 0.5)] = -0.0
    elif mode == "negative":
        v = -(perm + 1.0) * 0.75
    elif mode == "very_negative":
        v = -(perm + 1.0) * (1e30 if dtype.itemsize > 2 else 10.0) - (0 if dtype.itemsize > 2 else 30000.0)
    elif mode == "neginf":
        v = rng.standard_normal(n) * 10
        v[rng.random(n) < 0.35] = -np.inf
    elif mode == "large":
        v = big / 4 * (1 + rng.random(n)) * rng.choice([-1, 1], n)
    elif mode == "equal":
        v = np.full(n, rng.choice([-np.inf, -2.5, 0.0, 7.0]))
    else:
        v = rng.standard_normal(n) * 10
    v = np.where(np.isfinite(v), np.clip(v, -big, big), v)   # keep -inf
    return v.astype(dtype).reshape(shape)


def d_values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        v = rng.standard_normal(shape) if rng.random() < 0.7 else rng.integers(-8, 9, shape) / 4
        return v.astype(dtype)
    if dtype.kind == "i":
        hi = 2 ** 40 if dtype.itemsize == 8 and rng.random() < 0.2 else 10
        return rng.integers(-hi, hi, shape).astype(dtype)
    return rng.integers(0, 10, shape).astype(dtype)


def with_layout(rng, a, layout):
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "T":
        return np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2)
    if layout == "step":
        H, W = a.shape[-2:]
        big = np.zeros(a.shape[:-2] + (2 * H + 1, 3 * W + 1), dtype=a.dtype)
        o = int(rng.integers(0, 2))
        big[..., o:o + 2 * H:2, 1:1 + 3 * W:3] = a
        return big[..., o:o + 2 * H:2, 1:1 + 3 * W:3]
    if layout == "neg":
        axes = tuple(ax for ax in range(a.ndim) if rng.random() < 0.6) or (a.ndim - 1,)
        return np.flip(np.ascontiguousarray(np.flip(a, axes)), axes)
    if layout == "perm" and a.ndim >= 3:
        p = rng.permutation(a.ndim)
        return np.ascontiguousarray(a.transpose(p)).transpose(np.argsort(p))
    return a.copy()


def random_case(seed, x_dtypes=ALL, d_dtypes=ALL, leads=(0, 1, 2, 3), modes=MODES, pools=("int", "pair"),
                strides=("none", "int", "pair"), grids=("floor", "ceil"), x_layouts=LAYOUTS,
                d_layouts=LAYOUTS, require=None):
    """A valid input (d_output, x, pool_size, stride), and a dict describing it."""
    rng = np.random.default_rng(seed)
    for _ in range(10000):
        lead = tuple(int(rng.choice([1, 2, 3])) for _ in range(int(rng.choice(leads))))
        ph = int(rng.integers(1, 5))
        form = rng.choice(pools)
        pw = ph if form == "int" else int(rng.integers(1, 5))
        pool = ph if form == "int" else (ph, pw)
        sform = rng.choice(strides)
        if sform == "none":
            sh, sw, stride = ph, pw, None
        elif sform == "int":
            sh = sw = int(rng.integers(1, 6))
            stride = sh
        else:
            sh, sw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
            stride = (sh, sw)
        H, W = int(rng.integers(1, 11)), int(rng.integers(1, 11))
        ceil = rng.choice(grids) == "ceil"
        Ho, Wo = out_size(H, ph, sh, ceil), out_size(W, pw, sw, ceil)
        if Ho < 1 or Wo < 1:
            continue
        xd, dd, mode = np.dtype(rng.choice(x_dtypes)), np.dtype(rng.choice(d_dtypes)), rng.choice(modes)
        x = with_layout(rng, x_values(rng, lead + (H, W), xd, mode), rng.choice(x_layouts))
        d = with_layout(rng, d_values(rng, lead + (Ho, Wo), dd), rng.choice(d_layouts))
        meta = dict(lead=lead, H=H, W=W, ph=ph, pw=pw, sh=sh, sw=sw, Ho=Ho, Wo=Wo, ceil=ceil, mode=mode,
                    sticks_out=(Ho - 1) * sh + ph > H or (Wo - 1) * sw + pw > W,
                    extra=(Ho, Wo) != (out_size(H, ph, sh, False), out_size(W, pw, sw, False)))
        if require is None or require(d, x, meta):
            return (d, x, pool, stride), meta
    raise RuntimeError("no case satisfies the requirement")


def one(seed, **opts):
    return lambda: iter([random_case(seed, **opts)[0]])


def fixed(d, x, pool, stride=None):
    d, x = np.array(d), np.array(x)
    return lambda: iter([(d.copy(), x.copy(), pool, stride)])


def plain_scenarios():
    out = []
    for s, (H, W, p) in enumerate([(4, 4, 2), (6, 6, 3), (5, 7, 2), (6, 9, 3), (8, 6, 2), (7, 7, 3),
                                   (9, 4, 2), (3, 3, 3), (10, 10, 2), (9, 9, 3), (2, 2, 2), (4, 8, 4)]):
        rng = np.random.default_rng(1000 + s)
        x = rng.permutation(H * W).reshape(H, W) + 1.0
        d = rng.integers(-8, 9, ((H - p) // p + 1, (W - p) // p + 1)) / 4
        out.append(fixed(d, x, p))
    return out


# ---------------------------------------------------------------------------------------------
# Kinds: inputs of each mutant's stated kind
# ---------------------------------------------------------------------------------------------

def rand(n, base, **opts):
    return [one(base + i, **opts) for i in range(n)]


def flo(d, x, m):
    return np.issubdtype(x.dtype, np.floating)


def stride_ne_pool(d, x, m):
    return (m["sh"], m["sw"]) != (m["ph"], m["pw"])


def two_same_shape(seed, same_values=False, in_place=False, **opts):
    """Two calls on x of one shape: new values (or the same), or the same array changed in place."""
    def scenario():
        (d, x, pool, stride), _ = random_case(seed, **opts)
        other = np.random.default_rng(seed).permutation(x.reshape(-1)).reshape(x.shape)
        yield d, x, pool, stride
        if in_place:
            x[...] = other
            yield d, x, pool, stride
        else:
            (d2, x2, _, _), _ = random_case(seed, **opts)
            yield d2, (x2 if same_values else other), pool, stride
    return scenario


N = 40
DISTINCT = dict(modes=["distinct"])
KINDS = {
    "shape_squeeze": rand(N, 1, require=lambda d, x, m: 1 in x.shape),
    "shape_moveaxis_not_restored": rand(N, 2, leads=(1, 2, 3)),
    "shape_padded_not_cropped": rand(N, 3, grids=["ceil"], require=lambda d, x, m: m["sticks_out"]),
    "dtype_from_d_output": rand(N, 4, require=lambda d, x, m: d.dtype != expected_dtype(x)),
    "dtype_zeros_like": rand(N, 5, x_dtypes=INTS, d_dtypes=FLOATS),
    "dtype_always_float64": rand(N, 6, x_dtypes=[np.float16, np.float32]),
    "dtype_result_type": rand(N // 2, 7, x_dtypes=[np.float32], d_dtypes=[np.float64])
    + rand(N // 2, 8, x_dtypes=INTS, d_dtypes=INTS),
    "dtype_float16_promoted": rand(N, 9, x_dtypes=[np.float16]),
    "dtype_float32_accumulator": rand(N, 10, x_dtypes=[np.float64], d_dtypes=[np.float64]),
    "unchanged_dx_is_x": rand(N, 11, x_dtypes=FLOATS),
    "unchanged_d_output_consumed": rand(N, 12, d_layouts=["C"]),
    "unchanged_shift_x_in_place": rand(N, 13, x_dtypes=SIGNED + FLOATS, modes=["negative", "normal"],
                                       require=lambda d, x, m: x.min() < 0),
    "unchanged_nan_to_num_in_place": rand(N, 14, x_dtypes=FLOATS, modes=["neginf"],
                                          require=lambda d, x, m: np.isneginf(x).any()),
    "forms_int_pool_only": rand(N, 15, pools=["pair"]),
    "forms_pair_stride_only": rand(N, 16, strides=["int"]),
    "forms_width_height": rand(N, 17, pools=["pair"], require=lambda d, x, m: m["ph"] != m["pw"]),
    "forms_stride_first_only": rand(N, 18, strides=["pair"], require=lambda d, x, m: m["sh"] != m["sw"]),
    "stride_none_or_1": rand(N, 19, strides=["none"], require=lambda d, x, m: max(m["ph"], m["pw"]) > 1),
    "stride_none_square": rand(N, 20, strides=["none"], pools=["pair"], require=lambda d, x, m: m["ph"] != m["pw"]),
    "leading_at_most_one": rand(N, 21, leads=(2, 3)),
    "leading_global_argmax": rand(N, 22, leads=(1, 2, 3), require=lambda d, x, m: np.prod(m["lead"]) > 1, **DISTINCT),
    "leading_d_output_kl": rand(N, 23, leads=(1, 2, 3)),
    "layout_as_strided": rand(N, 24, x_layouts=["F", "T"], grids=["floor"],
                              require=lambda d, x, m: not x.flags.c_contiguous),
    "layout_d_output_ravel_k": rand(N, 25, d_layouts=["F", "T"], require=lambda d, x, m: not d.flags.c_contiguous),
    "windows_end_at_next_start": rand(N, 26, strides=["int", "pair"], require=stride_ne_pool),
    "windows_start_k_times_pool": rand(N, 27, strides=["int", "pair"], require=stride_ne_pool),
    "windows_cols_use_row_stride": rand(N, 28, strides=["pair"], require=lambda d, x, m: m["sh"] != m["sw"]),
    "windows_stride_capped_at_pool": rand(N, 29, strides=["int", "pair"],
                                          require=lambda d, x, m: m["sh"] > m["ph"] or m["sw"] > m["pw"]),
    "clipped_dropped": rand(N, 30, grids=["ceil"], require=lambda d, x, m: m["extra"]),
    "clipped_zero_padding": rand(N, 31, grids=["ceil"], x_dtypes=SIGNED + FLOATS, modes=["negative", "very_negative"],
                                 require=lambda d, x, m: m["sticks_out"]),
    "clipped_shifted_inside": rand(N, 32, grids=["ceil"], require=lambda d, x, m: m["extra"]),
    "negative_running_max_zero": rand(N, 33, x_dtypes=SIGNED + FLOATS, modes=["negative", "very_negative"]),
    "negative_running_max_minus_1e9": rand(N, 34, x_dtypes=[np.float32, np.float64], modes=["very_negative", "neginf"]),
    "negative_shift_copy": rand(N, 35, x_dtypes=FLOATS, modes=["neginf"],
                                require=lambda d, x, m: np.isneginf(x).any() and np.isfinite(x).any()),
    "integer_float32_cast": rand(N, 36, x_dtypes=[np.int32, np.int64, np.uint32, np.uint64], modes=["large"]),
    "integer_float64_cast": rand(N, 37, x_dtypes=[np.int64, np.uint64], modes=["large"]),
    "integer_pad_minus_inf": rand(N, 38, x_dtypes=INTS, grids=["ceil"], require=lambda d, x, m: m["sticks_out"]),
    "integer_pad_min_minus_one": rand(N, 39, x_dtypes=INTS, modes=["very_negative"], grids=["ceil"],
                                      require=lambda d, x, m: m["sticks_out"] and x.min() == np.iinfo(x.dtype).min),
    "integer_truncates_fractions": rand(N, 40, x_dtypes=INTS, d_dtypes=FLOATS),
    "ties_last_maximum": rand(N, 41, modes=["small", "equal"]),
    "ties_all_maxima": rand(N, 42, modes=["small", "equal"]),
    "ties_split_evenly": rand(N, 43, modes=["small", "equal"]),
    "ties_column_major": rand(N, 44, modes=["small", "equal"], require=lambda d, x, m: m["ph"] > 1 and m["pw"] > 1),
    "overlap_assign": rand(N, 45, require=lambda d, x, m: m["sh"] < m["ph"] or m["sw"] < m["pw"]),
    "overlap_fancy_index_add": rand(N, 46, require=lambda d, x, m: m["sh"] < m["ph"] or m["sw"] < m["pw"]),
    "state_cache_by_shape": [two_same_shape(47 + i) for i in range(N)],
    "state_reused_buffer": [two_same_shape(97 + i, same_values=True) for i in range(N)],
    "state_cache_by_id": [two_same_shape(147 + i, in_place=True) for i in range(N)],
}
# Hand-made cases on top: the forum example (integer x, ceil grid), a tie, an overlap.
FORUM = fixed([[1, -2], [3, 4]], [[2, -3, 5], [-1, 4, -6], [7, 0, -2]], 2)
KINDS["integer_pad_minus_inf"].append(FORUM)
KINDS["clipped_dropped"].append(FORUM)
KINDS["ties_column_major"].append(fixed([[1.0]], [[1.0, 5.0], [5.0, 2.0]], 2))
KINDS["overlap_assign"].append(fixed([[1.0, 2.0]], [[1.0, 9.0, 2.0]], (1, 2), 1))
KINDS["integer_float32_cast"].append(fixed([[1.0]], np.array([[2 ** 24, 2 ** 24 + 1]], np.int32), (1, 2)))
KINDS["integer_float64_cast"].append(fixed([[1.0]], np.array([[2 ** 53, 2 ** 53 + 1]], np.int64), (1, 2)))


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------

def snapshot(a):
    return a.shape, a.dtype, a.copy()


def changed(a, snap):
    shape, dtype, copy = snap
    return a.shape != shape or a.dtype != dtype or not np.array_equal(a, copy, equal_nan=a.dtype.kind == "f")


def run(fn, scenario, native=False):
    """None if fn agrees with PyTorch on every call of the scenario, else the first problem."""
    for d, x, pool, stride in scenario():
        exp, ceil = torch_dx(d, x, pool, stride)
        snaps = snapshot(d), snapshot(x)
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                res = fn(d, x, pool, stride)
        except Exception as error:  # noqa: BLE001
            return f"raises {type(error).__name__}: {str(error)[:60]}"
        if changed(d, snaps[0]) or changed(x, snaps[1]):
            return "changes an input"
        problem = compare(res, exp, d)
        if problem:
            return problem
        if native and np.issubdtype(x.dtype, np.floating):
            nat = torch_native_dx(d, x, pool, stride, ceil)
            if compare(nat.astype(res.dtype), res, d) and x.dtype != np.float16:
                return "differs from torch on x's own dtype"
    return None


def main():
    failures = 0
    # 1. correct: random general inputs, every kind's inputs, plain inputs.
    general = [one(10_000 + i) for i in range(3000)]
    kind_inputs = [s for lst in KINDS.values() for s in lst]
    plain = plain_scenarios()
    for label, scenarios in [("random", general), ("kind", kind_inputs), ("plain", plain)]:
        bad = [(i, p) for i, s in enumerate(scenarios) if (p := run(cm.correct, s, native=True))]
        print(f"correct vs torch on {len(scenarios)} {label} inputs: {len(scenarios) - len(bad)} agree")
        for i, p in bad[:5]:
            print(f"   input {i}: {p}")
        failures += len(bad)
    # 2./3. mutants.
    names = [m["name"] for m in cm.MUTANTS]
    assert len(set(names)) == len(names) and set(names) == set(KINDS), set(names) ^ set(KINDS)
    per_rule, fail_plain = {}, []
    for m in cm.MUTANTS:
        plain_problem = next((p for s in plain if (p := run(m["function"], s))), None)
        results = [run(m["function"], s) for s in KINDS[m["name"]]]
        caught = [p for p in results if p]
        per_rule[m["rule"]] = per_rule.get(m["rule"], 0) + 1
        if plain_problem:
            fail_plain.append(m["name"])
        status = "ok  " if caught else "MISS"
        failures += not caught
        print(f"{status} {m['rule']:12} {m['name']:32} fails {len(caught):2}/{len(results)} of its kind"
              f" ({caught[0] if caught else '-'}); plain: {'FAILS (' + plain_problem + ')' if plain_problem else 'agrees'}")
    print(f"{len(cm.MUTANTS)} mutants; per rule: {per_rule}")
    print(f"also fail on plain inputs: {fail_plain}")
    print("RESULT:", "all checks passed" if failures == 0 else f"{failures} problems")
    return failures


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
