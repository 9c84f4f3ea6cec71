//! ADBench bundle adjustment (FORMATS.md §2): the weighted reprojection error
//! of one observation, differentiated by linad, and the sparse Jacobian of all
//! observations assembled from its 2 x 15 blocks, by reverse mode (2
//! pullbacks per observation) or forward mode (15 tangents per observation).

use super::io::{read_text, Tokens};
use linad::differentiable;
use linad::ndarray::{Array1, Array2, ArrayView1};

/// The weighted reprojection error of the point `x` (3) seen by the camera
/// `cam` (11: Rodrigues rotation, centre, focal length, principal point, two
/// radial distortion coefficients) against the feature `(fx, fy)`, weight `w`.
#[differentiable(wrt(cam, x, w))]
pub fn reproj_error(
    cam: ArrayView1<f64>,
    x: ArrayView1<f64>,
    w: f64,
    fx: f64,
    fy: f64,
) -> (f64, f64) {
    // The point in the camera frame: rotate X - C by the angle-axis r.
    let y0 = x[0] - cam[3];
    let y1 = x[1] - cam[4];
    let y2 = x[2] - cam[5];
    let sq_theta = cam[0] * cam[0] + cam[1] * cam[1] + cam[2] * cam[2];
    let (z0, z1, z2) = if sq_theta != 0.0 {
        let theta = sq_theta.sqrt();
        let (v0, v1, v2) = (cam[0] / theta, cam[1] / theta, cam[2] / theta);
        let (c, s) = (theta.cos(), theta.sin());
        let t = (v0 * y0 + v1 * y1 + v2 * y2) * (1.0 - c);
        (
            y0 * c + (v1 * y2 - v2 * y1) * s + v0 * t,
            y1 * c + (v2 * y0 - v0 * y2) * s + v1 * t,
            y2 * c + (v0 * y1 - v1 * y0) * s + v2 * t,
        )
    } else {
        (
            y0 + cam[1] * y2 - cam[2] * y1,
            y1 + cam[2] * y0 - cam[0] * y2,
            y2 + cam[0] * y1 - cam[1] * y0,
        )
    };
    // Perspective division, radial distortion, focal length, principal point.
    let p0 = z0 / z2;
    let p1 = z1 / z2;
    let s = p0 * p0 + p1 * p1;
    let distortion = 1.0 + cam[9] * s + cam[10] * s * s;
    let ex = w * (cam[6] * distortion * p0 + cam[7] - fx);
    let ey = w * (cam[6] * distortion * p1 + cam[8] - fy);
    (ex, ey)
}

/// One ADBench BA input, expanded (FORMATS.md §2.1).
pub struct BaInput {
    /// Cameras, `n x 11`.
    pub cams: Array2<f64>,
    /// Points, `m x 3`.
    pub points: Array2<f64>,
    /// Weights, `p`.
    pub w: Array1<f64>,
    /// Features, `p x 2`.
    pub feats: Array2<f64>,
    /// Observation `i` uses camera `obs[i].0` and point `obs[i].1`.
    pub obs: Vec<(usize, usize)>,
}

/// ADBench's sparse Jacobian in CSR form (FORMATS.md §2.3).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SparseJacobian {
    /// Rows, `3p`.
    pub nrows: usize,
    /// Columns, `11n + 3m + p`.
    pub ncols: usize,
    /// Row starts, `nrows + 1`.
    pub rows: Vec<usize>,
    /// Column of each value.
    pub cols: Vec<usize>,
    /// Values, row-major.
    pub vals: Vec<f64>,
}

impl BaInput {
    /// Parses the text of an ADBench BA file (one camera, point, weight and
    /// feature, replicated).
    pub fn parse(text: &str, what: &str) -> Result<BaInput, String> {
        let mut t = Tokens::new(text, what);
        let (n, m, p) = (t.usize()?, t.usize()?, t.usize()?);
        let mut cam = [0.0; 11];
        for c in cam.iter_mut() {
            *c = t.f64()?;
        }
        let x = [t.f64()?, t.f64()?, t.f64()?];
        let w = t.f64()?;
        let feat = [t.f64()?, t.f64()?];
        Ok(BaInput {
            cams: Array2::from_shape_fn((n, 11), |(_, k)| cam[k]),
            points: Array2::from_shape_fn((m, 3), |(_, k)| x[k]),
            w: Array1::from_elem(p, w),
            feats: Array2::from_shape_fn((p, 2), |(_, k)| feat[k]),
            obs: (0..p).map(|i| (i % n, i % m)).collect(),
        })
    }

    /// Reads and parses a file.
    pub fn read(path: &str) -> Result<BaInput, String> {
        BaInput::parse(&read_text(path)?, path)
    }

    /// Number of observations.
    pub fn p(&self) -> usize {
        self.obs.len()
    }

    /// The objective: `[reproj_err (2p) | w_err (p)]`.
    pub fn objective(&self) -> Vec<f64> {
        let p = self.p();
        let mut out = vec![0.0; 3 * p];
        for (i, &(c, j)) in self.obs.iter().enumerate() {
            let (ex, ey) = reproj_error(
                self.cams.row(c),
                self.points.row(j),
                self.w[i],
                self.feats[[i, 0]],
                self.feats[[i, 1]],
            );
            out[2 * i] = ex;
            out[2 * i + 1] = ey;
            out[2 * p + i] = 1.0 - self.w[i] * self.w[i];
        }
        out
    }

    /// Writes the sparsity pattern into `jac`, reusing its buffers; its
    /// values get the right length (their contents are left to the caller,
    /// who writes every one).
    fn pattern_into(&self, jac: &mut SparseJacobian) {
        let (n, m, p) = (self.cams.nrows(), self.points.nrows(), self.p());
        let nnz = 31 * p;
        let (rows, cols) = (&mut jac.rows, &mut jac.cols);
        rows.clear();
        cols.clear();
        rows.push(0);
        for (i, &(c, j)) in self.obs.iter().enumerate() {
            for _ in 0..2 {
                cols.extend(11 * c..11 * c + 11);
                cols.extend(11 * n + 3 * j..11 * n + 3 * j + 3);
                cols.push(11 * n + 3 * m + i);
                rows.push(cols.len());
            }
        }
        for i in 0..p {
            cols.push(11 * n + 3 * m + i);
            rows.push(cols.len());
        }
        jac.nrows = 3 * p;
        jac.ncols = 11 * n + 3 * m + p;
        jac.vals.resize(nnz, 0.0);
    }

    /// The sparse Jacobian with each 2 x 15 block from `block(i)`
    /// (row-major: x row then y row) and the weight rows `-2 w_i`, written
    /// into `jac` (its buffers reused, as a solver calling it again and
    /// again would: a fresh 15 MB Jacobian per call costs the kernel's page
    /// faults, about as much as the derivatives at ADBench's sizes).
    fn assemble_into(&self, jac: &mut SparseJacobian, mut block: impl FnMut(usize, &mut [f64])) {
        self.pattern_into(jac);
        let p = self.p();
        for i in 0..p {
            block(i, &mut jac.vals[30 * i..30 * i + 30]);
        }
        for i in 0..p {
            jac.vals[30 * p + i] = -2.0 * self.w[i];
        }
    }

    /// The Jacobian by reverse mode: per observation one forward pass
    /// (`f_pullback`), its transposed linear map applied to the cotangents
    /// (1, 0) and (0, 1).
    pub fn jacobian_reverse(&self) -> SparseJacobian {
        let mut jac = SparseJacobian::default();
        self.jacobian_reverse_into(&mut jac);
        jac
    }

    /// [`BaInput::jacobian_reverse`] written into `jac` (its buffers reused).
    pub fn jacobian_reverse_into(&self, jac: &mut SparseJacobian) {
        self.assemble_into(jac, |i, out| {
            let (c, j) = self.obs[i];
            let (cam, x) = (self.cams.row(c), self.points.row(j));
            let (fx, fy) = (self.feats[[i, 0]], self.feats[[i, 1]]);
            let (_, pullback) = reproj_error_pullback(cam, x, self.w[i], fx, fy);
            for (r, ct) in [(1.0, 0.0), (0.0, 1.0)].into_iter().enumerate() {
                let (gc, gx, gw) = pullback(ct);
                let row = &mut out[15 * r..15 * r + 15];
                row[..11].copy_from_slice(gc.as_slice().unwrap());
                row[11..14].copy_from_slice(gx.as_slice().unwrap());
                row[14] = gw;
            }
        })
    }

    /// The Jacobian by forward mode: per observation one linearisation
    /// (`f_linearize`), its linear map applied to 15 tangents (one per
    /// column of the block).
    pub fn jacobian_forward(&self) -> SparseJacobian {
        let mut jac = SparseJacobian::default();
        self.jacobian_forward_into(&mut jac);
        jac
    }

    /// [`BaInput::jacobian_forward`] written into `jac` (its buffers reused).
    pub fn jacobian_forward_into(&self, jac: &mut SparseJacobian) {
        let units: Vec<Array1<f64>> = (0..11)
            .map(|k| Array1::from_shape_fn(11, |q| if q == k { 1.0 } else { 0.0 }))
            .collect();
        let zero11 = Array1::<f64>::zeros(11);
        let xunits: Vec<Array1<f64>> = (0..3)
            .map(|k| Array1::from_shape_fn(3, |q| if q == k { 1.0 } else { 0.0 }))
            .collect();
        let zero3 = Array1::<f64>::zeros(3);
        self.assemble_into(jac, |i, out| {
            let (c, j) = self.obs[i];
            let (cam, x) = (self.cams.row(c), self.points.row(j));
            let (w, fx, fy) = (self.w[i], self.feats[[i, 0]], self.feats[[i, 1]]);
            let (_, lin) = reproj_error_linearize(cam, x, w, fx, fy);
            for q in 0..15 {
                let (dc, dx, dw) = if q < 11 {
                    (units[q].view(), zero3.view(), 0.0)
                } else if q < 14 {
                    (zero11.view(), xunits[q - 11].view(), 0.0)
                } else {
                    (zero11.view(), zero3.view(), 1.0)
                };
                let (tx, ty) = lin(dc, dx, dw);
                out[q] = tx;
                out[15 + q] = ty;
            }
        })
    }

    /// The objective with input parameter `col` (a Jacobian column) moved by
    /// `delta`, as a closure input for finite differences.
    pub fn objective_moved(&self, col: usize, delta: f64) -> Vec<f64> {
        let (n, m) = (self.cams.nrows(), self.points.nrows());
        let mut moved = BaInput {
            cams: self.cams.clone(),
            points: self.points.clone(),
            w: self.w.clone(),
            feats: self.feats.clone(),
            obs: self.obs.clone(),
        };
        if col < 11 * n {
            moved.cams[[col / 11, col % 11]] += delta;
        } else if col < 11 * n + 3 * m {
            let q = col - 11 * n;
            moved.points[[q / 3, q % 3]] += delta;
        } else {
            moved.w[col - 11 * n - 3 * m] += delta;
        }
        moved.objective()
    }
}

impl SparseJacobian {
    /// The value at `(row, col)` (0 outside the pattern).
    pub fn get(&self, row: usize, col: usize) -> f64 {
        (self.rows[row]..self.rows[row + 1])
            .find(|&q| self.cols[q] == col)
            .map_or(0.0, |q| self.vals[q])
    }
}

/// A value with its derivatives w.r.t. the 15 block columns
/// `[cam (11), X (3), w]`: the hand-written Jacobian carries one of these per
/// intermediate and applies each operation's chain rule by hand.
#[derive(Clone, Copy)]
struct V15 {
    v: f64,
    g: [f64; 15],
}

impl V15 {
    fn input(v: f64, col: usize) -> V15 {
        let mut g = [0.0; 15];
        g[col] = 1.0;
        V15 { v, g }
    }
    fn constant(v: f64) -> V15 {
        V15 { v, g: [0.0; 15] }
    }
    /// `a * self + b * other` for constants `a`, `b` (value and derivative).
    fn lin(self, a: f64, o: V15, b: f64) -> V15 {
        let g = std::array::from_fn(|q| a * self.g[q] + b * o.g[q]);
        V15 {
            v: a * self.v + b * o.v,
            g,
        }
    }
    fn add(self, o: V15) -> V15 {
        self.lin(1.0, o, 1.0)
    }
    fn sub(self, o: V15) -> V15 {
        self.lin(1.0, o, -1.0)
    }
    fn mul(self, o: V15) -> V15 {
        let mut r = self.lin(o.v, o, self.v);
        r.v = self.v * o.v;
        r
    }
    fn div(self, o: V15) -> V15 {
        let inv = 1.0 / o.v;
        let q = self.v * inv;
        let mut r = self.lin(inv, o, -q * inv);
        r.v = q;
        r
    }
    /// `f(self)` for `f` with derivative `df` at `self`.
    fn apply(self, f: f64, df: f64) -> V15 {
        let mut r = self.lin(df, self, 0.0);
        r.v = f;
        r
    }
}

/// The 2 x 15 block of one observation (row-major), by a hand-written
/// forward chain rule through [`reproj_error`]'s statements.
pub fn reproj_block_hand(
    cam: ArrayView1<f64>,
    x: ArrayView1<f64>,
    w: f64,
    fx: f64,
    fy: f64,
    out: &mut [f64],
) {
    let c: [V15; 11] = std::array::from_fn(|k| V15::input(cam[k], k));
    let xs: [V15; 3] = std::array::from_fn(|k| V15::input(x[k], 11 + k));
    let w = V15::input(w, 14);
    let y = [xs[0].sub(c[3]), xs[1].sub(c[4]), xs[2].sub(c[5])];
    let sq = c[0].mul(c[0]).add(c[1].mul(c[1])).add(c[2].mul(c[2]));
    let z = if sq.v != 0.0 {
        let th = sq.v.sqrt();
        let theta = sq.apply(th, 0.5 / th);
        let v = [c[0].div(theta), c[1].div(theta), c[2].div(theta)];
        let (cs, sn) = (
            theta.apply(th.cos(), -th.sin()),
            theta.apply(th.sin(), th.cos()),
        );
        let one_minus_c = V15::constant(1.0).sub(cs);
        let t = v[0]
            .mul(y[0])
            .add(v[1].mul(y[1]))
            .add(v[2].mul(y[2]))
            .mul(one_minus_c);
        let term = |i: usize, j: usize, k: usize| {
            y[i].mul(cs)
                .add(v[j].mul(y[k]).sub(v[k].mul(y[j])).mul(sn))
                .add(v[i].mul(t))
        };
        [term(0, 1, 2), term(1, 2, 0), term(2, 0, 1)]
    } else {
        let term = |i: usize, j: usize, k: usize| y[i].add(c[j].mul(y[k])).sub(c[k].mul(y[j]));
        [term(0, 1, 2), term(1, 2, 0), term(2, 0, 1)]
    };
    let p0 = z[0].div(z[2]);
    let p1 = z[1].div(z[2]);
    let s = p0.mul(p0).add(p1.mul(p1));
    let dist = V15::constant(1.0).add(c[9].mul(s)).add(c[10].mul(s).mul(s));
    let ex = w.mul(c[6].mul(dist).mul(p0).add(c[7]).sub(V15::constant(fx)));
    let ey = w.mul(c[6].mul(dist).mul(p1).add(c[8]).sub(V15::constant(fy)));
    out[..15].copy_from_slice(&ex.g);
    out[15..30].copy_from_slice(&ey.g);
}

impl BaInput {
    /// The Jacobian with the hand-written blocks.
    pub fn jacobian_hand(&self) -> SparseJacobian {
        let mut jac = SparseJacobian::default();
        self.jacobian_hand_into(&mut jac);
        jac
    }

    /// [`BaInput::jacobian_hand`] written into `jac` (its buffers reused).
    pub fn jacobian_hand_into(&self, jac: &mut SparseJacobian) {
        self.assemble_into(jac, |i, out| {
            let (c, j) = self.obs[i];
            reproj_block_hand(
                self.cams.row(c),
                self.points.row(j),
                self.w[i],
                self.feats[[i, 0]],
                self.feats[[i, 1]],
                out,
            );
        })
    }

    /// Checks both Jacobians against each other, the hand-written one, the
    /// identities of FORMATS.md §2.3 and central finite differences on
    /// sampled entries; returns the worst finite-difference error (rho).
    pub fn check(&self, samples: usize) -> Result<f64, String> {
        let rev = self.jacobian_reverse();
        let fwd = self.jacobian_forward();
        let hand = self.jacobian_hand();
        let (n, m, p) = (self.cams.nrows(), self.points.nrows(), self.p());
        if rev.nrows != 3 * p || rev.ncols != 11 * n + 3 * m + p || rev.vals.len() != 31 * p {
            return Err("BA: wrong Jacobian shape".into());
        }
        for (q, ((a, b), h)) in rev.vals.iter().zip(&fwd.vals).zip(&hand.vals).enumerate() {
            if super::io::rho(*a, *b) > 1e-10 || super::io::rho(*a, *h) > 1e-10 {
                return Err(format!(
                    "BA: value {q}: reverse {a:e}, forward {b:e}, hand-written {h:e}"
                ));
            }
        }
        // Identities: d/dC = -d/dX, d err_x / d u0 = w, d err / d w = proj - g.
        let obj = self.objective();
        for i in [0, p / 2, p - 1] {
            let (c, j) = self.obs[i];
            for r in 0..2 {
                let row = 2 * i + r;
                for k in 0..3 {
                    let dc = rev.get(row, 11 * c + 3 + k);
                    let dx = rev.get(row, 11 * n + 3 * j + k);
                    if super::io::rho(dc, -dx) > 1e-10 {
                        return Err(format!("BA: d/dC != -d/dX at row {row}"));
                    }
                }
                let du = rev.get(row, 11 * c + 7 + r);
                let dv = rev.get(row, 11 * c + 8 - r);
                if super::io::rho(du, self.w[i]) > 1e-12 || dv != 0.0 {
                    return Err(format!("BA: d err / d (u0, v0) wrong at row {row}"));
                }
                let dw = rev.get(row, 11 * n + 3 * m + i);
                if super::io::rho(dw, obj[row] / self.w[i]) > 1e-10 {
                    return Err(format!("BA: d err / d w != proj - g at row {row}"));
                }
            }
            if rev.get(2 * p + i, 11 * n + 3 * m + i) != -2.0 * self.w[i] {
                return Err("BA: weight row wrong".into());
            }
        }
        // Finite differences on sampled columns of sampled observations.
        let mut worst: f64 = 0.0;
        for (s, i) in super::io::sample_indices(p, samples, 1)
            .into_iter()
            .enumerate()
        {
            let (c, j) = self.obs[i];
            let q = (s * 5) % 15;
            let col = if q < 11 {
                11 * c + q
            } else if q < 14 {
                11 * n + 3 * j + q - 11
            } else {
                11 * n + 3 * m + i
            };
            let scale = 1e-4 * (1.0 + self.param(col).abs());
            for row in [2 * i, 2 * i + 1] {
                let fd = super::io::five_point(|d| self.objective_moved(col, d)[row], scale);
                let e = super::io::rho(rev.get(row, col), fd);
                worst = worst.max(e);
            }
        }
        if worst > 1e-6 {
            return Err(format!("BA: finite differences disagree (rho {worst:.1e})"));
        }
        Ok(worst)
    }

    /// The input parameter behind Jacobian column `col`.
    pub fn param(&self, col: usize) -> f64 {
        let (n, m) = (self.cams.nrows(), self.points.nrows());
        if col < 11 * n {
            self.cams[[col / 11, col % 11]]
        } else if col < 11 * n + 3 * m {
            let q = col - 11 * n;
            self.points[[q / 3, q % 3]]
        } else {
            self.w[col - 11 * n - 3 * m]
        }
    }
}
