#!/usr/bin/env python3
"""Independent reference values for tests/analysis/stats_test.cpp (Python standard library only; no
scipy on the machine where these were computed). Written from the textbook formulas, not from
analysis/stats.cpp, and by other algorithms where there is one: brute-force enumeration instead of
the dynamic programme for exact Mann-Whitney, all splits for the permutation test, a 2x2 solve for
the log-rank quadratic form. Run: python3 tests/analysis/stats_reference.py"""
import itertools, math
from statistics import NormalDist

Z = NormalDist().inv_cdf(0.975)

def km(obs):
    times = sorted({t for t, e in obs if e})
    s, gw, out = 1.0, 0.0, []
    for t in times:
        n = sum(1 for u, _ in obs if u >= t)
        d = sum(1 for u, e in obs if u == t and e)
        s *= 1 - d / n
        if n > d:
            gw += d / (n * (n - d))
            sig = math.sqrt(gw) / abs(math.log(s))
            lo, hi = s ** math.exp(Z * sig), s ** math.exp(-Z * sig)
            se = s * math.sqrt(gw)
        else:
            s, se, lo, hi = 0.0, 0.0, 0.0, 0.0
        out.append((t, n, d, s, se, lo, hi))
    first = lambda k: next((r[0] for r in out if r[k] <= 0.5 + 1e-12), None)
    return out, (first(3), first(5), first(6))  # median, its lower and upper limits

def chi2_sf(x, df):  # upper tail for df 1 and 2
    if df == 1: return math.erfc(math.sqrt(x / 2))
    if df == 2: return math.exp(-x / 2)
    raise ValueError(df)

def logrank(groups):
    k = len(groups)
    pooled = [(t, e, g) for g, obs in enumerate(groups) for t, e in obs]
    O, E = [0.0] * k, [0.0] * k
    V = [[0.0] * k for _ in range(k)]
    for t in sorted({t for t, e, g in pooled if e}):
        nj = [sum(1 for u, _, h in pooled if u >= t and h == g) for g in range(k)]
        dj = [sum(1 for u, e, h in pooled if u == t and e and h == g) for g in range(k)]
        n, d = sum(nj), sum(dj)
        for g in range(k):
            O[g] += dj[g]; E[g] += d * nj[g] / n
            for h in range(k):
                if n > 1: V[g][h] += d * (n - d) / (n - 1) * nj[g] / n * ((g == h) - nj[h] / n)
    U = [o - e for o, e in zip(O, E)]
    if k == 2: chi2 = U[0] ** 2 / V[0][0]
    else:  # k == 3: drop the last group, solve the 2x2 system by Cramer's rule
        a, b, c, dd = V[0][0], V[0][1], V[1][0], V[1][1]
        det = a * dd - b * c
        x0, x1 = (U[0] * dd - b * U[1]) / det, (a * U[1] - c * U[0]) / det
        chi2 = U[0] * x0 + U[1] * x1
    return chi2, chi2_sf(chi2, k - 1), O, E

def mw_exact(x, y):  # all C(n1+n2, n1) assignments of ranks to x
    n1, pooled = len(x), sorted(x + y)
    u_obs = sum(1 for a in x for b in y if a > b)
    us = [sum(r for r in c) - n1 * (n1 - 1) // 2 for c in itertools.combinations(range(len(pooled)), n1)]
    le = sum(1 for u in us if u <= u_obs); ge = sum(1 for u in us if u >= u_obs)
    return u_obs, min(1.0, 2 * min(le, ge) / len(us))

def mw_normal(x, y):
    pooled = sorted(x + y); n1, n2 = len(x), len(y); n = n1 + n2
    rank = {v: (pooled.index(v) + 1 + len(pooled) - pooled[::-1].index(v)) / 2 for v in pooled}
    u = sum(rank[v] for v in x) - n1 * (n1 + 1) / 2
    ties = sum(pooled.count(v) ** 3 - pooled.count(v) for v in set(pooled))
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    z = max(0.0, abs(u - n1 * n2 / 2) - 0.5) / sd
    return u, z, 2 * (1 - NormalDist().cdf(z))

def median(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2

def perm_exact(x, y, loc):
    pooled, n1 = x + y, len(x)
    obs = loc(x) - loc(y)
    b = m = 0
    for c in itertools.combinations(range(len(pooled)), n1):
        a = [pooled[i] for i in c]; r = [pooled[i] for i in range(len(pooled)) if i not in c]
        b += abs(loc(a) - loc(r)) >= abs(obs) - 1e-12 * max(map(abs, pooled)); m += 1
    return obs, b, m

def ols(x, y):
    n = len(x); mx, my = sum(x) / n, sum(y) / n
    sxx = sum((a - mx) ** 2 for a in x); sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    syy = sum((b - my) ** 2 for b in y)
    b = sxy / sxx; a = my - b * mx
    res = sum((yy - a - b * xx) ** 2 for xx, yy in zip(x, y))
    return a, b, 1 - res / syy, math.sqrt(res / (n - 2) / sxx), math.sqrt(res / (n - 2) * (1 / n + mx * mx / sxx))

MASK = (1 << 64) - 1
def mt19937_64(seed):  # the engine as specified in [rand.predef] / Matsumoto & Nishimura
    mt = [seed & MASK]
    for i in range(1, 312): mt.append((6364136223846793005 * (mt[-1] ^ (mt[-1] >> 62)) + i) & MASK)
    i = 312
    while True:
        if i >= 312:
            for j in range(312):
                x = (mt[j] & 0xFFFFFFFF80000000) | (mt[(j + 1) % 312] & 0x7FFFFFFF)
                xa = x >> 1
                if x & 1: xa ^= 0xB5026F5AA96619E9
                mt[j] = mt[(j + 156) % 312] ^ xa
            i = 0
        y = mt[i]; i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        yield y

def uniform_below(gen, n):
    threshold = (1 << 64) % n
    while True:
        r = next(gen)
        if r >= threshold: return r % n

def quantile7(s, q):
    h = (len(s) - 1) * q; lo = math.floor(h)
    return s[-1] if lo + 1 >= len(s) else s[lo] + (h - lo) * (s[lo + 1] - s[lo])

def bootstrap(x, y, B, seed, level=0.95):  # draws: per resample, n1 indices into x, then n2 into y
    g = mt19937_64(seed); est = median(x) - median(y)
    st = sorted(median([x[uniform_below(g, len(x))] for _ in x]) - median([y[uniform_below(g, len(y))] for _ in y])
                for _ in range(B))
    a = (1 - level) / 2
    share = (sum(v < est for v in st) + sum(v <= est for v in st)) / (2 * B)
    num = den = 0.0
    for k, v in enumerate((x, y)):
        th = [(median(v[:i] + v[i + 1:]) - median(y)) if k == 0 else (median(x) - median(v[:i] + v[i + 1:]))
              for i in range(len(v))]
        mean = sum(th) / len(th); n = len(v)
        num += sum(((n - 1) * (mean - t)) ** 3 for t in th) / n ** 3
        den += sum(((n - 1) * (mean - t)) ** 2 for t in th) / n ** 2
    acc = num / (6 * den ** 1.5)
    z0 = NormalDist().inv_cdf(share)
    adj = lambda q: NormalDist().cdf(z0 + (z0 + NormalDist().inv_cdf(q)) / (1 - acc * (z0 + NormalDist().inv_cdf(q))))
    return est, quantile7(st, a), quantile7(st, 1 - a), quantile7(st, adj(a)), quantile7(st, adj(1 - a)), z0, acc

def perm_random(x, y, loc, m, seed):  # Fisher-Yates on the first n1 places, carried from split to split
    g = mt19937_64(seed); v = x + y; n1 = len(x); n = len(v)
    obs = loc(x) - loc(y); bar = abs(obs) - 1e-12 * max(map(abs, v)); b = 0
    for _ in range(m):
        for i in range(n1):
            j = i + uniform_below(g, n - i); v[i], v[j] = v[j], v[i]
        b += abs(loc(v[:n1]) - loc(v[n1:])) >= bar
    return obs, b, (b + 1) / (m + 1)

if __name__ == "__main__":
    mp = [(6, 1)] * 3 + [(6, 0), (7, 1), (9, 0), (10, 1), (10, 0), (11, 0), (13, 1), (16, 1), (17, 0), (19, 0),
          (20, 0), (22, 1), (23, 1), (25, 0), (32, 0), (32, 0), (34, 0), (35, 0)]
    placebo = [(t, 1) for t in [1, 1, 2, 2, 3, 4, 4, 5, 5, 8, 8, 8, 8, 11, 11, 12, 12, 15, 17, 22, 23]]
    for name, g in (("6-MP", mp), ("placebo", placebo)):
        steps, med = km(g)
        print(name, "median, lower, upper:", med)
        for r in steps: print("  t=%g n=%d d=%d S=%.6f se=%.6f band=[%.6f, %.6f]" % r)
    chi2, p, O, E = logrank([mp, placebo])
    print("log-rank 6-MP vs placebo: chi2=%.10f p=%.6e O=%s E=%s" % (chi2, p, O, E))
    # Three groups: the placebo arm split at its 11th observation (a made-up third group).
    chi2, p, O, E = logrank([mp, placebo[:11], placebo[11:]])
    print("log-rank 3 groups: chi2=%.10f p=%.10e O=%s E=%s" % (chi2, p, O, E))
    x, y = [1.1, 2.3, 3.7, 5.2, 8.9], [0.4, 0.9, 1.5, 2.0, 2.6, 3.1]
    print("mann-whitney exact", x, y, mw_exact(x, y))
    xs, ys = [3, 5, 5, 7, 9, 9, 9, 12], [1, 2, 5, 6, 6, 8]
    print("mann-whitney normal", xs, ys, mw_normal(xs, ys))
    px, py = [12.0, 15.0, 9.0, 20.0, 17.0], [8.0, 10.0, 7.0, 11.0, 6.0, 9.5]
    for loc, name in ((median, "median"), (lambda v: sum(v) / len(v), "mean")):
        obs, b, m = perm_exact(px, py, loc)
        print("permutation", name, "observed=%.10g b=%d m=%d p=%.10g" % (obs, b, m, b / m))
    ax = [10, 8, 13, 9, 11, 14, 6, 4, 12, 7, 5]
    ay = [8.04, 6.95, 7.58, 8.81, 8.33, 9.96, 7.24, 4.26, 10.84, 4.82, 5.68]
    print("anscombe I: a=%.10f b=%.10f r2=%.10f se_b=%.10f se_a=%.10f" % ols(ax, ay))
    g = mt19937_64(5489)
    for _ in range(9999): next(g)
    print("mt19937_64 10000th from default seed:", next(g), "(the standard says 9981545732273789042)")
    g = mt19937_64(42)
    print("uniform_below(mt19937_64(42), n) for n = 1, 2, 3, 10, 1000, 2^63+1, 6:",
          [uniform_below(g, n) for n in (1, 2, 3, 10, 1000, (1 << 63) + 1, 6)])
    bx = [4.2, 5.1, 3.3, 6.8, 5.5, 4.9, 7.2, 5.0, 6.1]
    by = [3.1, 2.8, 4.0, 3.6, 2.2, 3.9, 4.4, 3.0]
    print("bootstrap B=2000 seed=7: est=%.10g pct=[%.10g, %.10g] bca=[%.10g, %.10g] z0=%.10g a=%.10g" % bootstrap(bx, by, 2000, 7))
    rx = [float(v) for v in (11, 14, 9, 17, 12, 15, 10, 13, 16, 18, 12.5, 14.5, 9.5, 19, 11.5)]
    ry = [float(v) for v in (10, 8, 12, 9, 7, 11, 13, 6, 10.5, 8.5, 9.25, 7.5, 12.25, 5, 14)]
    print("permutation random median m=999 seed=3: observed=%.10g b=%d p=%.10g" % perm_random(rx, ry, median, 999, 3))

# ---- Paired comparisons (stats_test.cpp: Wilcoxon*, PairedPermutation*, TInterval*) ----
def signed_ranks(d):
    nz = sorted((abs(x), x > 0) for x in d if x != 0)
    ranks, i = [], 0
    while i < len(nz):
        j = i
        while j < len(nz) and nz[j][0] == nz[i][0]: j += 1
        ranks += [((i + j + 1) / 2, nz[k][1]) for k in range(i, j)]
        i = j
    return ranks

def wilcoxon_brute(d):  # exact: every sign assignment of the (untied) ranks
    r = signed_ranks(d)
    w = sum(k for k, pos in r if pos)
    sums = [sum(k for k, s in zip([k for k, _ in r], signs) if s) for signs in itertools.product([0, 1], repeat=len(r))]
    le = sum(1 for s in sums if s <= w + 1e-9) / len(sums)
    ge = sum(1 for s in sums if s >= w - 1e-9) / len(sums)
    return w, min(1.0, 2 * min(le, ge))

def wilcoxon_normal(d):
    r = signed_ranks(d)
    n = len(r)
    w = sum(k for k, pos in r if pos)
    from collections import Counter
    ties = sum(t ** 3 - t for t in Counter(abs(x) for x in d if x != 0).values())
    var = n * (n + 1) * (2 * n + 1) / 24 - ties / 48
    z = max(0.0, abs(w - n * (n + 1) / 4) - 0.5) / math.sqrt(var)
    return w, z, 2 * (1 - NormalDist().cdf(z))

def sign_flip_brute(d, stat):
    obs = stat(d)
    vals = [stat([x if s else -x for x, s in zip(d, signs)]) for signs in itertools.product([0, 1], repeat=len(d))]
    return obs, sum(1 for v in vals if abs(v) >= abs(obs) - 1e-12 * max(abs(x) for x in d)) / len(vals)

if __name__ == "__main__":
    x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
    y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
    print("wilcoxon hollander-wolfe", wilcoxon_brute([a - b for a, b in zip(x, y)]))
    print("wilcoxon ties normal", wilcoxon_normal([1, -1, 2, 2, 3, -3, 4, 5, 0, 6, -0.5, 7]))
    mean = lambda v: sum(v) / len(v)
    print("sign flip mean", sign_flip_brute([0.3, -0.1, 0.4, 0.2, 0.5, -0.2, 0.6], mean))
