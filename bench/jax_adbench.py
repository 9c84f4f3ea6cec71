"""The ADBench objectives and derivatives in JAX (CPU, float64, jit), for bench/compare.

usage: python jax_adbench.py KIND FILE MIN_RUNS MIN_SECS
KIND: gmm | gmm-np | ba-rev | ba-fwd | lstm | hand (gmm-np: the same JAX objective
as gmm, timed against linad's NumPy-style one)
Prints one JSON line: median seconds of the jitted primal and derivative
(compilation excluded, timed separately), and the derivative's checksum.
"""
import json
import math
import os
import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402


def numbers(path):
    with open(path) as f:
        return np.array(f.read().split(), dtype=np.float64)


# ---------------------------------------------------------------- GMM (FORMATS.md §1)

def gmm(path):
    t = numbers(path)
    d, k, n = int(t[0]), int(t[1]), int(t[2])
    tri = d * (d + 1) // 2
    pos = 3
    alphas = t[pos:pos + k]; pos += k
    means = t[pos:pos + k * d].reshape(k, d); pos += k * d
    icf = t[pos:pos + k * tri].reshape(k, tri); pos += k * tri
    x = jnp.asarray(t[pos:pos + n * d].reshape(n, d)); pos += n * d
    gamma, m = t[pos], int(t[pos + 1])
    # strictly-lower entries stored column by column
    lr = np.array([r for c in range(d) for r in range(c + 1, d)], dtype=np.int64)
    lc = np.array([c for c in range(d) for r in range(c + 1, d)], dtype=np.int64)
    nprime = d + m + 1
    lngamma_d = 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        math.lgamma(0.5 * nprime + 0.5 * (1 - s)) for s in range(1, d + 1))
    log_c = nprime * d * (math.log(gamma) - 0.5 * math.log(2.0)) - lngamma_d
    const = -0.5 * n * d * math.log(2.0 * math.pi) - k * log_c

    def objective(alphas, means, icf):
        q = icf[:, :d]
        l = icf[:, d:]
        Q = jnp.zeros((k, d, d)).at[:, lr, lc].set(l) + jnp.exp(q)[:, :, None] * jnp.eye(d)
        xc = x[:, None, :] - means[None, :, :]                     # n k d
        z = jnp.einsum("krc,nkc->nkr", Q, xc)
        beta = alphas + jnp.sum(q, axis=1) - 0.5 * jnp.sum(z * z, axis=2)
        lse = jax.scipy.special.logsumexp
        prior = jnp.sum(0.5 * gamma * gamma * (jnp.sum(jnp.exp(2 * q), axis=1) + jnp.sum(l * l, axis=1))
                        - m * jnp.sum(q, axis=1))
        return const + jnp.sum(lse(beta, axis=1)) - n * lse(alphas) + prior

    def derivative(alphas, means, icf):
        g = jax.grad(objective, argnums=(0, 1, 2))(alphas, means, icf)
        return jnp.concatenate([a.ravel() for a in g])

    return objective, derivative, tuple(jnp.asarray(a) for a in (alphas, means, icf))


# ---------------------------------------------------------------- BA (FORMATS.md §2)

def reproj(z, feat):
    """z = [cam (11), X (3), w] -> the 2 weighted reprojection residuals."""
    cam, X, w = z[:11], z[11:14], z[14]
    r = cam[:3]
    y = X - cam[3:6]
    sq = jnp.dot(r, r)
    nonzero = sq != 0
    theta = jnp.sqrt(jnp.where(nonzero, sq, 1.0))
    v = r / theta
    c, s = jnp.cos(theta), jnp.sin(theta)
    rotated = y * c + jnp.cross(v, y) * s + v * jnp.dot(v, y) * (1 - c)
    zz = jnp.where(nonzero, rotated, y + jnp.cross(r, y))
    p = zz[:2] / zz[2]
    rs = jnp.dot(p, p)
    dist = 1 + cam[9] * rs + cam[10] * rs * rs
    return w * (cam[6] * dist * p + cam[7:9] - feat)


def ba(path, mode):
    t = numbers(path)
    n, m, p = int(t[0]), int(t[1]), int(t[2])
    cams = jnp.asarray(np.tile(t[3:14], (n, 1)))
    X = jnp.asarray(np.tile(t[14:17], (m, 1)))
    w = jnp.asarray(np.full(p, t[17]))
    feats = jnp.asarray(np.tile(t[18:20], (p, 1)))
    i = np.arange(p)
    ci, pi = jnp.asarray(i % n), jnp.asarray(i % m)

    def objective(cams, X, w):
        z = jnp.concatenate([cams[ci], X[pi], w[:, None]], axis=1)
        err = jax.vmap(reproj)(z, feats)
        return jnp.concatenate([err.ravel(), 1 - w * w])

    jac1 = (jax.jacrev if mode == "rev" else jax.jacfwd)(reproj)

    def derivative(cams, X, w):
        # The CSR values of ADBench's sparse Jacobian (FORMATS.md §2.3): per
        # observation its 2 x 15 block, then the weight rows; and the columns.
        z = jnp.concatenate([cams[ci], X[pi], w[:, None]], axis=1)
        blocks = jax.vmap(jac1)(z, feats)                        # p 2 15
        cols1 = jnp.concatenate([11 * ci[:, None] + jnp.arange(11), 11 * n + 3 * pi[:, None] + jnp.arange(3),
                                 (11 * n + 3 * m + jnp.arange(p))[:, None]], axis=1)
        cols = jnp.concatenate([jnp.repeat(cols1, 2, axis=0).ravel(), 11 * n + 3 * m + jnp.arange(p)])
        return jnp.concatenate([blocks.ravel(), -2 * w]), cols

    return objective, derivative, (cams, X, w)


# ---------------------------------------------------------------- LSTM (FORMATS.md §3)

def lstm(path):
    t = numbers(path)
    l, c, b = int(t[0]), int(t[1]), int(t[2])
    pos = 3
    sizes = [(2 * l, 4 * b), (3, b), (2 * l, b), (c, b)]
    arrs = []
    for r, k in sizes:
        arrs.append(t[pos:pos + r * k].reshape(r, k)); pos += r * k
    main, extra, state, seq = arrs
    state, seq = jnp.asarray(state), jnp.asarray(seq)

    def objective(main, extra):
        def step(st, t):
            h, s = st
            x = seq[t] * extra[0]
            hs, ss = [], []
            for i in range(l):
                wt, bs = main[2 * i].reshape(4, b), main[2 * i + 1].reshape(4, b)
                fg = jax.nn.sigmoid(x * wt[0] + bs[0])
                ig = jax.nn.sigmoid(h[i] * wt[1] + bs[1])
                og = jax.nn.sigmoid(x * wt[2] + bs[2])
                cg = jnp.tanh(h[i] * wt[3] + bs[3])
                si = s[i] * fg + ig * cg
                x = og * jnp.tanh(si)
                hs.append(x); ss.append(si)
            y = x * extra[1] + extra[2]
            lse = jnp.log(jnp.sum(jnp.exp(y)) + 2.0)
            return (jnp.stack(hs), jnp.stack(ss)), jnp.sum(seq[t + 1] * (y - lse))

        _, parts = jax.lax.scan(step, (state[0::2], state[1::2]), jnp.arange(c - 1))
        return -jnp.sum(parts) / ((c - 1) * b)

    def derivative(main, extra):
        g = jax.grad(objective, argnums=(0, 1))(main, extra)
        return jnp.concatenate([a.ravel() for a in g])

    return objective, derivative, (jnp.asarray(main), jnp.asarray(extra))


# ---------------------------------------------------------------- HAND (FORMATS.md §4)

def hand(path):
    model = os.path.join(os.path.dirname(path), "model")
    if not os.path.isdir(model):
        model = os.path.join(os.path.dirname(os.path.dirname(path)), "model")
    rows = lambda name: [ln.strip().split(":") for ln in open(os.path.join(model, name)) if ln.strip()]
    bones = rows("bones.txt")
    nb = len(bones)
    parents = [int(f[1]) for f in bones]
    base_rel = jnp.asarray(np.array([[float(v) for v in f[2:18]] for f in bones]).reshape(nb, 4, 4))
    inv_abs = jnp.asarray(np.array([[float(v) for v in f[18:34]] for f in bones]).reshape(nb, 4, 4))
    verts = rows("vertices.txt")
    nv = len(verts)
    rest = np.array([[float(v) for v in f[:3]] for f in verts])
    weights = np.zeros((nv, nb))
    for v, f in enumerate(verts):
        for q in range(int(f[8])):
            weights[v, int(f[9 + 2 * q])] = float(f[10 + 2 * q])
    rest_h = jnp.asarray(np.concatenate([rest, np.ones((nv, 1))], axis=1))
    weights = jnp.asarray(weights)
    tris = np.array([[int(v) for v in f] for f in rows("triangles.txt")])
    t = numbers(path)
    N, nt = int(t[0]), int(t[1])
    complicated = len(t) == 2 + 6 * N + nt
    body = t[2:2 + 4 * N].reshape(N, 4)
    corr, points = body[:, 0].astype(np.int64), jnp.asarray(body[:, 1:])
    u = t[2 + 4 * N:2 + 6 * N].reshape(N, 2) if complicated else None
    theta0 = t[len(t) - nt:]
    # theta index and column of each driven (bone, angle); the rest are 0.
    drive = []
    for f in range(5):
        base = 6 + 4 * f
        bone = 2 + 4 * f
        drive += [(bone, 0, base), (bone, 1, base + 1), (bone + 1, 0, base + 2), (bone + 2, 0, base + 3)]
    db, da, dt = (np.array(v) for v in zip(*drive))

    def vertices(theta):
        ang = jnp.zeros((nb, 2)).at[db, da].set(theta[dt])
        cx, sx, cz, sz = jnp.cos(ang[:, 0]), jnp.sin(ang[:, 0]), jnp.cos(ang[:, 1]), jnp.sin(ang[:, 1])
        zero, one = jnp.zeros(nb), jnp.ones(nb)
        rz = jnp.stack([jnp.stack([cz, -sz, zero], 1), jnp.stack([sz, cz, zero], 1), jnp.stack([zero, zero, one], 1)], 1)
        rx = jnp.stack([jnp.stack([one, zero, zero], 1), jnp.stack([zero, cx, -sx], 1), jnp.stack([zero, sx, cx], 1)], 1)
        r = jnp.einsum("bij,bjk->bik", rz, rx)
        r4 = jnp.zeros((nb, 4, 4)).at[:, :3, :3].set(r).at[:, 3, 3].set(1.0)
        rel = jnp.einsum("bij,bjk->bik", base_rel, r4)
        absolute = [rel[0]]
        for bb in range(1, nb):
            absolute.append(absolute[parents[bb]] @ rel[bb])
        T = jnp.einsum("bij,bjk->bik", jnp.stack(absolute), inv_abs)[:, :3, :]
        skinned = jnp.einsum("vb,bij,vj->vi", weights, T, rest_h)
        aa = theta[:3]
        nrm = jnp.sqrt(jnp.dot(aa, aa))
        safe = jnp.where(nrm < 1e-4, 1.0, nrm)
        a = aa / safe
        K = jnp.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
        G = jnp.cos(safe) * jnp.eye(3) + (1 - jnp.cos(safe)) * jnp.outer(a, a) + jnp.sin(safe) * K
        G = jnp.where(nrm < 1e-4, jnp.eye(3), G)
        return skinned @ G.T + theta[3:6]

    if not complicated:
        def objective(theta):
            return (points - vertices(theta)[corr]).ravel()

        def derivative(theta):
            return jax.jacfwd(objective)(theta)
        return objective, derivative, (jnp.asarray(theta0),)

    tr = jnp.asarray(tris[corr])

    def objective2(theta, u):
        v = vertices(theta)
        hit = u[:, 0:1] * v[tr[:, 0]] + u[:, 1:2] * v[tr[:, 1]] + (1 - u[:, 0:1] - u[:, 1:2]) * v[tr[:, 2]]
        return (points - hit).ravel()

    def derivative2(theta, u):
        jt = jax.jacfwd(objective2, argnums=0)(theta, u)
        # d e_i / d u_i: the block-diagonal part, by two tangents
        ja = jax.jvp(lambda uu: objective2(theta, uu), (u,), (jnp.zeros_like(u).at[:, 0].set(1.0),))[1]
        jb = jax.jvp(lambda uu: objective2(theta, uu), (u,), (jnp.zeros_like(u).at[:, 1].set(1.0),))[1]
        return jnp.concatenate([ja[:, None], jb[:, None], jt], axis=1)
    return objective2, derivative2, (jnp.asarray(theta0), jnp.asarray(u))


def timed(fn, args, min_runs, min_secs):
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    for _ in range(2):
        jax.block_until_ready(compiled(*args))
    times = []
    start = time.perf_counter()
    while len(times) < 1000 and (len(times) < min_runs or time.perf_counter() - start < min_secs):
        t0 = time.perf_counter()
        out = compiled(*args)
        jax.block_until_ready(out)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), compile_s, out


def main():
    kind, path, min_runs, min_secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    if kind in ("gmm", "gmm-np"):
        obj, der, args = gmm(path)
    elif kind in ("ba-rev", "ba-fwd"):
        obj, der, args = ba(path, kind[3:])
    elif kind == "lstm":
        obj, der, args = lstm(path)
    elif kind == "hand":
        obj, der, args = hand(path)
    else:
        raise SystemExit(f"unknown kind {kind}")
    p, pc, _ = timed(obj, args, min_runs, min_secs)
    d, dc, out = timed(der, args, min_runs, min_secs)
    vals = np.asarray(out[0] if isinstance(out, tuple) else out, dtype=np.float64).ravel()
    print(json.dumps(dict(kind=kind, primal_s=p, deriv_s=d, compile_s=pc + dc,
                          checksum=float(np.sum(np.abs(vals))), jax=jax.__version__)))


if __name__ == "__main__":
    main()
