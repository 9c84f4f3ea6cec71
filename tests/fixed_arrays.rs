//! Fixed-size arrays `[f64; N]`: parameters by value and by reference,
//! literals `[a, b, c]` and `[x; n]`, element updates, calls between
//! `#[differentiable]` functions, fixed-size outputs (alone and in tuples),
//! integer arrays as constants, custom rules, and plain functions taking
//! them. The companions compute with one-dimensional arrays; their primal
//! bits are `f`'s and their tangents and cotangents are `[f64; N]`.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use linad::ndarray::Array1;
use linad::{custom_jvp, differentiable};

/// The distance between two points: literals, a repeat, element writes and
/// an iterator over a fixed-size array.
#[differentiable]
fn distance(p: [f64; 3], q: &[f64; 3]) -> f64 {
    let d = [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
    let mut s = [0.0; 3];
    for i in 0..3 {
        s[i] = d[i] * d[i];
    }
    (s.iter().sum::<f64>() + 1e-3 * q.len() as f64).sqrt()
}

/// A rotation about the z axis: a fixed-size output.
#[differentiable]
fn rotate(p: [f64; 3], t: f64) -> [f64; 3] {
    let (s, c) = t.sin_cos();
    [c * p[0] - s * p[1], s * p[0] + c * p[1], p[2]]
}

/// Calls of functions taking and returning fixed-size arrays, a tuple
/// output with one, integer indices in a fixed-size array.
#[differentiable]
fn rotated_spread(p: &[f64; 3], t: f64, pick: [usize; 2]) -> (f64, [f64; 3]) {
    let r = rotate(*p, t);
    let origin = [t; 3];
    (distance(r, &origin) * r[pick[0]] + r[pick[1]], r)
}

fn to_fixed(a: &Array1<f64>) -> [f64; 3] {
    [a[0], a[1], a[2]]
}

fn to_array(a: [f64; 3]) -> Array1<f64> {
    Array1::from(a.to_vec())
}

#[test]
fn parameters_literals_and_updates() {
    let mut rng = rng("parameters_literals_and_updates");
    let (p, q) = (rng.array1(3, -1.0, 1.0), rng.array1(3, -1.0, 1.0));
    check_derivatives(
        &(p, q),
        |(p, q)| distance(to_fixed(p), &to_fixed(q)),
        |(p, q), (dp, dq)| distance_jvp(to_fixed(p), &to_fixed(q), to_fixed(dp), &to_fixed(dq)),
        |(p, q), ct| {
            let (y, (gp, gq)) = distance_vjp(to_fixed(p), &to_fixed(q), *ct);
            (y, (to_array(gp), to_array(gq)))
        },
    );
}

#[test]
fn fixed_outputs_and_calls() {
    let mut rng = rng("fixed_outputs_and_calls");
    let p = rng.array1(3, -1.0, 1.0);
    check_derivatives(
        &(p.clone(), 0.7),
        |(p, t)| to_array(rotate(to_fixed(p), *t)),
        |(p, t), (dp, dt)| {
            let (y, d) = rotate_jvp(to_fixed(p), *t, to_fixed(dp), *dt);
            (to_array(y), to_array(d))
        },
        |(p, t), ct| {
            let (y, (g, gt)) = rotate_vjp(to_fixed(p), *t, to_fixed(ct));
            (to_array(y), (to_array(g), gt))
        },
    );
    for pick in [[0, 1], [2, 2]] {
        check_derivatives(
            &(p.clone(), -0.3),
            |(p, t)| {
                let (a, r) = rotated_spread(&to_fixed(p), *t, pick);
                (a, to_array(r))
            },
            |(p, t), (dp, dt)| {
                let ((a, r), (da, dr)) =
                    rotated_spread_jvp(&to_fixed(p), *t, pick, &to_fixed(dp), *dt);
                ((a, to_array(r)), (da, to_array(dr)))
            },
            |(p, t), (ca, cr)| {
                let ((a, r), (g, gt)) =
                    rotated_spread_vjp(&to_fixed(p), *t, pick, (*ca, to_fixed(cr)));
                ((a, to_array(r)), (to_array(g), gt))
            },
        );
    }
}

/// `f_linearize` and `f_pullback` take and return `[f64; N]` too.
#[test]
fn linear_maps_of_fixed_arrays() {
    let p = [0.3, -0.2, 0.9];
    let (y, lin) = rotate_linearize(p, 0.4);
    let (y2, pb) = rotate_pullback(p, 0.4);
    assert_same_bits(&to_array(y), &to_array(rotate(p, 0.4)));
    assert_same_bits(&to_array(y2), &to_array(y));
    let u = [1.0, -2.0, 0.5];
    let w = [0.25, 1.5, -1.0];
    let (d, dt) = (lin(u, 0.7), pb(w));
    // <w, J u> = <J^T w, u>
    let lhs: f64 = (0..3).map(|i| w[i] * d[i]).sum();
    let rhs: f64 = (0..3).map(|i| dt.0[i] * u[i]).sum::<f64>() + dt.1 * 0.7;
    assert_close(lhs, rhs, 1e-14);
}

/// A plain function of a fixed-size array, with a custom rule.
fn safe_norm(p: [f64; 3]) -> f64 {
    (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt().max(1e-12)
}

#[custom_jvp(safe_norm)]
fn safe_norm_rule(p: [f64; 3], d_p: [f64; 3]) -> (f64, f64) {
    let n = safe_norm(p);
    (n, (p[0] * d_p[0] + p[1] * d_p[1] + p[2] * d_p[2]) / n)
}

/// A plain function called with constants: a fixed-size array and a slice.
fn weight(w: [f64; 2], v: &[f64]) -> f64 {
    w[0] * v.iter().sum::<f64>() + w[1]
}

#[differentiable(wrt(p))]
fn with_rule(p: [f64; 3], w: [usize; 2]) -> f64 {
    let c = [w[0] as f64, w[1] as f64];
    let v = vec![1.0, 2.0, 0.5];
    safe_norm(p) * weight(c, &v)
}

#[test]
fn custom_rules_and_plain_calls() {
    let mut rng = rng("custom_rules_and_plain_calls");
    let p = rng.array1(3, -1.0, 1.0);
    check_derivatives(
        &p,
        |p| with_rule(to_fixed(p), [2, 3]),
        |p, dp| with_rule_jvp(to_fixed(p), [2, 3], to_fixed(dp)),
        |p, ct| {
            let (y, g) = with_rule_vjp(to_fixed(p), [2, 3], *ct);
            (y, to_array(g))
        },
    );
}

/// `let [x, y, z] = p;` binds the elements (nested in tuples too).
#[differentiable]
fn cross_z(p: [f64; 3], q: &[f64; 3]) -> f64 {
    let [x, y, _] = p;
    let ([u, v, w], s) = (*q, 2.0);
    s * (x * v - y * u) + w
}

#[test]
fn array_patterns() {
    let mut rng = rng("array_patterns");
    let (p, q) = (rng.array1(3, -1.0, 1.0), rng.array1(3, -1.0, 1.0));
    check_derivatives(
        &(p, q),
        |(p, q)| cross_z(to_fixed(p), &to_fixed(q)),
        |(p, q), (dp, dq)| cross_z_jvp(to_fixed(p), &to_fixed(q), to_fixed(dp), &to_fixed(dq)),
        |(p, q), ct| {
            let (y, (gp, gq)) = cross_z_vjp(to_fixed(p), &to_fixed(q), *ct);
            (y, (to_array(gp), to_array(gq)))
        },
    );
}

/// A `#[differentiable]` function of a slice, called with a fixed-size
/// array.
#[differentiable]
fn squares(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>()
}

/// Iterating a fixed-size array by value and by reference, `zip`, the
/// array's own `map`, `into_iter`, capture in a closure; one mode only.
#[differentiable(reverse)]
fn idioms(p: [f64; 3], q: [f64; 3], w: &Array1<f64>) -> [f64; 2] {
    let mut s = 0.0;
    for x in p {
        s += x * x;
    }
    let d: f64 = p.iter().zip(q.iter()).map(|(a, b)| a * b).sum();
    let m = p.map(|x| x * 2.0);
    let t: f64 = q.into_iter().sum();
    let c = w.mapv(|v| v * p[0]).sum();
    [s + d + m[1] + t, c * squares(&q)]
}

#[test]
fn idioms_of_fixed_size_arrays() {
    let mut rng = rng("idioms_of_fixed_size_arrays");
    let (p, q, w) = (
        rng.array1(3, -1.0, 1.0),
        rng.array1(3, -1.0, 1.0),
        rng.array1(2, -1.0, 1.0),
    );
    let (fp, fq) = (to_fixed(&p), to_fixed(&q));
    let ct = [0.7, -1.3];
    let (y, (gp, gq, gw)) = idioms_vjp(fp, fq, &w, ct);
    assert_same_bits(
        &Array1::from(y.to_vec()),
        &Array1::from(idioms(fp, fq, &w).to_vec()),
    );
    // <ct, f(x + h e_i) - f(x - h e_i)> / 2h against the cotangents.
    let f = |p: [f64; 3], q: [f64; 3]| {
        let y = idioms(p, q, &w);
        ct[0] * y[0] + ct[1] * y[1]
    };
    let h = 1e-6;
    for i in 0..3 {
        let (mut a, mut b) = (fp, fp);
        a[i] += h;
        b[i] -= h;
        assert_close((f(a, fq) - f(b, fq)) / (2.0 * h), gp[i], 1e-6);
        let (mut a, mut b) = (fq, fq);
        a[i] += h;
        b[i] -= h;
        assert_close((f(fp, a) - f(fp, b)) / (2.0 * h), gq[i], 1e-6);
    }
    assert_eq!(gw.len(), 2);
}

/// Fixed-size arrays as struct fields (their own tangents; `[usize; N]` a
/// constant), in parameters, outputs and methods.
#[derive(linad::Differentiable, Clone, Debug)]
pub struct Body {
    pub pos: [f64; 3],
    pub vel: [f32; 2],
    pub mass: f64,
    pub cell: [usize; 2],
}

/// A struct output with a fixed-size field.
#[derive(linad::Differentiable, Clone, Debug)]
pub struct Kick {
    pub pos: [f64; 3],
    pub energy: f64,
}

#[differentiable]
fn potential(b: &Body, g: f64) -> f64 {
    let [x, y, z] = b.pos;
    let speed = (b.vel[0] as f64).powi(2) + (b.vel[1] as f64).powi(2);
    b.mass * (g * z + 0.5 * speed) + 0.5 * (x * x + y * y) * (b.cell[0] as f64)
}

#[differentiable]
fn kicked(b: &Body, dt: f64) -> Kick {
    Kick {
        pos: [b.pos[0] + dt * b.mass, b.pos[1], b.pos[2] * dt],
        energy: b.mass * dt * dt,
    }
}

#[linad::differentiable]
impl Body {
    #[differentiable]
    pub fn height(&self) -> f64 {
        self.pos[2] * self.mass
    }
}

#[test]
fn fixed_size_struct_fields() {
    use linad::Tangent;
    let b = Body {
        pos: [1.0, 2.0, 3.0],
        vel: [0.5, -1.5],
        mass: 2.0,
        cell: [2, 7],
    };
    let (v, (gb, gg)) = potential_vjp(&b, 9.8, 1.0);
    assert_eq!(v.to_bits(), potential(&b, 9.8).to_bits());
    // d/dpos = (2 x, 2 y, m g), d/dvel = m vel, d/dmass = g z + speed / 2.
    assert_eq!(gb.pos, [2.0, 4.0, 2.0 * 9.8]);
    assert_eq!(gb.vel, [1.0f32, -3.0]);
    assert_close(gb.mass, 9.8 * 3.0 + 0.5 * (0.25 + 2.25), 1e-12);
    assert_close(gg, 6.0, 1e-12);
    // Forward mode along a tangent, against the cotangent.
    let d = BodyTangent::from_flat(&b, &[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
    let (vj, t) = potential_jvp(&b, 9.8, &d, 0.0);
    assert_eq!(vj.to_bits(), v.to_bits());
    assert_close(t, gb.dot(&d), 1e-6);
    // A struct output.
    let (k, (gk, gdt)) = kicked_vjp(
        &b,
        0.5,
        &KickTangent {
            pos: [1.0, 0.0, 1.0],
            energy: 1.0,
        },
    );
    assert_eq!((k.pos, k.energy), ([2.0, 2.0, 1.5], 0.5));
    let plain = kicked(&b, 0.5);
    assert_eq!((plain.pos, plain.energy), (k.pos, k.energy));
    assert_eq!((gk.pos, gk.mass), ([1.0, 0.0, 0.5], 0.5 + 0.25));
    assert_close(gdt, 2.0 + 3.0 + 2.0 * 2.0 * 0.5, 1e-12);
    // A method.
    let (h, g) = b.height_vjp(1.0);
    assert_eq!((h, g.pos, g.mass), (6.0, [0.0, 0.0, 2.0], 3.0));
}
