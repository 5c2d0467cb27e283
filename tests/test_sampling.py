"""argmax / softmax / sample / uniform, exactly as vt.h documents them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyvt import ops

MASK64 = (1 << 64) - 1


def splitmix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def py_uniform(seed: int, step: int) -> float:
    r = splitmix64(seed ^ splitmix64((step + 0x9E3779B97F4A7C15) & MASK64))
    return (r >> 11) / 2.0 ** 53


def py_sample(logits, temperature, top_k, top_p, seed, step):
    """An independent transcription of vt_sample's documented algorithm."""
    x = np.asarray(logits, np.float32)
    if temperature == 0:
        return ops.argmax(x)
    k = min(top_k or 256, 256, len(x))
    idx = [i for i in range(len(x)) if not math.isnan(x[i])]
    idx.sort(key=lambda i: (-float(x[i]), i))
    cand = idx[:k]
    z = [float(x[i]) / temperature for i in cand]
    zmax = z[0]
    p = [math.exp(v - zmax) for v in z]
    s = sum(p)
    p = [v / s for v in p]
    keep, cum = len(p), 0.0
    for j, v in enumerate(p):
        cum += v
        if cum >= top_p:
            keep = j + 1
            break
    total = sum(p[:keep])
    target = py_uniform(seed, step) * total
    cum = 0.0
    for j in range(keep):
        cum += p[j]
        if target < cum:
            return cand[j]
    return cand[keep - 1]


# ---- argmax -----------------------------------------------------------------------------

def test_argmax_ties_nan_inf():
    assert ops.argmax(np.float32([1, 5, 5, 2])) == 1
    assert ops.argmax(np.float32([np.nan, 1, np.nan, 3, 3])) == 3
    assert ops.argmax(np.float32([np.nan, np.nan])) == 0
    assert ops.argmax(np.float32([-np.inf, -np.inf, -1])) == 2
    assert ops.argmax(np.float32([-np.inf, -np.inf])) == 0
    assert ops.argmax(np.float32([0, np.inf, np.inf])) == 1
    assert ops.argmax(np.float32([7])) == 0
    x = np.random.default_rng(0).standard_normal(32000).astype(np.float32)
    assert ops.argmax(x) == int(np.argmax(x))
    assert ops.argmax(x.astype(np.float16)) == int(np.argmax(x.astype(np.float16)))


# ---- softmax ----------------------------------------------------------------------------

def test_softmax_matches_float64_reference():
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32) * 5
    ref = np.exp(x.astype(np.float64) - x.max())
    ref /= ref.sum()
    y = ops.softmax(x)
    assert y.dtype == np.float32 and abs(float(y.sum(dtype=np.float64)) - 1) < 1e-6
    assert np.max(np.abs(y - ref) / ref) < 1e-6


def test_softmax_stable_and_special_values():
    y = ops.softmax(np.float32([1000, 1001, 1002]))
    assert np.isfinite(y).all() and np.allclose(y, [0.09003057, 0.24472847, 0.66524096], rtol=1e-6)
    y = ops.softmax(np.float32([0, -np.inf, np.nan, 0]))
    assert list(y) == [0.5, 0.0, 0.0, 0.5]
    assert list(ops.softmax(np.float32([-np.inf, -np.inf]))) == [0.5, 0.5]
    assert list(ops.softmax(np.float32([1, np.inf]))) == [0.0, 1.0]
    x = np.random.default_rng(2).standard_normal((3, 7)).astype(np.float32)
    y = ops.softmax(x)
    assert y.shape == (3, 7)
    for r in range(3):
        assert np.allclose(y[r], ops.softmax(x[r]))


# ---- the RNG ----------------------------------------------------------------------------

def test_uniform_pinned_values():
    # Pinned literals: any change here changes every seeded generation, on every backend.
    assert [ops.uniform(42, s) for s in range(4)] == [
        0.2713886128576649, 0.6632547443468528, 0.5655783169432714, 0.37566222627715606]
    assert ops.uniform(0, 0) == 0.28176129772258496
    # ... and they are the formula of vt.h, transcribed independently above.
    for seed, step in [(42, 0), (42, 3), (0, 0), (2 ** 64 - 1, 2 ** 64 - 1), (123456789, 987654321)]:
        assert ops.uniform(seed, step) == py_uniform(seed, step)
    assert splitmix64(0x9E3779B97F4A7C15) == 0xE220A8397B1DCDAF  # SplitMix64's first output, seed 0
    vals = np.array([ops.uniform(7, s) for s in range(20000)])
    assert vals.min() >= 0 and vals.max() < 1 and abs(vals.mean() - 0.5) < 0.01


# ---- sample -----------------------------------------------------------------------------

def test_greedy_is_argmax():
    x = np.random.default_rng(3).standard_normal(500).astype(np.float32)
    for s in range(5):
        assert ops.sample(x, temperature=0.0, seed=s, step=s) == int(np.argmax(x))


def test_matches_documented_algorithm():
    rng = np.random.default_rng(4)
    for trial in range(30):
        n = int(rng.integers(1, 600))
        x = (rng.standard_normal(n) * rng.uniform(0.5, 4)).astype(np.float32)
        if trial % 5 == 0:
            x[rng.integers(0, n, 3)] = np.nan
        x[rng.integers(0, n)] = x[rng.integers(0, n)]  # a tie
        t = float(rng.choice([0.3, 0.7, 1.0, 1.5]))
        k = [None, 1, 5, 40, 300][trial % 5]
        p = float(rng.choice([1.0, 0.9, 0.5, 0.05]))
        for step in range(5):
            got = ops.sample(x, temperature=t, top_k=k, top_p=p, seed=trial, step=step)
            assert got == py_sample(x, t, k, p, trial, step), (trial, step)


def test_seeded_reproducible_and_seeds_differ():
    x = np.random.default_rng(5).standard_normal(1000).astype(np.float32)
    a = [ops.sample(x, temperature=1.0, seed=7, step=s) for s in range(50)]
    b = [ops.sample(x, temperature=1.0, seed=7, step=s) for s in range(50)]
    c = [ops.sample(x, temperature=1.0, seed=8, step=s) for s in range(50)]
    assert a == b and a != c
    assert len(set(a)) > 10


def test_top_k_and_top_p_masks():
    x = np.float32([0.0, 3.0, 2.9, 2.8, -1.0, 2.7, 1.0])
    seen = {ops.sample(x, temperature=2.0, top_k=3, seed=1, step=s) for s in range(300)}
    assert seen == {1, 2, 3}
    # top_p: probabilities ~[.., 0.5, 0.3, 0.2]; top_p=0.5 keeps only the best
    lg = np.log(np.float32([0.5, 0.3, 0.2]))
    assert {ops.sample(lg, temperature=1.0, top_p=0.5, seed=3, step=s) for s in range(200)} == {0}
    assert {ops.sample(lg, temperature=1.0, top_p=0.75, seed=3, step=s) for s in range(300)} == {0, 1}
    assert {ops.sample(lg, temperature=1.0, top_p=1.0, seed=3, step=s) for s in range(300)} == {0, 1, 2}
    # NaN is never drawn, -inf never drawn
    y = np.float32([np.nan, 1.0, -np.inf, 1.0])
    assert {ops.sample(y, temperature=1.0, seed=0, step=s) for s in range(100)} == {1, 3}


def test_chi_square_of_draws():
    p = np.array([0.4, 0.25, 0.2, 0.1, 0.05])
    lg = np.log(p).astype(np.float32)
    n = 20000
    counts = np.bincount([ops.sample(lg, temperature=1.0, seed=123, step=s) for s in range(n)],
                         minlength=5)
    chi2 = float(np.sum((counts - n * p) ** 2 / (n * p)))
    assert chi2 < 18.47, (counts, chi2)  # 4 dof, p = 0.001; deterministic (fixed seed)
    # temperature flattens: at T=2 the draw follows softmax(log p / 2)
    q = np.sqrt(p) / np.sqrt(p).sum()
    counts = np.bincount([ops.sample(lg, temperature=2.0, seed=9, step=s) for s in range(n)],
                         minlength=5)
    assert float(np.sum((counts - n * q) ** 2 / (n * q))) < 18.47


@pytest.mark.parametrize("kw, match", [
    ({"temperature": -0.5}, "temperature"), ({"temperature": float("nan")}, "temperature"),
    ({"temperature": float("inf")}, "temperature"),
    ({"top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p"), ({"top_p": float("nan")}, "top_p"),
    ({"top_k": 0}, "top_k"), ({"top_k": -3}, "top_k"),
    ({"seed": -1}, "seed"), ({"step": -2}, "step"),
])
def test_invalid_options_name_the_field(kw, match):
    x = np.float32([1, 2, 3])
    with pytest.raises(ValueError, match=match) as e:
        ops.sample(x, **{"temperature": 1.0, **kw})
    assert repr(list(kw.values())[0]) in str(e.value)


def test_top_k_capped_at_256():
    x = np.arange(1000, dtype=np.float32) / 100.0
    draws = {ops.sample(x, temperature=100.0, top_k=5000, seed=2, step=s) for s in range(2000)}
    assert min(draws) >= 1000 - 256


def test_bad_logits():
    with pytest.raises(ValueError, match="empty"):
        ops.sample(np.float32([]), temperature=1.0)
    with pytest.raises(ValueError, match="1-D"):
        ops.argmax(np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match="dtype"):
        ops.argmax(np.zeros(3, np.int32))
