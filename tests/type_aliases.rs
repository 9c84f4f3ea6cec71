//! Type aliases of the crate in signatures: `type V = Array1<f64>;` (by
//! reference and as a result), an alias of an alias, of `f64` and of a
//! fixed-size array. Each reads as the type it stands for: the derivatives
//! take and return the aliased types, pass the checker, and the primal
//! bits are `f`'s. (Aliases with parameters, such as one of a view with
//! its lifetime, are not read: write the type out.)

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::Array1;

type V = Array1<f64>;
type W = V;
type Real = f64;
type P3 = [f64; 3];

#[differentiable]
fn weighted(v: &V, a: Real, p: P3) -> Real {
    v.mapv(|x| (x * a).sin()).sum() + p[0] * p[1] - p[2] * a
}

#[differentiable]
fn squashed(w: &W) -> V {
    w.mapv(|x| x.tanh() * x)
}

#[test]
fn aliases_read_as_their_types() {
    let mut rng = rng("aliases_read_as_their_types");
    let v = rng.array1(5, -1.0, 1.0);
    // (The checker holds the fixed-size array as an `Array1`.)
    let p3 = |p: &Array1<f64>| -> P3 { [p[0], p[1], p[2]] };
    let x = (v.clone(), 0.7, Array1::from(vec![1.3, -0.4, 2.1]));
    check_derivatives(
        &x,
        |(v, a, p)| weighted(v, *a, p3(p)),
        |(v, a, p), (dv, da, dp)| weighted_jvp(v, *a, p3(p), dv, *da, p3(dp)),
        |(v, a, p), ct| {
            let (y, (gv, ga, gp)) = weighted_vjp(v, *a, p3(p), *ct);
            (y, (gv, ga, Array1::from(gp.to_vec())))
        },
    );
    let (y, _) = weighted_vjp(&v, 0.7, [1.3, -0.4, 2.1], 1.0);
    assert_eq!(y.to_bits(), weighted(&v, 0.7, [1.3, -0.4, 2.1]).to_bits());
    check_derivatives(&v, squashed, squashed_jvp, squashed_vjp);
}
