use linad::differentiable;

// A `break` inside an `if` that is not at the top level of the loop body.
#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let mut y = x;
    for _ in 0..n {
        if y > 1.0 {
            if y > 10.0 {
                break;
            }
            y = y * 0.5;
        }
        y = y * x;
    }
    y
}

fn main() {}
