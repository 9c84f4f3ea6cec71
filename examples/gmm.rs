//! The ADBench Gaussian mixture model objective, written as ordinary Rust
//! and differentiated by `#[differentiable]`.
//!
//! ```text
//! cargo run --release --example gmm                       # examples/data/gmm_d10_K25.txt
//! cargo run --release --example gmm -- path/to/gmm.txt    # any ADBench GMM file
//! cargo run --release --example gmm -- time-np FILE       # NumPy-style timings as JSON (bench/compare)
//! ```
//!
//! Prints the objective, the norm of its gradient, a finite-difference check
//! of sampled gradient components, the time of `gmm_objective_vjp` divided by
//! the time of `gmm_objective` (median of several runs), and the time of the
//! vjp divided by the time of a hand-written gradient; then forward mode:
//! `gmm_objective_jvp` along a fixed direction, checked against the
//! gradient's dot product with it, and timed against the primal, for both
//! styles of the objective.
//!
//! The objective (ADBench `FORMATS.md` §1.2), for points `x_i`, components
//! `j` with log-weights `alpha_j`, means `mu_j` and inverse-covariance
//! factors `Q_j = diag(exp(q_j)) + L_j` packed in `icf_j = [q_j | l_j]` (`l_j`
//! lists the strictly lower triangle column by column):
//!
//! ```text
//! beta_ij = alpha_j + sum_r q_j[r] - 1/2 |Q_j (x_i - mu_j)|^2
//! F = - n d/2 ln(2 pi) + sum_i logsumexp_j beta_ij - n logsumexp_j alpha_j
//!     + sum_j [ gamma^2/2 (sum_r exp(2 q_j[r]) + sum_s l_j[s]^2) - m sum_r q_j[r] ]
//!     - k C,   C = n' d (ln gamma - ln(2)/2) - lnGamma_d(n'/2),  n' = d + m + 1
//! ```

use linad::differentiable;
use linad::ndarray::{s, Array1, Array2, Axis};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// The objective, differentiated by linad
// ---------------------------------------------------------------------------

/// The GMM objective `F(alphas, means, icf)` for the points `x` (one per row)
/// and the Wishart prior parameters `wishart_gamma`, `wishart_m`.
///
/// `alphas` has `k` entries, `means` is `k x d`, `icf` is `k x d(d+1)/2`.
#[differentiable(wrt(alphas, means, icf))]
pub fn gmm_objective(
    alphas: &Array1<f64>,
    means: &Array2<f64>,
    icf: &Array2<f64>,
    x: &Array2<f64>,
    wishart_gamma: f64,
    wishart_m: usize,
) -> f64 {
    let n = x.nrows();
    let d = x.ncols();
    let k = alphas.len();

    // sum_r q_j[r]: the log-determinant of Q_j.
    let sum_qs = Array1::from_shape_fn(k, |j| {
        let mut s = 0.0;
        for r in 0..d {
            s += icf[[j, r]];
        }
        s
    });

    // beta_ij = alpha_j + sum_r q_j[r] - |Q_j (x_i - mu_j)|^2 / 2, with
    // (Q_j xc)[r] = exp(q_j[r]) xc[r] + sum_{c < r} L_j[r, c] xc[c] and
    // L_j[r, c] stored at icf[j, d + c (2d - c - 1) / 2 + (r - c - 1)].
    let beta = Array2::from_shape_fn((n, k), |(i, j)| {
        let mut sq = 0.0;
        for r in 0..d {
            let mut z = icf[[j, r]].exp() * (x[[i, r]] - means[[j, r]]);
            for c in 0..r {
                let l = icf[[j, d + c * (2 * d - c - 1) / 2 + (r - c - 1)]];
                z += l * (x[[i, c]] - means[[j, c]]);
            }
            sq += z * z;
        }
        alphas[j] + sum_qs[j] - 0.5 * sq
    });

    // sum_i logsumexp_j beta_ij, each max-shifted.
    let lse = Array1::from_shape_fn(n, |i| {
        let row = beta.row(i);
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        mx + row.iter().map(|b| (b - mx).exp()).sum::<f64>().ln()
    });
    let slse = lse.sum();

    // logsumexp_j alpha_j.
    let amax = alphas.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse_alphas = amax + alphas.iter().map(|a| (a - amax).exp()).sum::<f64>().ln();

    // The Wishart prior: gamma^2/2 |Q_j|_F^2 - m sum_r q_j[r], per component.
    let half_g2 = 0.5 * wishart_gamma * wishart_gamma;
    let mut prior = 0.0;
    for j in 0..k {
        let mut frobenius = 0.0;
        for r in 0..d {
            frobenius += (2.0 * icf[[j, r]]).exp();
        }
        for s in d..icf.ncols() {
            frobenius += icf[[j, s]] * icf[[j, s]];
        }
        prior += half_g2 * frobenius - (wishart_m as f64) * sum_qs[j];
    }

    // Constant terms (no derivative).
    let nd = (n * d) as f64;
    let n_prime = d + wishart_m + 1;
    let log_c = ((n_prime * d) as f64) * (wishart_gamma.ln() - 0.5 * std::f64::consts::LN_2)
        - multivariate_ln_gamma(d, n_prime);
    let constant = -0.5 * nd * (2.0 * std::f64::consts::PI).ln() - (k as f64) * log_c;

    constant + slse - (n as f64) * lse_alphas + prior
}

/// The same objective written the NumPy way: per component, the centred
/// points by broadcasting, `Q_j` applied as a diagonal scale plus a
/// triangular matrix product, a column of `beta` assigned, and the
/// log-sum-exp over components by `map_axis`.
#[differentiable(wrt(alphas, means, icf))]
pub fn gmm_objective_numpy(
    alphas: &Array1<f64>,
    means: &Array2<f64>,
    icf: &Array2<f64>,
    x: &Array2<f64>,
    wishart_gamma: f64,
    wishart_m: usize,
) -> f64 {
    let n = x.nrows();
    let d = x.ncols();
    let k = alphas.len();
    let qs = icf.slice(s![.., ..d]);
    let sum_qs = qs.sum_axis(Axis(1));
    let mut beta = Array2::zeros((n, k));
    for j in 0..k {
        let xc = x - &means.row(j);
        let diag = qs.row(j).mapv(f64::exp);
        let l = Array2::from_shape_fn((d, d), |(r, c)| {
            if c < r {
                icf[[j, d + c * (2 * d - c - 1) / 2 + (r - c - 1)]]
            } else {
                0.0
            }
        });
        let z = &xc * &diag + xc.dot(&l.t());
        let sq = (&z * &z).sum_axis(Axis(1));
        let col = sq.mapv(|v| alphas[j] + sum_qs[j] - 0.5 * v);
        beta.column_mut(j).assign(&col);
    }
    let lse = beta.map_axis(Axis(1), |row| {
        let mx = row.fold(f64::NEG_INFINITY, |a: f64, b| a.max(*b));
        mx + row.mapv(|b| (b - mx).exp()).sum().ln()
    });
    let amax = alphas.fold(f64::NEG_INFINITY, |a: f64, b| a.max(*b));
    let lse_alphas = amax + alphas.mapv(|a| (a - amax).exp()).sum().ln();
    let frobenius =
        qs.mapv(|q| (2.0 * q).exp()).sum() + icf.slice(s![.., d..]).mapv(|l| l * l).sum();
    let prior = 0.5 * wishart_gamma * wishart_gamma * frobenius - (wishart_m as f64) * sum_qs.sum();
    let nd = (n * d) as f64;
    let n_prime = d + wishart_m + 1;
    let log_c = ((n_prime * d) as f64) * (wishart_gamma.ln() - 0.5 * std::f64::consts::LN_2)
        - multivariate_ln_gamma(d, n_prime);
    let constant = -0.5 * nd * (2.0 * std::f64::consts::PI).ln() - (k as f64) * log_c;
    constant + lse.sum() - (n as f64) * lse_alphas + prior
}

/// `lnGamma_d(n'/2) = d(d-1)/4 ln(pi) + sum_{s=1..d} lgamma(n'/2 + (1 - s)/2)`
/// (a constant of the Wishart prior; integer arguments, never differentiated).
pub fn multivariate_ln_gamma(d: usize, n_prime: usize) -> f64 {
    let a = 0.5 * n_prime as f64;
    let mut s = 0.25 * (d * (d - 1)) as f64 * std::f64::consts::PI.ln();
    for j in 1..=d {
        s += ln_gamma(a + 0.5 * (1.0 - j as f64));
    }
    s
}

/// `ln Γ(x)` for `x > 0` by the Lanczos approximation (g = 7, 9 terms; about
/// 15 significant digits), with the reflection formula below 1/2.
pub fn ln_gamma(x: f64) -> f64 {
    #[allow(clippy::excessive_precision)]
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_93,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_13,
        -176.615_029_162_140_59,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_571_6e-6,
        1.505_632_735_149_311_6e-7,
    ];
    use std::f64::consts::PI;
    if x < 0.5 {
        (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x)
    } else {
        let x = x - 1.0;
        let t = x + 7.5;
        let mut a = COEF[0];
        for (i, c) in COEF.iter().enumerate().skip(1) {
            a += c / (x + i as f64);
        }
        0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
    }
}

// ---------------------------------------------------------------------------
// A hand-written gradient, for comparison
// ---------------------------------------------------------------------------

/// Points per block in [`gmm_gradient_hand`]: per-point values are held as
/// `[f64; P]` so that the loops over a block's points vectorise.
const P: usize = 16;

/// One value per point of a block.
type Lanes = [f64; P];

/// The gradient of [`gmm_objective`] written by hand for speed (sequential,
/// `O(n k d^2 + k d^3)`): returns `(F, dF/dalphas, dF/dmeans, dF/dicf)`.
///
/// Points are processed in blocks of `P` = 16 (the last block padded with
/// weight-0 points), `x` transposed once and `Q_j` unpacked once. With the
/// softmax weights `w_ij = dF/dbeta_ij`, `xc = x_i - mu_j` and `z = Q_j xc`,
/// the reverse needs per component only `W_j = sum_i w_ij`,
/// `u_j = sum_i w_ij xc` and `S_j = sum_i w_ij xc xc^T`, because
/// `sum_i w_ij z xc^T = Q_j S_j` and `sum_i w_ij Q_j^T z = Q_j^T Q_j u_j`.
pub fn gmm_gradient_hand(
    alphas: &Array1<f64>,
    means: &Array2<f64>,
    icf: &Array2<f64>,
    x: &Array2<f64>,
    wishart_gamma: f64,
    wishart_m: usize,
) -> (f64, Array1<f64>, Array2<f64>, Array2<f64>) {
    let (n, d) = x.dim();
    let k = alphas.len();
    let t = icf.ncols();
    let blocks = n.div_ceil(P);

    // x transposed into blocks: xt[b * d + r][p] = x[b P + p, r], zero past n.
    let mut xt = vec![[0.0; P]; blocks * d];
    for ((i, r), v) in x.indexed_iter() {
        xt[(i / P) * d + r][i % P] = *v;
    }
    // Q_j unpacked: e[j d + r] = exp(q_j[r]), l[(j d + r) d + c] = L_j[r, c]
    // (zero for c >= r); lpos[r d + c] is the position of L_j[r, c] in icf.
    let mut e = vec![0.0; k * d];
    let mut l = vec![0.0; k * d * d];
    let mut lpos = vec![0usize; d * d];
    let mut sum_qs = vec![0.0; k];
    for r in 0..d {
        for c in 0..r {
            lpos[r * d + c] = d + c * (2 * d - c - 1) / 2 + (r - c - 1);
        }
    }
    for j in 0..k {
        for r in 0..d {
            e[j * d + r] = icf[[j, r]].exp();
            sum_qs[j] += icf[[j, r]];
            for c in 0..r {
                l[(j * d + r) * d + c] = icf[[j, lpos[r * d + c]]];
            }
        }
    }
    let mu: Vec<f64> = means.iter().copied().collect();
    let factor = |j: usize| {
        (
            &e[j * d..(j + 1) * d],
            &l[j * d * d..(j + 1) * d * d],
            &mu[j * d..(j + 1) * d],
        )
    };

    // Forward: beta[j blocks + b][p] = alpha_j + sum_r q_j[r] - |Q_j xc|^2 / 2.
    let mut beta = vec![[0.0; P]; k * blocks];
    let mut xc = vec![[0.0; P]; d];
    for j in 0..k {
        let (e, l, mu) = factor(j);
        let offset = alphas[j] + sum_qs[j];
        for b in 0..blocks {
            centre(&xt[b * d..(b + 1) * d], mu, &mut xc);
            let sq = sq_norm(e, l, &xc);
            beta[j * blocks + b] = std::array::from_fn(|p| offset - 0.5 * sq[p]);
        }
    }

    // Per point, lse_i = logsumexp_j beta_ij (max-shifted); beta is replaced by
    // the softmax weights w_ij = exp(beta_ij - lse_i) = dF/dbeta_ij, zero on
    // the padding.
    let mut slse = 0.0;
    for b in 0..blocks {
        let mut mx = [f64::NEG_INFINITY; P];
        for j in 0..k {
            let bj = &beta[j * blocks + b];
            for p in 0..P {
                mx[p] = mx[p].max(bj[p]);
            }
        }
        let mut se = [0.0; P];
        for j in 0..k {
            let bj = &mut beta[j * blocks + b];
            for p in 0..P {
                bj[p] = (bj[p] - mx[p]).exp();
                se[p] += bj[p];
            }
        }
        let valid = (n - b * P).min(P);
        let inv: Lanes = std::array::from_fn(|p| 1.0 / se[p]);
        // Subnormal weights are flushed to zero, as linad's derivative of
        // exp and XLA do: their terms are below any gradient entry's half
        // ulp, and every operation on a subnormal costs a microcode assist.
        for j in 0..k {
            let wj = &mut beta[j * blocks + b];
            for p in 0..P {
                let w = wj[p] * inv[p];
                wj[p] = if p >= valid || w < f64::MIN_POSITIVE {
                    0.0
                } else {
                    w
                };
            }
        }
        for p in 0..valid {
            slse += mx[p] + se[p].ln();
        }
    }
    let w = beta;

    // Reverse, per component.
    let mut g_alpha = Array1::<f64>::zeros(k);
    let mut g_means = Array2::<f64>::zeros((k, d));
    let mut g_icf = Array2::<f64>::zeros((k, t));
    let mut s_acc = vec![[0.0; P]; d * (d + 1) / 2];
    let mut u_acc = vec![[0.0; P]; d];
    let mut s = vec![0.0; d * d];
    let mut u = vec![0.0; d];
    let mut v = vec![0.0; d];
    for j in 0..k {
        let (e, l, mu) = factor(j);
        // W = sum_i w_i, u = sum_i w_i xc_i, S = sum_i w_i xc_i xc_i^T (lower
        // triangle), each first in P lanes.
        let mut w_acc = [0.0; P];
        u_acc.fill([0.0; P]);
        s_acc.fill([0.0; P]);
        for b in 0..blocks {
            let wb = &w[j * blocks + b];
            centre(&xt[b * d..(b + 1) * d], mu, &mut xc);
            accumulate(wb, &xc, &mut w_acc, &mut u_acc, &mut s_acc);
        }
        let wsum: f64 = w_acc.iter().sum();
        for r in 0..d {
            u[r] = u_acc[r].iter().sum();
            for c in 0..=r {
                let s_rc: f64 = s_acc[r * (r + 1) / 2 + c].iter().sum();
                s[r * d + c] = s_rc;
                s[c * d + r] = s_rc;
            }
        }

        // dF/dalpha_j = W (the -n softmax(alpha) term is added below).
        g_alpha[j] = wsum;
        // With M = sum_i w_i z_i xc_i^T = Q S, i.e.
        // M[r, c] = e_r S[r, c] + sum_{s<r} L[r, s] S[s, c]:
        // dF/dq_r = sum_i w_i (1 - z_r xc_r e_r) = W - e_r M[r, r],
        // dF/dL[r, c] = -sum_i w_i z_r xc_c = -M[r, c].
        let mut gi = g_icf.row_mut(j);
        for r in 0..d {
            let lr = &l[r * d..r * d + r];
            for c in 0..=r {
                let mut m = e[r] * s[r * d + c];
                for (q, lrq) in lr.iter().enumerate() {
                    m += lrq * s[q * d + c];
                }
                if c == r {
                    gi[r] = wsum - e[r] * m;
                } else {
                    gi[lpos[r * d + c]] = -m;
                }
            }
        }
        // dF/dmu = sum_i w_i Q^T z_i = Q^T v with v = Q u.
        for r in 0..d {
            v[r] = e[r] * u[r]
                + l[r * d..r * d + r]
                    .iter()
                    .zip(&u)
                    .map(|(a, b)| a * b)
                    .sum::<f64>();
        }
        let mut gm = g_means.row_mut(j);
        for c in 0..d {
            gm[c] = e[c] * v[c] + (c + 1..d).map(|r| l[r * d + c] * v[r]).sum::<f64>();
        }
    }

    // -n logsumexp(alphas).
    let amax = alphas.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let sa: f64 = alphas.iter().map(|a| (a - amax).exp()).sum();
    let lse_alphas = amax + sa.ln();
    for j in 0..k {
        g_alpha[j] -= n as f64 * (alphas[j] - lse_alphas).exp();
    }

    // The prior.
    let g2 = wishart_gamma * wishart_gamma;
    let m = wishart_m as f64;
    let mut prior = 0.0;
    for j in 0..k {
        let mut frobenius = 0.0;
        for r in 0..d {
            let e2 = (2.0 * icf[[j, r]]).exp();
            frobenius += e2;
            g_icf[[j, r]] += g2 * e2 - m;
        }
        for s in d..t {
            frobenius += icf[[j, s]] * icf[[j, s]];
            g_icf[[j, s]] += g2 * icf[[j, s]];
        }
        prior += 0.5 * g2 * frobenius - m * sum_qs[j];
    }

    let n_prime = d + wishart_m + 1;
    let log_c = ((n_prime * d) as f64) * (wishart_gamma.ln() - 0.5 * std::f64::consts::LN_2)
        - multivariate_ln_gamma(d, n_prime);
    let constant = -0.5 * (n * d) as f64 * (2.0 * std::f64::consts::PI).ln() - k as f64 * log_c;
    let f = constant + slse - n as f64 * lse_alphas + prior;
    (f, g_alpha, g_means, g_icf)
}

/// `xc[r] = x[r] - mu[r]` for the points of one block.
fn centre(xb: &[Lanes], mu: &[f64], xc: &mut [Lanes]) {
    for ((xc, xb), mu) in xc.iter_mut().zip(xb).zip(mu) {
        *xc = std::array::from_fn(|p| xb[p] - mu);
    }
}

/// `|Q xc|^2` per point, with `(Q xc)[r] = e_r xc[r] + sum_{c<r} L[r, c] xc[c]`.
fn sq_norm(e: &[f64], l: &[f64], xc: &[Lanes]) -> Lanes {
    let d = e.len();
    let mut sq = [0.0; P];
    for r in 0..d {
        let mut z: Lanes = std::array::from_fn(|p| e[r] * xc[r][p]);
        for (lrc, xcc) in l[r * d..r * d + r].iter().zip(xc) {
            for p in 0..P {
                z[p] += lrc * xcc[p];
            }
        }
        for p in 0..P {
            sq[p] += z[p] * z[p];
        }
    }
    sq
}

/// Adds one block's `w`, `w xc[r]` and `w xc[r] xc[c]` (`c <= r`, packed row
/// by row) to the lane accumulators.
fn accumulate(
    w: &Lanes,
    xc: &[Lanes],
    w_acc: &mut Lanes,
    u_acc: &mut [Lanes],
    s_acc: &mut [Lanes],
) {
    // Each update is written as a whole new array (read all lanes, then write
    // all), which LLVM vectorises; `acc[p] += ...` lane by lane it does not.
    *w_acc = std::array::from_fn(|p| w_acc[p] + w[p]);
    let mut row = 0;
    for (r, xr) in xc.iter().enumerate() {
        let wx: Lanes = std::array::from_fn(|p| w[p] * xr[p]);
        u_acc[r] = std::array::from_fn(|p| u_acc[r][p] + wx[p]);
        for (acc, xcc) in s_acc[row..=row + r].iter_mut().zip(xc) {
            *acc = std::array::from_fn(|p| acc[p] + wx[p] * xcc[p]);
        }
        row += r + 1;
    }
}

// ---------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------

/// One ADBench GMM input (FORMATS.md §1.1).
pub struct GmmInput {
    /// Log mixture weights, `k`.
    pub alphas: Array1<f64>,
    /// Means, `k x d`.
    pub means: Array2<f64>,
    /// Inverse-covariance factors, `k x d(d+1)/2`.
    pub icf: Array2<f64>,
    /// Points, `n x d`.
    pub x: Array2<f64>,
    /// Wishart `gamma`.
    pub gamma: f64,
    /// Wishart `m`.
    pub m: usize,
}

impl GmmInput {
    /// Parses the text of an ADBench GMM file.
    pub fn parse(text: &str) -> Result<GmmInput, String> {
        let mut tok = text.split_ascii_whitespace();
        let mut next = |what: &str| -> Result<f64, String> {
            let t = tok
                .next()
                .ok_or_else(|| format!("unexpected end of file reading {what}"))?;
            t.parse::<f64>()
                .map_err(|e| format!("bad number {t:?} ({what}): {e}"))
        };
        let d = next("d")? as usize;
        let k = next("k")? as usize;
        let n = next("n")? as usize;
        let t = d * (d + 1) / 2;
        let mut alphas = Array1::zeros(k);
        for j in 0..k {
            alphas[j] = next("alpha")?;
        }
        let mut means = Array2::zeros((k, d));
        for j in 0..k {
            for r in 0..d {
                means[[j, r]] = next("mu")?;
            }
        }
        let mut icf = Array2::zeros((k, t));
        for j in 0..k {
            for s in 0..t {
                icf[[j, s]] = next("icf")?;
            }
        }
        let mut x = Array2::zeros((n, d));
        for i in 0..n {
            for r in 0..d {
                x[[i, r]] = next("x")?;
            }
        }
        let gamma = next("gamma")?;
        let m = next("m")? as usize;
        Ok(GmmInput {
            alphas,
            means,
            icf,
            x,
            gamma,
            m,
        })
    }

    /// Reads and parses a file.
    pub fn read(path: &str) -> Result<GmmInput, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        GmmInput::parse(&text)
    }

    /// The objective.
    pub fn objective(&self) -> f64 {
        gmm_objective(
            &self.alphas,
            &self.means,
            &self.icf,
            &self.x,
            self.gamma,
            self.m,
        )
    }

    /// The objective written the NumPy way ([`gmm_objective_numpy`]).
    pub fn objective_numpy(&self) -> f64 {
        gmm_objective_numpy(
            &self.alphas,
            &self.means,
            &self.icf,
            &self.x,
            self.gamma,
            self.m,
        )
    }

    /// The objective and its gradient by linad's reverse mode, flattened in
    /// ADBench order `[alphas | means | icf]`.
    pub fn gradient(&self) -> (f64, Vec<f64>) {
        let (f, (ga, gm, gi)) = gmm_objective_vjp(
            &self.alphas,
            &self.means,
            &self.icf,
            &self.x,
            self.gamma,
            self.m,
            1.0,
        );
        (f, flat3(&ga, &gm, &gi))
    }

    /// The objective and its gradient by the NumPy-style objective
    /// ([`gmm_objective_numpy`]), flattened like [`GmmInput::gradient`].
    pub fn gradient_numpy(&self) -> (f64, Vec<f64>) {
        let (f, (ga, gm, gi)) = gmm_objective_numpy_vjp(
            &self.alphas,
            &self.means,
            &self.icf,
            &self.x,
            self.gamma,
            self.m,
            1.0,
        );
        (f, flat3(&ga, &gm, &gi))
    }

    /// The objective and the hand-written gradient, flattened like [`GmmInput::gradient`].
    pub fn gradient_hand(&self) -> (f64, Vec<f64>) {
        let (f, ga, gm, gi) = gmm_gradient_hand(
            &self.alphas,
            &self.means,
            &self.icf,
            &self.x,
            self.gamma,
            self.m,
        );
        (f, flat3(&ga, &gm, &gi))
    }

    /// A fixed direction in parameter space (every component nonzero, of
    /// either sign), for timing forward mode.
    pub fn direction(&self) -> (Array1<f64>, Array2<f64>, Array2<f64>) {
        let wave = |i: usize| 0.5 * ((i as f64) * 0.37).sin() + 0.25;
        (
            Array1::from_shape_fn(self.alphas.len(), wave),
            Array2::from_shape_fn(self.means.dim(), |(j, r)| wave(j * 31 + r)),
            Array2::from_shape_fn(self.icf.dim(), |(j, s)| 0.1 * wave(j * 53 + s)),
        )
    }

    /// The objective and its derivative along `dir` by linad's forward mode
    /// (`gmm_objective_jvp`, or `gmm_objective_numpy_jvp` when `numpy`).
    pub fn tangent(
        &self,
        dir: &(Array1<f64>, Array2<f64>, Array2<f64>),
        numpy: bool,
    ) -> (f64, f64) {
        let jvp = if numpy {
            gmm_objective_numpy_jvp
        } else {
            gmm_objective_jvp
        };
        jvp(
            &self.alphas,
            &self.means,
            &self.icf,
            &self.x,
            self.gamma,
            self.m,
            &dir.0,
            &dir.1,
            &dir.2,
        )
    }

    /// The objective with parameter `idx` (ADBench order) moved by `delta`.
    pub fn objective_moved(&self, idx: usize, delta: f64) -> f64 {
        let (k, d) = self.means.dim();
        let t = self.icf.ncols();
        let (mut a, mut mu, mut q) = (self.alphas.clone(), self.means.clone(), self.icf.clone());
        if idx < k {
            a[idx] += delta;
        } else if idx < k + k * d {
            let p = idx - k;
            mu[[p / d, p % d]] += delta;
        } else {
            let p = idx - k - k * d;
            q[[p / t, p % t]] += delta;
        }
        gmm_objective(&a, &mu, &q, &self.x, self.gamma, self.m)
    }
}

fn flat3(a: &Array1<f64>, m: &Array2<f64>, i: &Array2<f64>) -> Vec<f64> {
    a.iter().chain(m.iter()).chain(i.iter()).copied().collect()
}

/// The derivative of `f` at 0 by the 4th-order central difference
/// `(-f(2h) + 8 f(h) - 8 f(-h) + f(-2h)) / 12h`.
pub fn five_point(f: impl Fn(f64) -> f64, h: f64) -> f64 {
    (-f(2.0 * h) + 8.0 * f(h) - 8.0 * f(-h) + f(-2.0 * h)) / (12.0 * h)
}

/// `|a - b| / max(1, |a|, |b|)`.
pub fn rel_err(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

/// The median time of `runs` calls of `f` (after one warm-up call).
pub fn median_time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    std::hint::black_box(f());
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t0 = Instant::now();
            std::hint::black_box(f());
            t0.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

/// The ADBench harness's timing helpers (`timed_runs`, `median_secs`). In
/// the `adbench` example, which includes this file, `io.rs` is loaded a
/// second time here: a few small helpers compiled twice, instead of a copy.
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "adbench/io.rs"]
mod io;

/// `gmm time-np FILE [MIN_RUNS MIN_SECS]`: one JSON line with the median
/// times (seconds) of the NumPy-style objective, its `f_vjp` and the
/// hand-written gradient, as `adbench time` prints them (`bench/compare`
/// and `bench/ab` run it as case `gmm-np`). In this binary rather than in
/// `adbench`: compiled into that one, the NumPy-style code moved HAND's
/// timings there by 25% (identical HAND code, a code-layout effect).
fn time_numpy(args: &[String]) -> Result<(), String> {
    let path = args
        .first()
        .ok_or("usage: gmm time-np FILE [MIN_RUNS MIN_SECS]")?;
    let min_runs: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let min_secs: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let input = GmmInput::read(path)?;
    // Timed as `adbench time` times its cases (warm-up, at least MIN_RUNS
    // calls and MIN_SECS seconds).
    let median =
        |f: &mut dyn FnMut() -> f64| io::median_secs(&io::timed_runs(min_runs, min_secs, f));
    let p = median(&mut || input.objective_numpy());
    let d = median(&mut || input.gradient_numpy().0);
    let h = median(&mut || input.gradient_hand().0);
    let checksum: f64 = input.gradient_numpy().1.iter().map(|g| g.abs()).sum();
    let threads = std::env::var("RAYON_NUM_THREADS").unwrap_or_default();
    println!(
        "{{\"kind\": \"gmm-np\", \"primal_s\": {p:e}, \"deriv_s\": {d:e}, \"hand_s\": {h:e}, \"checksum\": {checksum:e}, \"threads\": \"{threads}\"}}"
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("time-np") {
        if let Err(e) = time_numpy(&args[2..]) {
            eprintln!("gmm: {e}");
            std::process::exit(1);
        }
        return;
    }
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/gmm_d10_K25.txt").to_string()
    });
    let input = match GmmInput::read(&path) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("gmm: {e}");
            std::process::exit(1);
        }
    };
    let (k, d) = input.means.dim();
    let n = input.x.nrows();
    println!("GMM d={d} K={k} n={n}  ({path})");

    let f = input.objective();
    let (f_vjp, grad) = input.gradient();
    let (f_hand, grad_hand) = input.gradient_hand();
    let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
    println!("objective              F = {f:.10e}");
    println!(
        "gradient norm      |dF|  = {norm:.10e}  ({} components)",
        grad.len()
    );
    if f.to_bits() == f_vjp.to_bits() {
        println!("primal of the vjp      = F (bit for bit)");
    } else {
        println!(
            "primal of the vjp      = {f_vjp:.10e}: differs from F by {} ulp (expected bit-identical)",
            (f.to_bits() as i64 - f_vjp.to_bits() as i64).abs()
        );
    }

    // Finite differences on sampled components: a few from each block.
    let n_params = grad.len();
    let blocks = [(0, k), (k, k + k * d), (k + k * d, n_params)];
    let mut picks = vec![];
    for (b, &(lo, hi)) in blocks.iter().enumerate() {
        let count = if b == 2 { 4 } else { 3 };
        for s in 0..count {
            picks.push(lo + (s * 7919 + 13 * b) % (hi - lo));
        }
    }
    let mut worst: f64 = 0.0;
    println!("finite differences (4th-order central, h = 1e-3):");
    for &idx in &picks {
        let fd = five_point(|delta| input.objective_moved(idx, delta), 1e-3);
        let e = rel_err(grad[idx], fd);
        worst = worst.max(e);
        println!(
            "  dF/dp[{idx:4}] = {:+.10e}   fd {:+.10e}   rel. error {e:.1e}",
            grad[idx], fd
        );
    }
    println!(
        "max relative error vs finite differences: {worst:.2e} ({})",
        if worst < 1e-6 {
            "ok, < 1e-6"
        } else {
            "FAILED, >= 1e-6"
        }
    );
    let vs_hand = grad
        .iter()
        .zip(&grad_hand)
        .map(|(a, b)| rel_err(*a, *b))
        .fold(0.0, f64::max);
    println!(
        "max relative difference vs the hand-written gradient: {vs_hand:.2e} (F differs by {:.1e})",
        (f - f_hand).abs()
    );

    let (f_np, grad_np) = input.gradient_numpy();
    let vs_numpy = grad
        .iter()
        .zip(&grad_np)
        .map(|(a, b)| rel_err(*a, *b))
        .fold(0.0, f64::max);
    println!(
        "NumPy-style objective (slices, broadcasting, map_axis): F differs by {:.1e}, gradient by {vs_numpy:.2e} (max relative)",
        (f - f_np).abs()
    );

    // Timing: medians of several runs.
    let runs = 11;
    let t_primal = median_time(runs, || input.objective());
    let t_vjp = median_time(runs, || input.gradient());
    let t_hand = median_time(runs, || input.gradient_hand());
    println!(
        "time: primal {:.3} ms, vjp {:.3} ms, hand-written gradient {:.3} ms (median of {runs})",
        t_primal.as_secs_f64() * 1e3,
        t_vjp.as_secs_f64() * 1e3,
        t_hand.as_secs_f64() * 1e3
    );
    println!(
        "vjp / primal = {:.2}    vjp / hand-written = {:.2}",
        t_vjp.as_secs_f64() / t_primal.as_secs_f64(),
        t_vjp.as_secs_f64() / t_hand.as_secs_f64()
    );
    let t_np = median_time(runs, || input.gradient_numpy());
    println!(
        "NumPy-style vjp {:.3} ms = {:.2} x the scalar-loop vjp",
        t_np.as_secs_f64() * 1e3,
        t_np.as_secs_f64() / t_vjp.as_secs_f64()
    );

    // Forward mode along one direction: the tangent is the gradient's dot
    // product with it (both styles).
    let dir = input.direction();
    let along = flat3(&dir.0, &dir.1, &dir.2);
    let want: f64 = grad.iter().zip(&along).map(|(g, v)| g * v).sum();
    let (_, tan) = input.tangent(&dir, false);
    let (_, tan_np) = input.tangent(&dir, true);
    let vs_jvp = rel_err(tan, want).max(rel_err(tan_np, want));
    println!(
        "jvp along a fixed direction: {tan:.10e} (NumPy style {tan_np:.10e}); gradient . direction {want:.10e}: max relative difference {vs_jvp:.1e}"
    );
    let t_jvp = median_time(runs, || input.tangent(&dir, false));
    let t_primal_np = median_time(runs, || input.objective_numpy());
    let t_jvp_np = median_time(runs, || input.tangent(&dir, true));
    println!(
        "jvp {:.3} ms = {:.2} x primal; NumPy style: primal {:.3} ms, jvp {:.3} ms = {:.2} x its primal",
        t_jvp.as_secs_f64() * 1e3,
        t_jvp.as_secs_f64() / t_primal.as_secs_f64(),
        t_primal_np.as_secs_f64() * 1e3,
        t_jvp_np.as_secs_f64() * 1e3,
        t_jvp_np.as_secs_f64() / t_primal_np.as_secs_f64()
    );
    if worst >= 1e-6 || vs_numpy >= 1e-9 || vs_jvp >= 1e-9 {
        std::process::exit(2);
    }
}
