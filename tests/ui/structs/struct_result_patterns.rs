use linad::differentiable;

#[derive(linad::Differentiable, Clone)]
pub struct Inner {
    pub a: f64,
}

#[derive(linad::Differentiable, Clone)]
pub struct Res {
    pub inner: Inner,
    pub c: f64,
    #[linad(constant)]
    pub n: usize,
}

#[differentiable]
fn make(x: f64) -> Res {
    Res {
        inner: Inner { a: x * x },
        c: x,
        n: 3,
    }
}

#[differentiable]
fn f(x: f64) -> f64 {
    let whole @ Res { .. } = make(x);
    let Res { inner, .. } = make(x);
    let Res { c, n, .. } = make(x);
    c * x
}

fn main() {}
