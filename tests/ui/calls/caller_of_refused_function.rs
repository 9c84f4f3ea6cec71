use linad::differentiable;

// `g` is refused (a `loop` with no `break`): its one error is all the user
// sees, no error about `g`'s derivatives missing in its caller `f`.
#[differentiable]
fn g(x: f64) -> f64 {
    let mut y = x;
    loop {
        y = y * 0.5;
    }
}

#[differentiable]
fn f(x: f64) -> f64 {
    g(x) * 2.0
}

fn main() {}
