use linad::differentiable;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Fast,
    Exact,
}

// Reported with the body's other errors.
#[differentiable]
fn f(x: f64, mode: Mode) -> f64 {
    assert!(mode != Mode::Fast || x > 0.0);
    let _y = x.to_bits();
    match mode {
        Mode::Fast => x,
        Mode::Exact => x * x,
    }
}

fn main() {}
