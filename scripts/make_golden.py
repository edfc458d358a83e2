"""Write tests/data/golden_max_pool2d.npz: PyTorch's max_pool2d on random configurations.

Run with torch==2.13.0 (CPU) installed:  python scripts/make_golden.py
The test tests/test_reference_golden.py reads the file without torch.

Each case i stores, under keys "<i>/<name>":
  x       input (..., H, W): int64 with many ties, or float64 (some with NaN / -inf)
  d_out   upstream gradient (..., H_out, W_out), float64
  out     torch forward values, float64
  dx      torch gradient with respect to x, float64
  params  int64 [ph, pw, sh, sw, ceil_mode]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

CASES = 600
SEED = 20261121
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "tests" / "data" / "golden_max_pool2d.npz"


def random_case(rng: np.random.Generator) -> dict[str, np.ndarray]:
    leading = tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(0, 3)))
    pool = tuple(int(k) for k in rng.integers(1, 5, size=2))
    # strides smaller than, equal to and larger than the pool
    stride = tuple(int(max(1, k + d)) for k, d in zip(pool, rng.integers(-2, 3, size=2)))
    height, width = (int(k + rng.integers(0, 7)) for k in pool)
    ceil_mode = bool(rng.integers(0, 2))
    kind = rng.choice(["ties", "float", "special"], p=[0.45, 0.45, 0.10])
    shape = leading + (height, width)
    if kind == "ties":
        x = rng.integers(-2, 3, size=shape).astype(np.int64)
    else:
        x = rng.standard_normal(shape)
        if kind == "special":
            specials = rng.choice([np.nan, -np.inf, np.inf, 0.0], size=shape)
            x = np.where(rng.random(shape) < 0.3, specials, x)
    return {"x": x, "pool": pool, "stride": stride, "ceil_mode": ceil_mode}


def torch_max_pool2d(case, rng):
    x = torch.tensor(case["x"], dtype=torch.float64, requires_grad=True)
    batched = x.reshape((-1,) + tuple(x.shape[-2:]))  # max_pool2d wants (N, H, W)
    out = F.max_pool2d(batched, case["pool"], case["stride"], ceil_mode=case["ceil_mode"])
    out = out.reshape(tuple(x.shape[:-2]) + tuple(out.shape[-2:]))
    d_out = rng.standard_normal(tuple(out.shape)).round(3)
    out.backward(torch.tensor(d_out))
    return d_out, out.detach().numpy(), x.grad.numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_PATH)
    args = parser.parse_args()
    assert torch.__version__.split("+")[0] == "2.13.0", f"expected torch 2.13.0, got {torch.__version__}"
    rng = np.random.default_rng(SEED)
    arrays = {}
    for i in range(CASES):
        case = random_case(rng)
        d_out, out, dx = torch_max_pool2d(case, rng)
        arrays[f"{i}/x"] = case["x"]
        arrays[f"{i}/d_out"] = d_out
        arrays[f"{i}/out"] = out
        arrays[f"{i}/dx"] = dx
        arrays[f"{i}/params"] = np.array(case["pool"] + case["stride"] + (int(case["ceil_mode"]),),
                                         dtype=np.int64)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.output, torch_version=np.array(torch.__version__), **arrays)
    print(f"wrote {CASES} cases to {args.output} ({args.output.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
