use linad::differentiable;

// Labelled loops are supported, and a `break` with a value out of a
// labelled `loop`; out of a `for` neither Rust nor linad takes one. A
// labelled block is refused.
#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let mut y = x;
    'outer: for _ in 0..n {
        for _ in 0..n {
            y = y * x;
            if y > 2.0 {
                break 'outer y;
            }
        }
    }
    let w = 'b: {
        y * 2.0
    };
    w
}

fn main() {}
