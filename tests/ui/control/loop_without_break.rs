use linad::differentiable;

// A `loop` must end by a `break` linad can follow.
#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    loop {
        y = y * 2.0;
        if y > 10.0 {
            return y;
        }
    }
}

fn main() {}
