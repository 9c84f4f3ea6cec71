//! ADBench hand tracking (FORMATS.md §4): a skinned hand model posed by 26
//! parameters; the dense Jacobian of the residuals by forward mode, for the
//! simple (vertex correspondences) and the complicated (points on triangles,
//! also w.r.t. their barycentric coordinates) variant.

// The objectives take the model's arrays as parameters, as a user would
// write them; `b >= 2 && b < 21` is the natural form inside a
// #[differentiable] body (`Range::contains` is not in linad's syntax table).
#![allow(clippy::too_many_arguments, clippy::manual_range_contains)]

use super::io::{read_text, Tokens};
use linad::differentiable;
use linad::ndarray::{Array1, Array2, Array3};

/// The posed, skinned and globally transformed vertices (`nv x 3`) of the
/// hand model for the parameters `theta` (26).
///
/// `base_rel`, `inv_base_abs`: `22 x 4 x 4` per-bone transforms; `parents`:
/// the parent of each bone (bone 0 is the root, parents precede children);
/// `weights`: `nv x 22` skinning weights; `rest`: `nv x 3` rest positions.
#[differentiable(wrt(theta))]
pub fn hand_vertices(
    theta: &Array1<f64>,
    base_rel: &Array3<f64>,
    inv_base_abs: &Array3<f64>,
    parents: &Array1<usize>,
    weights: &Array2<f64>,
    rest: &Array2<f64>,
) -> Array2<f64> {
    let nb = base_rel.shape()[0];
    // Per bone the Euler angles (x, z) of its joint: bones 2,3,4 / 6,7,8 / ...
    // are driven, the first joint of each finger by two parameters.
    let angles = Array2::from_shape_fn((nb, 2), |(b, k)| {
        if b >= 2 && b < 21 && b % 4 != 1 {
            let finger = (b - 2) / 4;
            let joint = (b - 2) % 4;
            let t = 6 + 4 * finger;
            if joint == 0 {
                theta[t + k]
            } else if k == 0 {
                theta[t + joint + 1]
            } else {
                0.0
            }
        } else {
            0.0
        }
    });
    // relative_b = base_rel[b] * [[Rz(a1) Ry(0) Rx(a0), 0], [0, 1]].
    let cosines = angles.mapv(|a| a.cos());
    let sines = angles.mapv(|a| a.sin());
    // The three rotated columns of base_rel[b] * Rz * Rx, then the fourth.
    let col0 = Array2::from_shape_fn((nb, 4), |(b, r)| {
        base_rel[[b, r, 0]] * cosines[[b, 1]] + base_rel[[b, r, 1]] * sines[[b, 1]]
    });
    let col1 = Array2::from_shape_fn((nb, 4), |(b, r)| {
        (base_rel[[b, r, 1]] * cosines[[b, 1]] - base_rel[[b, r, 0]] * sines[[b, 1]])
            * cosines[[b, 0]]
            + base_rel[[b, r, 2]] * sines[[b, 0]]
    });
    let col2 = Array2::from_shape_fn((nb, 4), |(b, r)| {
        (base_rel[[b, r, 0]] * sines[[b, 1]] - base_rel[[b, r, 1]] * cosines[[b, 1]])
            * sines[[b, 0]]
            + base_rel[[b, r, 2]] * cosines[[b, 0]]
    });
    let relative = Array3::from_shape_fn((nb, 4, 4), |(b, r, c)| {
        if c == 0 {
            col0[[b, r]]
        } else if c == 1 {
            col1[[b, r]]
        } else if c == 2 {
            col2[[b, r]]
        } else {
            base_rel[[b, r, 3]]
        }
    });
    // absolute_b = absolute_parent * relative_b, root first.
    let mut absolute = Array3::<f64>::zeros((nb, 4, 4));
    for r in 0..4 {
        for c in 0..4 {
            absolute[[0, r, c]] = relative[[0, r, c]];
        }
    }
    for b in 1..nb {
        let p = parents[b];
        for r in 0..4 {
            for c in 0..4 {
                let mut s = 0.0;
                for k in 0..4 {
                    s += absolute[[p, r, k]] * relative[[b, k, c]];
                }
                absolute[[b, r, c]] = s;
            }
        }
    }
    // T_b = absolute_b * inv_base_abs_b (the top three rows).
    let transforms = Array3::from_shape_fn((nb, 3, 4), |(b, r, c)| {
        let mut s = 0.0;
        for k in 0..4 {
            s += absolute[[b, r, k]] * inv_base_abs[[b, k, c]];
        }
        s
    });
    // Linear blend skinning.
    let nv = rest.nrows();
    let skinned = Array2::from_shape_fn((nv, 3), |(v, r)| {
        let mut s = 0.0;
        for b in 0..nb {
            s += weights[[v, b]]
                * (transforms[[b, r, 0]] * rest[[v, 0]]
                    + transforms[[b, r, 1]] * rest[[v, 1]]
                    + transforms[[b, r, 2]] * rest[[v, 2]]
                    + transforms[[b, r, 3]]);
        }
        s
    });
    // Global rotation (angle-axis theta[0..3]) and translation theta[3..6].
    let norm = (theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]).sqrt();
    let g = if norm < 1e-4 {
        Array2::from_shape_fn((3, 3), |(r, c)| if r == c { 1.0 } else { 0.0 })
    } else {
        // c I + (1 - c) a a^T + s [a]_x with the unit axis a, where
        // [a]_x[r][k] = -eps_{r k m} a_m, m = 3 - r - k.
        let axis = Array1::from_shape_fn(3, |r| theta[r] / norm);
        Array2::from_shape_fn((3, 3), |(r, k)| {
            let outer = axis[r] * axis[k] * (1.0 - norm.cos());
            if r == k {
                outer + norm.cos()
            } else {
                let sign = if k == (r + 1) % 3 { -1.0 } else { 1.0 };
                outer + sign * norm.sin() * axis[3 - r - k]
            }
        })
    };
    Array2::from_shape_fn((nv, 3), |(v, r)| {
        g[[r, 0]] * skinned[[v, 0]]
            + g[[r, 1]] * skinned[[v, 1]]
            + g[[r, 2]] * skinned[[v, 2]]
            + theta[3 + r]
    })
}

/// The residuals of the simple variant: `e_i = p_i - V'_{k_i}`, `3N`.
#[differentiable(wrt(theta))]
pub fn hand_simple(
    theta: &Array1<f64>,
    base_rel: &Array3<f64>,
    inv_base_abs: &Array3<f64>,
    parents: &Array1<usize>,
    weights: &Array2<f64>,
    rest: &Array2<f64>,
    corr: &Array1<usize>,
    points: &Array2<f64>,
) -> Array1<f64> {
    let verts: Array2<f64> = hand_vertices(theta, base_rel, inv_base_abs, parents, weights, rest);
    Array1::from_shape_fn(3 * points.nrows(), |q| {
        points[[q / 3, q % 3]] - verts[[corr[q / 3], q % 3]]
    })
}

/// The residuals of the complicated variant: with triangle `(a, b, c)` of
/// correspondence `i` and its coordinates `u_i`,
/// `e_i = p_i - (u_ia V'_a + u_ib V'_b + (1 - u_ia - u_ib) V'_c)`, `3N`.
#[differentiable(wrt(theta, u))]
pub fn hand_complicated(
    theta: &Array1<f64>,
    u: &Array2<f64>,
    base_rel: &Array3<f64>,
    inv_base_abs: &Array3<f64>,
    parents: &Array1<usize>,
    weights: &Array2<f64>,
    rest: &Array2<f64>,
    triangles: &Array2<usize>,
    corr: &Array1<usize>,
    points: &Array2<f64>,
) -> Array1<f64> {
    let verts: Array2<f64> = hand_vertices(theta, base_rel, inv_base_abs, parents, weights, rest);
    Array1::from_shape_fn(3 * points.nrows(), |q| {
        let (i, r) = (q / 3, q % 3);
        let t = corr[i];
        let (ua, ub) = (u[[i, 0]], u[[i, 1]]);
        let hit = ua * verts[[triangles[[t, 0]], r]]
            + ub * verts[[triangles[[t, 1]], r]]
            + (1.0 - ua - ub) * verts[[triangles[[t, 2]], r]];
        points[[i, r]] - hit
    })
}

/// The hand model (FORMATS.md §4.1).
pub struct HandModel {
    /// `22 x 4 x 4`.
    pub base_rel: Array3<f64>,
    /// `22 x 4 x 4`.
    pub inv_base_abs: Array3<f64>,
    /// Parent of each bone (the root's entry is unused).
    pub parents: Array1<usize>,
    /// `nv x 22`.
    pub weights: Array2<f64>,
    /// `nv x 3`.
    pub rest: Array2<f64>,
    /// `nt x 3` vertex indices.
    pub triangles: Array2<usize>,
}

/// One ADBench HAND problem: the model, the correspondences, and `u` for the
/// complicated variant.
pub struct HandInput {
    /// The model.
    pub model: HandModel,
    /// Vertex (simple) or triangle (complicated) index per correspondence.
    pub corr: Array1<usize>,
    /// Observed points, `N x 3`.
    pub points: Array2<f64>,
    /// `N x 2` for the complicated variant.
    pub u: Option<Array2<f64>>,
    /// The 26 parameters.
    pub theta: Array1<f64>,
}

fn colon_fields(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().split(':').collect())
        .collect()
}

fn num(s: &str, what: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .map_err(|e| format!("{what}: bad number {s:?}: {e}"))
}

impl HandModel {
    /// Reads `bones.txt`, `vertices.txt` and `triangles.txt` from `dir`.
    pub fn read(dir: &str) -> Result<HandModel, String> {
        let text = read_text(&format!("{dir}/bones.txt"))?;
        let bones = colon_fields(&text);
        let nb = bones.len();
        let mut base_rel = Array3::zeros((nb, 4, 4));
        let mut inv_base_abs = Array3::zeros((nb, 4, 4));
        let mut parents = Array1::zeros(nb);
        for (b, f) in bones.iter().enumerate() {
            if f.len() != 34 {
                return Err(format!("bones.txt line {}: {} fields", b + 1, f.len()));
            }
            let p = num(f[1], "bones.txt")?;
            if b == 0 {
                if p >= 0.0 {
                    return Err("bones.txt: bone 0 must be the root".into());
                }
            } else if p < 0.0 || p as usize >= b {
                return Err(format!("bones.txt: bone {b} has parent {p}"));
            } else {
                parents[b] = p as usize;
            }
            for q in 0..16 {
                base_rel[[b, q / 4, q % 4]] = num(f[2 + q], "bones.txt")?;
                inv_base_abs[[b, q / 4, q % 4]] = num(f[18 + q], "bones.txt")?;
            }
        }
        let text = read_text(&format!("{dir}/vertices.txt"))?;
        let verts = colon_fields(&text);
        let nv = verts.len();
        let mut rest = Array2::zeros((nv, 3));
        let mut weights = Array2::zeros((nv, nb));
        for (v, f) in verts.iter().enumerate() {
            for r in 0..3 {
                rest[[v, r]] = num(f[r], "vertices.txt")?;
            }
            let k = num(f[8], "vertices.txt")? as usize;
            for q in 0..k {
                let b = num(f[9 + 2 * q], "vertices.txt")? as usize;
                weights[[v, b]] = num(f[10 + 2 * q], "vertices.txt")?;
            }
        }
        let text = read_text(&format!("{dir}/triangles.txt"))?;
        let tris = colon_fields(&text);
        let mut triangles = Array2::zeros((tris.len(), 3));
        for (t, f) in tris.iter().enumerate() {
            for r in 0..3 {
                triangles[[t, r]] = num(f[r], "triangles.txt")? as usize;
            }
        }
        Ok(HandModel {
            base_rel,
            inv_base_abs,
            parents,
            weights,
            rest,
            triangles,
        })
    }
}

impl HandInput {
    /// Reads a problem file (simple or complicated, told apart by its length)
    /// with the model in `model_dir`.
    pub fn read(path: &str, model_dir: &str) -> Result<HandInput, String> {
        let model = HandModel::read(model_dir)?;
        let text = read_text(path)?;
        let count = text.split_ascii_whitespace().count();
        let mut t = Tokens::new(&text, path);
        let (n, n_theta) = (t.usize()?, t.usize()?);
        let complicated = if count == 2 + 4 * n + n_theta {
            false
        } else if count == 2 + 6 * n + n_theta {
            true
        } else {
            return Err(format!("{path}: {count} numbers fit neither variant"));
        };
        let mut corr = Array1::zeros(n);
        let mut points = Array2::zeros((n, 3));
        for i in 0..n {
            corr[i] = t.usize()?;
            for r in 0..3 {
                points[[i, r]] = t.f64()?;
            }
        }
        let u = if complicated {
            let mut u = Array2::zeros((n, 2));
            for v in u.iter_mut() {
                *v = t.f64()?;
            }
            Some(u)
        } else {
            None
        };
        let mut theta = Array1::zeros(n_theta);
        for v in theta.iter_mut() {
            *v = t.f64()?;
        }
        Ok(HandInput {
            model,
            corr,
            points,
            u,
            theta,
        })
    }

    /// The residuals at `theta` (and `u` for the complicated variant).
    pub fn objective_at(&self, theta: &Array1<f64>, u: Option<&Array2<f64>>) -> Array1<f64> {
        let m = &self.model;
        match u {
            None => hand_simple(
                theta,
                &m.base_rel,
                &m.inv_base_abs,
                &m.parents,
                &m.weights,
                &m.rest,
                &self.corr,
                &self.points,
            ),
            Some(u) => hand_complicated(
                theta,
                u,
                &m.base_rel,
                &m.inv_base_abs,
                &m.parents,
                &m.weights,
                &m.rest,
                &m.triangles,
                &self.corr,
                &self.points,
            ),
        }
    }

    /// The residuals at the file's parameters.
    pub fn objective(&self) -> Array1<f64> {
        self.objective_at(&self.theta, self.u.as_ref())
    }

    /// The dense Jacobian by forward mode, `3N x 26` (simple) or `3N x 28`
    /// (complicated: first the two `u` columns, FORMATS.md §4.4): one
    /// linearisation (`f_linearize`: the forward pass, once, keeping the
    /// residuals of `hand_vertices` too), then its linear map applied to one
    /// tangent per column, as JAX's `jacfwd` applies its `jvp` to the columns
    /// of the identity; the `u` block is block-diagonal, so one tangent
    /// moving every `u_ia` at once gives its whole first column.
    pub fn jacobian(&self) -> Array2<f64> {
        let m = &self.model;
        let nt = self.theta.len();
        let rows = 3 * self.points.nrows();
        let unit = |q: usize| Array1::from_shape_fn(nt, |k| if k == q { 1.0 } else { 0.0 });
        match &self.u {
            None => {
                let mut jac = Array2::zeros((rows, nt));
                let (_, lin) = hand_simple_linearize(
                    &self.theta,
                    &m.base_rel,
                    &m.inv_base_abs,
                    &m.parents,
                    &m.weights,
                    &m.rest,
                    &self.corr,
                    &self.points,
                );
                for q in 0..nt {
                    jac.column_mut(q).assign(&lin(&unit(q)));
                }
                jac
            }
            Some(u) => {
                let mut jac = Array2::zeros((rows, nt + 2));
                let zero_theta = Array1::zeros(nt);
                let zero_u = Array2::zeros(u.dim());
                let (_, lin) = hand_complicated_linearize(
                    &self.theta,
                    u,
                    &m.base_rel,
                    &m.inv_base_abs,
                    &m.parents,
                    &m.weights,
                    &m.rest,
                    &m.triangles,
                    &self.corr,
                    &self.points,
                );
                for q in 0..nt + 2 {
                    let (d_theta, d_u) = if q < 2 {
                        (
                            zero_theta.clone(),
                            Array2::from_shape_fn(u.dim(), |(_, k)| if k == q { 1.0 } else { 0.0 }),
                        )
                    } else {
                        (unit(q - 2), zero_u.clone())
                    };
                    jac.column_mut(q).assign(&lin(&d_theta, &d_u));
                }
                jac
            }
        }
    }
}

impl HandInput {
    /// Checks the Jacobian against central finite differences on every
    /// column (sampled rows) and the `u` columns against their closed form;
    /// returns the worst error (rho).
    pub fn check(&self, rows_per_column: usize) -> Result<f64, String> {
        let jac = self.jacobian();
        let (rows, nt) = (jac.nrows(), self.theta.len());
        let mut worst: f64 = 0.0;
        let extra = jac.ncols() - nt;
        for col in 0..jac.ncols() {
            let moved = |d: f64| -> Array1<f64> {
                if col < extra {
                    let mut u = self.u.clone().unwrap();
                    u.column_mut(col).mapv_inplace(|v| v + d);
                    self.objective_at(&self.theta, Some(&u))
                } else {
                    let mut th = self.theta.clone();
                    th[col - extra] += d;
                    self.objective_at(&th, self.u.as_ref())
                }
            };
            let h = 1e-3;
            let (p2, p1, m1, m2) = (moved(2.0 * h), moved(h), moved(-h), moved(-2.0 * h));
            for row in super::io::sample_indices(rows, rows_per_column, col) {
                let fd = (-p2[row] + 8.0 * p1[row] - 8.0 * m1[row] + m2[row]) / (12.0 * h);
                let e = super::io::rho(jac[[row, col]], fd);
                worst = worst.max(e);
                if e > 1e-6 {
                    return Err(format!(
                        "HAND: J[{row}, {col}] = {:e}, finite differences {fd:e}",
                        jac[[row, col]]
                    ));
                }
            }
        }
        Ok(worst)
    }
}
