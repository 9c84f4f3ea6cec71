//! `const` and `static` items read by `#[differentiable]` bodies, as numeric
//! code writes them: module-level constants (`f64`, integer, `bool`), one
//! in a module reached by path, a `static`, and constants declared inside
//! the body (before or after their use). The derivatives read the same
//! values as `f` (the path itself is emitted), so the primals are
//! bit-identical and the derivatives match finite differences.

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::Array1;

/// A small number keeping `sqrt` differentiable at zero.
const EPS: f64 = 1e-8;
/// A loop bound.
const TERMS: usize = 4;
/// A switch.
const SMOOTH: bool = true;
/// A `static` scale.
static SCALE: f64 = 0.75;

/// Physical constants, reached by path.
mod phys {
    /// Gravitational acceleration.
    pub const G: f64 = 9.81;
}

/// A smoothed norm with a truncated series, reading every kind of constant.
#[differentiable]
fn smoothed(x: &Array1<f64>, a: f64) -> f64 {
    let n = x.iter().map(|v| (v * v + EPS).sqrt()).sum::<f64>();
    let mut s = 0.0;
    let mut term = 1.0;
    for k in 0..TERMS {
        term *= a / (k as f64 + 1.0);
        s += term;
    }
    let g = if SMOOTH { phys::G * a } else { a };
    SCALE * n + s + g
}

#[test]
fn module_constants_read_as_in_f() {
    let mut rng = rng("consts");
    let x = (rng.array1(5, -1.0, 1.0), 0.3);
    let y = smoothed(&x.0, x.1);
    assert_eq!(smoothed_jvp(&x.0, x.1, &x.0, 1.0).0.to_bits(), y.to_bits());
    assert_eq!(smoothed_vjp(&x.0, x.1, 1.0).0.to_bits(), y.to_bits());
    check_derivatives(
        &x,
        |(v, a)| smoothed(v, *a),
        |(v, a), (dv, da)| smoothed_jvp(v, *a, dv, *da),
        |(v, a), ct| smoothed_vjp(v, *a, *ct),
    );
    // d/da at the truncated series: 1 + a + a^2/2 + a^3/6, plus G.
    let (_, (_, da)) = smoothed_vjp(&x.0, x.1, 1.0);
    let a = x.1;
    let want = 1.0 + a + a * a / 2.0 + a * a * a / 6.0 + phys::G;
    assert!((da - want).abs() < 1e-12, "{da} against {want}");
}

/// Constants declared in the body: one used before its declaration (an
/// item is visible in its whole block), one in a closure's block.
#[differentiable]
fn local_consts(x: f64) -> f64 {
    let y = x * TWO;
    const TWO: f64 = 2.0;
    let f = |t: f64| {
        const HALF: f64 = 0.5;
        t * HALF + OFFSET
    };
    static OFFSET: f64 = 1.25;
    f(y * y)
}

#[test]
fn body_constants_are_visible_to_their_whole_block() {
    for x in [-1.5, 0.0, 0.7] {
        let y = local_consts(x);
        assert_eq!(y, (2.0 * x) * (2.0 * x) * 0.5 + 1.25);
        let (yv, g) = local_consts_vjp(x, 1.0);
        assert_eq!(yv.to_bits(), y.to_bits());
        assert!((g - 4.0 * x).abs() < 1e-12);
        let (yj, t) = local_consts_jvp(x, 1.0);
        assert_eq!(yj.to_bits(), y.to_bits());
        assert!((t - 4.0 * x).abs() < 1e-12);
    }
}
