//! Struct parameters (`#[derive(linad::Differentiable)]`): field reads in
//! `#[differentiable]` functions, the derived tangent type, both modes
//! against finite differences and each other, `wrt`, constant fields,
//! nested structs, by-value parameters, linearize / pullback.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use linad::ndarray::{Array1, Array2};
use linad::{differentiable, Differentiable, Tangent};

/// A two-layer perceptron's parameters.
#[derive(Differentiable, Clone, Debug)]
pub struct Mlp {
    pub w1: Array2<f64>,
    pub b1: Array1<f64>,
    pub w2: Array2<f64>,
    pub b2: Array1<f64>,
    #[linad(constant)]
    pub act: usize,
    pub scale: f64,
}

/// Mean squared error of the perceptron on the rows of `x`.
#[differentiable]
fn mlp_loss(p: &Mlp, x: &Array2<f64>, y: &Array2<f64>) -> f64 {
    let h = x.dot(&p.w1.t()) + &p.b1;
    let h = if p.act == 0 {
        h.mapv(|v| v.tanh())
    } else {
        h.mapv(|v| v.max(0.0))
    };
    let out = h.dot(&p.w2.t()) + &p.b2;
    let d = &out - y;
    p.scale * (&d * &d).sum() / (y.len() as f64)
}

fn mlp(rng: &mut Rng, act: usize) -> Mlp {
    Mlp {
        w1: Array2::from_shape_fn((4, 3), |_| rng.normal()),
        b1: Array1::from_shape_fn(4, |_| rng.normal() * 0.1),
        w2: Array2::from_shape_fn((2, 4), |_| rng.normal()),
        b2: Array1::from_shape_fn(2, |_| rng.normal() * 0.1),
        act,
        scale: 0.7,
    }
}

fn tangent(rng: &mut Rng, p: &Mlp) -> MlpTangent {
    let flat: Vec<f64> = (0..MlpTangent::zeros_like(p).to_flat().len())
        .map(|_| rng.normal())
        .collect();
    MlpTangent::from_flat(p, &flat)
}

#[test]
fn struct_parameter_in_both_modes() {
    let mut r = rng("struct_parameter_in_both_modes");
    let x = Array2::from_shape_fn((5, 3), |_| r.normal());
    let y = Array2::from_shape_fn((5, 2), |_| r.normal());
    for act in [0, 1] {
        let p = mlp(&mut r, act);
        let dp = tangent(&mut r, &p);
        let dx = Array2::from_shape_fn((5, 3), |_| r.normal());
        let dy = Array2::from_shape_fn((5, 2), |_| r.normal());
        // Primal bit-identical.
        let f = mlp_loss(&p, &x, &y);
        let (fj, t) = mlp_loss_jvp(&p, &x, &y, &dp, &dx, &dy);
        let (fv, (gp, gx, gy)) = mlp_loss_vjp(&p, &x, &y, 1.0);
        assert_eq!(f.to_bits(), fj.to_bits());
        assert_eq!(f.to_bits(), fv.to_bits());
        // <ct, J d> = <J^T ct, d>.
        let rhs = gp.dot(&dp) + (&gx * &dx).sum() + (&gy * &dy).sum();
        assert_close(t, rhs, 1e-10);
        // Central finite differences along (dp, dx, dy).
        let h = 1e-6;
        let shifted = |s: f64| {
            let q = Mlp {
                w1: &p.w1 + &(&dp.w1 * s),
                b1: &p.b1 + &(&dp.b1 * s),
                w2: &p.w2 + &(&dp.w2 * s),
                b2: &p.b2 + &(&dp.b2 * s),
                act: p.act,
                scale: p.scale + dp.scale * s,
            };
            mlp_loss(&q, &(&x + &(&dx * s)), &(&y + &(&dy * s)))
        };
        let fd = (shifted(h) - shifted(-h)) / (2.0 * h);
        assert_close(t, fd, 1e-6);
        // The tangent of `scale` is the loss without it.
        assert_close(gp.scale, f / p.scale, 1e-12);
    }
}

/// `wrt(p)`: only the struct; a struct by value; a nested struct; a `Vec`
/// and a tuple field.
#[derive(Differentiable, Clone, Debug)]
pub struct Layer {
    pub w: Array1<f64>,
    pub shift: (f64, f64),
}

#[derive(Differentiable, Clone, Debug)]
pub struct Model {
    pub first: Layer,
    pub coeffs: Vec<f64>,
    #[linad(constant)]
    pub order: usize,
    #[linad(constant)]
    pub damping: f64,
}

#[differentiable(wrt(m))]
fn model_value(m: Model, x: &Array1<f64>) -> f64 {
    let mut s = m.first.shift.0 * m.damping;
    for k in 0..m.order {
        s += m.coeffs[k] * x.dot(&m.first.w).powi(k as i32);
    }
    s + m.first.shift.1.sin()
}

#[test]
fn nested_by_value_and_wrt() {
    let m = Model {
        first: Layer {
            w: Array1::from(vec![0.3, -0.2, 0.5]),
            shift: (0.4, 1.1),
        },
        coeffs: vec![1.0, -0.5, 0.25],
        order: 3,
        damping: 0.9,
    };
    let x = Array1::from(vec![1.0, 2.0, -1.0]);
    let dm = ModelTangent {
        first: LayerTangent {
            w: Array1::from(vec![0.1, 0.2, -0.3]),
            shift: (0.5, -0.7),
        },
        coeffs: vec![0.3, 0.1, -0.2],
    };
    let (f, t) = model_value_jvp(m.clone(), &x, &dm);
    assert_eq!(f.to_bits(), model_value(m.clone(), &x).to_bits());
    let (fv, g) = model_value_vjp(m.clone(), &x, 1.0);
    assert_eq!(f.to_bits(), fv.to_bits());
    assert_close(t, g.dot(&dm), 1e-12);
    // d/d shift.0 = damping (a constant field: no tangent of its own).
    assert_close(g.first.shift.0, 0.9, 1e-15);
    let h = 1e-6;
    let at = |s: f64| {
        let mut q = m.clone();
        q.first.w = &m.first.w + &(&dm.first.w * s);
        q.first.shift = (
            m.first.shift.0 + s * dm.first.shift.0,
            m.first.shift.1 + s * dm.first.shift.1,
        );
        q.coeffs = m
            .coeffs
            .iter()
            .zip(&dm.coeffs)
            .map(|(a, b)| a + s * b)
            .collect();
        model_value(q, &x)
    };
    assert_close(t, (at(h) - at(-h)) / (2.0 * h), 1e-7);
    // Linearize and pullback agree with jvp and vjp.
    let (fl, lin) = model_value_linearize(m.clone(), &x);
    assert_eq!(fl.to_bits(), f.to_bits());
    assert_eq!(lin(&dm).to_bits(), t.to_bits());
    let (_, pb) = model_value_pullback(m.clone(), &x);
    assert_eq!(pb(1.0), g);
}

#[test]
fn tangent_algebra_and_flat_round_trip() {
    let mut r = rng("tangent_algebra_and_flat_round_trip");
    let p = mlp(&mut r, 0);
    let a = tangent(&mut r, &p);
    let b = tangent(&mut r, &p);
    let sum = a.clone() + b.clone();
    assert_close(
        sum.dot(&sum),
        a.dot(&a) + 2.0 * a.dot(&b) + b.dot(&b),
        1e-12,
    );
    let diff = (a.clone() - b.clone()) * 2.0;
    assert_close(diff.w1[[1, 2]], 2.0 * (a.w1[[1, 2]] - b.w1[[1, 2]]), 1e-15);
    let flat = a.to_flat();
    assert_eq!(flat.len(), 12 + 4 + 8 + 2 + 1);
    assert_eq!(MlpTangent::from_flat(&p, &flat), a);
    assert_eq!(MlpTangent::zeros_like(&p).dot(&a), 0.0);
}

#[test]
#[should_panic(expected = "tangent `d_p.w1` has shape [3, 4], expected [4, 3]")]
fn tangent_of_wrong_shape_names_the_field() {
    let mut r = rng("tangent_of_wrong_shape_names_the_field");
    let p = mlp(&mut r, 0);
    let mut dp = MlpTangent::zeros_like(&p);
    dp.w1 = Array2::zeros((3, 4));
    let x = Array2::zeros((2, 3));
    let y = Array2::zeros((2, 2));
    let _ = mlp_loss_jvp(&p, &x, &y, &dp, &x, &y);
}

/// A layer, a network of two layers, and functions calling each other with
/// structs: `dense(&net.first, x)`.
#[derive(Differentiable, Clone, Debug)]
pub struct Dense {
    pub w: Array2<f64>,
    pub b: Array1<f64>,
}

#[derive(Differentiable, Clone, Debug)]
pub struct Net {
    pub first: Dense,
    pub second: Dense,
}

#[differentiable]
fn dense(l: &Dense, x: &Array1<f64>) -> Array1<f64> {
    (l.w.dot(x) + &l.b).mapv(f64::tanh)
}

#[differentiable]
fn net_loss(net: &Net, x: &Array1<f64>) -> f64 {
    let h = dense(&net.first, x);
    let o = dense(&net.second, &h);
    o.dot(&o)
}

/// A 3 -> 4 -> 2 network with normal random weights (seeded by `name`).
fn random_net(name: &str) -> Net {
    let mut r = rng(name);
    let mut layer = |m: usize, n: usize| Dense {
        w: Array2::from_shape_fn((m, n), |_| r.normal()),
        b: Array1::from_shape_fn(m, |_| r.normal()),
    };
    Net {
        first: layer(4, 3),
        second: layer(2, 4),
    }
}

#[test]
fn calls_between_struct_functions() {
    let net = random_net("calls_between_struct_functions");
    let x = Array1::from(vec![0.5, -1.0, 0.25]);
    let mut r2 = rng("calls_between_struct_functions 2");
    let flat: Vec<f64> = (0..NetTangent::zeros_like(&net).to_flat().len())
        .map(|_| r2.normal())
        .collect();
    let dn = NetTangent::from_flat(&net, &flat);
    let dx = Array1::from(vec![0.1, 0.2, -0.3]);
    let (f, t) = net_loss_jvp(&net, &x, &dn, &dx);
    assert_eq!(f.to_bits(), net_loss(&net, &x).to_bits());
    let (_, (gn, gx)) = net_loss_vjp(&net, &x, 1.0);
    assert_close(t, gn.dot(&dn) + gx.dot(&dx), 1e-12);
    let h = 1e-6;
    let at = |s: f64| {
        let shift = |l: &Dense, d: &DenseTangent| Dense {
            w: &l.w + &(&d.w * s),
            b: &l.b + &(&d.b * s),
        };
        let n2 = Net {
            first: shift(&net.first, &dn.first),
            second: shift(&net.second, &dn.second),
        };
        net_loss(&n2, &(&x + &(&dx * s)))
    };
    assert_close(t, (at(h) - at(-h)) / (2.0 * h), 1e-7);
}

/// Fields read inside a macro (`array![..]`) and a `#[cfg]`-gated function.
#[derive(Differentiable, Clone, Debug)]
pub struct Pair {
    pub a: f64,
    pub b: f64,
    pub v: Array1<f64>,
}

#[cfg(not(miri))]
#[differentiable]
fn pair_value(p: &Pair, x: f64) -> f64 {
    let w = linad::ndarray::array![p.a * x, p.b, p.a * p.b];
    w.dot(&w) + p.v.sum() * x
}

#[test]
fn fields_in_macros_and_gated_functions() {
    let p = Pair {
        a: 0.5,
        b: -1.5,
        v: Array1::from(vec![1.0, 2.0]),
    };
    let dp = PairTangent {
        a: 0.3,
        b: 0.7,
        v: Array1::from(vec![-0.2, 0.4]),
    };
    let (f, t) = pair_value_jvp(&p, 1.25, &dp, 0.5);
    assert_eq!(f.to_bits(), pair_value(&p, 1.25).to_bits());
    let (_, (g, gx)) = pair_value_vjp(&p, 1.25, 1.0);
    assert_close(t, g.dot(&dp) + gx * 0.5, 1e-12);
    // d/da (a x)^2 + (a b)^2 = 2 a x^2 + 2 a b^2
    assert_close(g.a, 2.0 * 0.5 * 1.25 * 1.25 + 2.0 * 0.5 * 2.25, 1e-12);
}

#[test]
#[should_panic(
    expected = "mlp_loss_jvp: tangent `d_x` has shape [2, 2], expected [2, 3] (the shape of `x`)"
)]
fn plain_tangent_of_wrong_shape_beside_a_struct() {
    let mut r = rng("plain_tangent_of_wrong_shape_beside_a_struct");
    let p = mlp(&mut r, 0);
    let dp = MlpTangent::zeros_like(&p);
    let x = Array2::zeros((2, 3));
    let y = Array2::zeros((2, 2));
    let _ = mlp_loss_jvp(&p, &x, &y, &dp, &y, &y);
}

/// Structs defined in another module, used through a path: the nested
/// field's type (`Inner`) is not in scope where the function is.
mod model {
    use linad::ndarray::Array2;

    #[derive(linad::Differentiable, Clone, Debug)]
    pub struct Inner {
        pub m: Array2<f64>,
    }

    #[derive(linad::Differentiable, Clone, Debug)]
    pub struct Outer {
        pub inner: Inner,
        pub c: f64,
    }
}

#[differentiable]
fn outer_value(o: &model::Outer, x: f64) -> f64 {
    o.inner.m.sum() * x + o.c * o.c
}

#[test]
fn structs_of_another_module() {
    let o = model::Outer {
        inner: model::Inner {
            m: Array2::from_elem((2, 2), 0.5),
        },
        c: 1.5,
    };
    let (y, g) = outer_value_vjp(&o, 2.0, 1.0);
    assert_eq!(y.to_bits(), outer_value(&o, 2.0).to_bits());
    let (gp, gx) = g;
    assert_close(gx, 2.0, 1e-15);
    assert_close(gp.c, 3.0, 1e-15);
    assert!(gp.inner.m.iter().all(|v| *v == 2.0));
}

/// Struct outputs: built with a literal (nested too), from struct
/// parameters or from plain ones; the tangent is the struct's tangent and
/// the cotangent is taken as one.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Stats {
    pub mean: f64,
    pub spread: (f64, f64),
    pub centred: Array1<f64>,
}

#[differentiable]
fn stats(v: &Array1<f64>, s: f64) -> Stats {
    let m = v.sum() / v.len() as f64;
    let c = v.mapv(|x| (x - m) * s);
    if s > 0.0 {
        Stats {
            mean: m,
            spread: (c.dot(&c), s * m),
            centred: c,
        }
    } else {
        Stats {
            centred: c.mapv(|x| -x),
            mean: -m,
            spread: (0.0, s),
        }
    }
}

#[differentiable]
fn scaled(d: &Dense, s: f64) -> Dense {
    Dense {
        w: &d.w * s,
        b: d.b.mapv(|v| (v * s).tanh()),
    }
}

#[test]
fn struct_outputs() {
    let v = Array1::from(vec![1.0, -2.0, 0.5, 3.0]);
    let dv = Array1::from(vec![0.3, 0.1, -0.2, 0.4]);
    for s in [0.7, -1.3] {
        let y = stats(&v, s);
        let (yj, t) = stats_jvp(&v, s, &dv, 0.5);
        assert_eq!(y, yj);
        let ct = StatsTangent {
            mean: 0.3,
            spread: (-0.5, 1.1),
            centred: Array1::from(vec![0.2, -0.1, 0.7, 0.05]),
        };
        let (yv, (gv, gs)) = stats_vjp(&v, s, &ct);
        assert_eq!(y, yv);
        assert_close(ct.dot(&t), gv.dot(&dv) + gs * 0.5, 1e-12);
        let h = 1e-6;
        let at = |k: f64| stats(&(&v + &(&dv * k)), s + 0.5 * k);
        let fd = (at(h).spread.0 - at(-h).spread.0) / (2.0 * h);
        assert_close(t.spread.0, fd, 1e-6);
        let (yl, lin) = stats_linearize(&v, s);
        assert_eq!(yl, y);
        assert_eq!(lin(&dv, 0.5), t);
        let (_, pb) = stats_pullback(&v, s);
        assert_eq!(pb(&ct).0, gv);
    }
    let d = Dense {
        w: Array2::from_elem((2, 2), 0.5),
        b: Array1::from(vec![0.1, -0.4]),
    };
    let out = scaled(&d, 2.0);
    let dd = DenseTangent {
        w: Array2::from_elem((2, 2), 1.0),
        b: Array1::from(vec![1.0, 1.0]),
    };
    let (o2, t) = scaled_jvp(&d, 2.0, &dd, 0.0);
    assert_eq!(out.w, o2.w);
    assert_eq!(t.w, Array2::from_elem((2, 2), 2.0));
    let (_, (gd, _)) = scaled_vjp(&d, 2.0, &dd);
    assert_close(gd.dot(&dd), t.dot(&dd), 1e-12);
}

/// Struct parameters destructured by `let`: by reference (names bind
/// references), nested, renamed, with `..`, and a struct taken by value.
#[differentiable]
fn mlp_loss_destructured(p: &Mlp, x: &Array2<f64>, y: &Array2<f64>) -> f64 {
    let Mlp {
        w1,
        b1,
        w2,
        b2: bias,
        act,
        ..
    } = p;
    let h = x.dot(&w1.t()) + b1;
    let h = if *act == 0 {
        h.mapv(|v| v.tanh())
    } else {
        h.mapv(|v| v.max(0.0))
    };
    let out = h.dot(&w2.t()) + bias;
    let d = &out - y;
    let Mlp { scale, .. } = p;
    scale * (&d * &d).sum() / (y.len() as f64)
}

#[differentiable(wrt(m))]
fn model_value_destructured(m: Model, x: &Array1<f64>) -> f64 {
    let Model {
        first: Layer { w, shift: (s0, s1) },
        coeffs,
        order,
        damping,
    } = m;
    let mut s = s0 * damping;
    for k in 0..order {
        s += coeffs[k] * x.dot(&w).powi(k as i32);
    }
    s + s1.sin()
}

#[test]
fn destructured_struct_parameters() {
    let mut r = rng("destructured_struct_parameters");
    let x = Array2::from_shape_fn((5, 3), |_| r.normal());
    let y = Array2::from_shape_fn((5, 2), |_| r.normal());
    for act in [0, 1] {
        let p = mlp(&mut r, act);
        let dp = tangent(&mut r, &p);
        let dx = Array2::from_shape_fn((5, 3), |_| r.normal());
        let dy = Array2::zeros((5, 2));
        assert_eq!(
            mlp_loss_destructured(&p, &x, &y).to_bits(),
            mlp_loss(&p, &x, &y).to_bits()
        );
        let a = mlp_loss_destructured_jvp(&p, &x, &y, &dp, &dx, &dy);
        let b = mlp_loss_jvp(&p, &x, &y, &dp, &dx, &dy);
        assert_eq!(a.0.to_bits(), b.0.to_bits());
        assert_close(a.1, b.1, 1e-12);
        let (ga, _, _) = mlp_loss_destructured_vjp(&p, &x, &y, 1.0).1;
        let (gb, _, _) = mlp_loss_vjp(&p, &x, &y, 1.0).1;
        assert_close(ga.dot(&dp), gb.dot(&dp), 1e-12);
    }
    let m = Model {
        first: Layer {
            w: Array1::from(vec![0.3, -0.2, 0.5]),
            shift: (0.4, 1.1),
        },
        coeffs: vec![1.0, -0.5, 0.25],
        order: 3,
        damping: 0.9,
    };
    let x = Array1::from(vec![1.0, 2.0, -1.0]);
    assert_eq!(
        model_value_destructured(m.clone(), &x).to_bits(),
        model_value(m.clone(), &x).to_bits()
    );
    let g = model_value_destructured_vjp(m.clone(), &x, 1.0).1;
    assert_eq!(g, model_value_vjp(m.clone(), &x, 1.0).1);
}

/// Names bound to a struct parameter or one of its nested structs
/// (`let l = &net.first;`, `let n = net;`), read through and passed on.
#[differentiable]
fn net_loss_aliased(net: &Net, x: &Array1<f64>) -> f64 {
    let n = net;
    let l = &n.first;
    let h = (l.w.dot(x) + &l.b).mapv(f64::tanh);
    let second = n.second.clone();
    let o = dense(&second, &h);
    o.dot(&o)
}

#[test]
fn aliases_of_struct_parameters() {
    let net = random_net("aliases_of_struct_parameters");
    let x = Array1::from(vec![0.5, -1.0, 0.25]);
    assert_eq!(
        net_loss_aliased(&net, &x).to_bits(),
        net_loss(&net, &x).to_bits()
    );
    let (_, (ga, gxa)) = net_loss_aliased_vjp(&net, &x, 1.0);
    let (_, (gb, gxb)) = net_loss_vjp(&net, &x, 1.0);
    assert_eq!(ga, gb);
    assert_eq!(gxa, gxb);
}

/// An alias of a nested struct read inside macros (`array![l.b[0], ..]`,
/// `s![..l.b.len() - 1]`): the same bits and gradient as the body written
/// through `net.first`.
#[differentiable]
fn aliased_in_macros(net: &Net, x: &Array1<f64>) -> f64 {
    let l = &net.first;
    let v = linad::ndarray::array![l.b[0], 2.0 * l.b[1], x[0]];
    v.dot(&v) * l.b.slice(linad::ndarray::s![..l.b.len() - 1]).sum() + l.w.dot(x).sum()
}

#[differentiable]
fn unaliased_in_macros(net: &Net, x: &Array1<f64>) -> f64 {
    let v = linad::ndarray::array![net.first.b[0], 2.0 * net.first.b[1], x[0]];
    v.dot(&v)
        * net
            .first
            .b
            .slice(linad::ndarray::s![..net.first.b.len() - 1])
            .sum()
        + net.first.w.dot(x).sum()
}

#[test]
fn aliases_read_inside_macros() {
    let net = random_net("aliases_read_inside_macros");
    let x = Array1::from(vec![0.5, -1.0, 0.25]);
    let y = aliased_in_macros(&net, &x);
    assert_eq!(y.to_bits(), unaliased_in_macros(&net, &x).to_bits());
    let (ya, (ga, gxa)) = aliased_in_macros_vjp(&net, &x, 1.0);
    let (_, (gb, gxb)) = unaliased_in_macros_vjp(&net, &x, 1.0);
    assert_eq!(ya.to_bits(), y.to_bits());
    assert_eq!(ga, gb);
    assert_eq!(gxa, gxb);
    assert!(ga.first.b.iter().any(|v| *v != 0.0));
}

/// Callers of functions returning structs: the result bound by `let` and
/// read through its fields (a tuple field too), from a plain function and
/// from one taking a struct.
#[differentiable]
fn stats_score(v: &Array1<f64>, s: f64) -> f64 {
    let st = stats(v, s);
    let spread: (f64, f64) = st.spread;
    st.mean * st.spread.0 + st.centred.sum() * spread.1
}

/// The same reads inside macros (`array![st.mean, ..]`, `s![..st.centred.len() - 1]`).
#[differentiable]
fn stats_in_macros(v: &Array1<f64>, s: f64) -> f64 {
    let st = stats(v, s);
    let a = linad::ndarray::array![st.mean, st.spread.0, st.centred[0]];
    a.dot(&a)
        + st.centred
            .slice(linad::ndarray::s![..st.centred.len() - 1])
            .sum()
}

#[differentiable]
fn scaled_norm(d: &Dense, s: f64) -> f64 {
    let e = scaled(d, s);
    (&e.w * &e.w).sum() + e.b.dot(&e.b)
}

#[test]
fn struct_results_of_calls() {
    let v = Array1::from(vec![1.0, -2.0, 0.5, 3.0]);
    let dv = Array1::from(vec![0.3, 0.1, -0.2, 0.4]);
    for s in [0.7, -1.3] {
        let y = stats_score(&v, s);
        let (yv, (gv, gs)) = stats_score_vjp(&v, s, 1.0);
        let (yj, dy) = stats_score_jvp(&v, s, &dv, 0.5);
        assert_eq!(y.to_bits(), yv.to_bits());
        assert_eq!(y.to_bits(), yj.to_bits());
        assert_close(dy, gv.dot(&dv) + gs * 0.5, 1e-12);
        let h = 1e-6;
        let at = |k: f64| stats_score(&(&v + &(&dv * k)), s + 0.5 * k);
        assert_close(dy, (at(h) - at(-h)) / (2.0 * h), 1e-6);
    }
    for s in [0.7, -1.3] {
        check_derivatives(
            &(v.clone(), s),
            |(v, s)| stats_in_macros(v, *s),
            |(v, s), (dv, ds)| stats_in_macros_jvp(v, *s, dv, *ds),
            |(v, s), ct| stats_in_macros_vjp(v, *s, *ct),
        );
    }
    let d = Dense {
        w: Array2::from_shape_fn((2, 3), |(i, j)| 0.2 * i as f64 - 0.1 * j as f64),
        b: Array1::from(vec![0.1, -0.4]),
    };
    let (y, (gd, gs)) = scaled_norm_vjp(&d, 1.5, 1.0);
    assert_eq!(y.to_bits(), scaled_norm(&d, 1.5).to_bits());
    // d/dw of s^2 |w|^2 is 2 s^2 w.
    assert_close(gd.w[[1, 2]], 2.0 * 1.5 * 1.5 * d.w[[1, 2]], 1e-12);
    let h = 1e-6;
    let fd = (scaled_norm(&d, 1.5 + h) - scaled_norm(&d, 1.5 - h)) / (2.0 * h);
    assert_close(gs, fd, 1e-6);
}

/// A struct output with a constant field: the companions return `f`'s own
/// struct (the constant field included), the tangent and cotangent hold the
/// fields with a derivative; a caller reads those.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Solved {
    pub y: Array1<f64>,
    pub r: f64,
    #[linad(constant)]
    pub steps: usize,
}

#[differentiable]
fn solve(x: &Array1<f64>, s: f64) -> Solved {
    let y = x.mapv(|v| (v * s).sin());
    let steps = x.len() * 2;
    Solved {
        r: y.dot(&y) + s,
        y,
        steps,
    }
}

#[differentiable]
fn solve_loss(x: &Array1<f64>, s: f64) -> f64 {
    let out = solve(x, s);
    out.y.sum() * out.r
}

#[test]
fn struct_outputs_with_constant_fields() {
    let x = Array1::from(vec![0.3, -1.2, 0.8]);
    let dx = Array1::from(vec![1.0, 0.5, -0.25]);
    let y = solve(&x, 0.7);
    let (yj, t) = solve_jvp(&x, 0.7, &dx, 0.1);
    assert_eq!(yj, y);
    assert_eq!(yj.steps, 6);
    let ct = SolvedTangent {
        y: Array1::from(vec![0.2, -0.4, 1.0]),
        r: 0.6,
    };
    let (yv, (gx, gs)) = solve_vjp(&x, 0.7, &ct);
    assert_eq!(yv, y);
    assert_close(ct.dot(&t), gx.dot(&dx) + gs * 0.1, 1e-12);
    let (yl, lin) = solve_linearize(&x, 0.7);
    assert_eq!(yl, y);
    assert_eq!(lin(&dx, 0.1), t);
    let (yp, pb) = solve_pullback(&x, 0.7);
    assert_eq!(yp, y);
    assert_eq!(pb(&ct).0, gx);
    let h = 1e-6;
    let at = |k: f64| solve(&(&x + &(&dx * k)), 0.7 + 0.1 * k).r;
    assert_close(t.r, (at(h) - at(-h)) / (2.0 * h), 1e-6);
    let (l, (glx, gls)) = solve_loss_vjp(&x, 0.7, 1.0);
    assert_eq!(l.to_bits(), solve_loss(&x, 0.7).to_bits());
    let (_, dl) = solve_loss_jvp(&x, 0.7, &dx, 0.1);
    assert_close(dl, glx.dot(&dx) + gls * 0.1, 1e-12);
}

/// A struct result destructured by `let` (a tuple field by a tuple
/// pattern, the rest left to `..`), and one with a constant field skipped.
#[differentiable]
fn stats_destructured(v: &Array1<f64>, s: f64) -> f64 {
    let Stats {
        mean,
        spread: (a, _),
        ..
    } = stats(v, s);
    let Solved { r, steps: _, .. } = solve(v, s);
    mean * a + r
}

#[test]
fn struct_results_destructured() {
    let v = Array1::from(vec![1.0, -2.0, 0.5, 3.0]);
    let dv = Array1::from(vec![0.3, 0.1, -0.2, 0.4]);
    let y = stats_destructured(&v, 0.7);
    let (yv, (gv, gs)) = stats_destructured_vjp(&v, 0.7, 1.0);
    assert_eq!(y.to_bits(), yv.to_bits());
    let h = 1e-6;
    let at = |k: f64| stats_destructured(&(&v + &(&dv * k)), 0.7 + 0.5 * k);
    assert_close(gv.dot(&dv) + gs * 0.5, (at(h) - at(-h)) / (2.0 * h), 1e-6);
}

/// A field named by a raw identifier (the flat parameter's name is built
/// from the field's name without `r#`; the fuzzer's struct twins found the
/// internal error it was).
#[derive(Differentiable, Clone, Debug)]
pub struct Raw {
    pub r#type: f64,
    pub r#in: Array1<f64>,
}

#[differentiable]
fn raw_fields(p: &Raw) -> f64 {
    p.r#type * p.r#in.sum()
}

#[test]
fn raw_identifier_fields() {
    let p = Raw {
        r#type: 2.0,
        r#in: Array1::from(vec![1.0, 3.0]),
    };
    let (y, g) = raw_fields_vjp(&p, 1.0);
    assert_eq!(y, raw_fields(&p));
    assert_eq!(y, 8.0);
    assert_eq!(g.r#type, 4.0);
    assert_eq!(g.r#in, Array1::from(vec![2.0, 2.0]));
}

/// A struct output with `Vec` fields (the flat function returns them as
/// `Array1`s; the companions give `Vec`s back), one built by a `vec![..]`
/// literal, one by `.collect()` and `Array1::from` of a collected `Vec`, and
/// a caller reading them.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Moments {
    pub powers: Vec<f64>,
    pub scaled: Vec<f64>,
    pub total: f64,
}

#[differentiable]
fn moments(v: &[f64], s: f64) -> Moments {
    let m1 = v.iter().sum::<f64>();
    let m2 = v.iter().map(|x| x * x).sum::<f64>();
    let scaled: Vec<f64> = v.iter().map(|x| x * s).collect();
    let a = Array1::from(scaled.clone());
    Moments {
        powers: vec![m1, m2 * s],
        total: a.sum() + m2,
        scaled,
    }
}

#[differentiable]
fn moments_loss(v: &[f64], s: f64) -> f64 {
    let m = moments(v, s);
    m.powers[0] * m.powers[1] + m.scaled[2] * m.total
}

#[test]
fn struct_outputs_with_vec_fields() {
    let v = vec![0.3, -1.2, 0.8, 2.0];
    let dv = vec![1.0, 0.5, -0.25, 0.3];
    let y = moments(&v, 0.7);
    let (yj, t) = moments_jvp(&v, 0.7, &dv, 0.1);
    assert_eq!(yj, y);
    let ct = MomentsTangent {
        powers: vec![0.2, -0.4],
        scaled: vec![1.0, 0.5, -0.3, 0.7],
        total: 0.6,
    };
    let (yv, (gv, gs)) = moments_vjp(&v, 0.7, &ct);
    assert_eq!(yv, y);
    let gdv: f64 = gv.iter().zip(&dv).map(|(a, b)| a * b).sum();
    assert_close(ct.dot(&t), gdv + gs * 0.1, 1e-12);
    let (yl, lin) = moments_linearize(&v, 0.7);
    assert_eq!(yl, y);
    assert_eq!(lin(&dv, 0.1), t);
    let (yp, pb) = moments_pullback(&v, 0.7);
    assert_eq!(yp, y);
    assert_eq!(pb(&ct).0, gv);
    let h = 1e-6;
    let at = |k: f64| {
        let vk: Vec<f64> = v.iter().zip(&dv).map(|(a, b)| a + b * k).collect();
        moments(&vk, 0.7 + 0.1 * k)
    };
    let (p, m) = (at(h), at(-h));
    assert_close(t.powers[1], (p.powers[1] - m.powers[1]) / (2.0 * h), 1e-6);
    assert_close(t.scaled[3], (p.scaled[3] - m.scaled[3]) / (2.0 * h), 1e-6);
    assert_close(t.total, (p.total - m.total) / (2.0 * h), 1e-6);
    let (l, (glv, gls)) = moments_loss_vjp(&v, 0.7, 1.0);
    assert_eq!(l.to_bits(), moments_loss(&v, 0.7).to_bits());
    let (_, dl) = moments_loss_jvp(&v, 0.7, &dv, 0.1);
    let gldv: f64 = glv.iter().zip(&dv).map(|(a, b)| a * b).sum();
    assert_close(dl, gldv + gls * 0.1, 1e-12);
    let fl = |k: f64| {
        let vk: Vec<f64> = v.iter().zip(&dv).map(|(a, b)| a + b * k).collect();
        moments_loss(&vk, 0.7 + 0.1 * k)
    };
    assert_close(dl, (fl(h) - fl(-h)) / (2.0 * h), 1e-6);
}

/// A struct with an `f32` field passed to another `#[differentiable]`
/// function: the callee's flat function is an `f32` one (its derivatives
/// come from its `f64` shadow) though its own source never says `f32`
/// (the call did not compile: the caller named the non-shadow blocks).
#[derive(Differentiable, Clone, Debug)]
pub struct Mixed {
    pub w: Array1<f64>,
    pub k: f32,
}

/// A struct output.
#[derive(Differentiable, Clone, Debug)]
pub struct Spread {
    pub mean: f64,
    pub square: f64,
}

#[differentiable]
fn spread_of(p: &Mixed, x: &Array1<f64>) -> Spread {
    let m = (&p.w * x).sum();
    Spread {
        mean: m,
        square: m * m,
    }
}

#[differentiable]
fn mixed_caller(p: &Mixed) -> f64 {
    let s = spread_of(p, &p.w);
    s.mean + s.square * (p.k as f64)
}

#[test]
fn calls_of_functions_of_f32_structs() {
    let p = Mixed {
        w: Array1::from(vec![1.0, 2.0]),
        k: 0.5,
    };
    // m = |w|^2 = 5, value m + k m^2, d/dw = (1 + 2 k m) 2 w, d/dk = m^2.
    let (v, g) = mixed_caller_vjp(&p, 1.0);
    assert_eq!(v.to_bits(), mixed_caller(&p).to_bits());
    assert_eq!(v, 17.5);
    assert_eq!(g.w.to_vec(), vec![12.0, 24.0]);
    assert_eq!(g.k, 25.0);
}
