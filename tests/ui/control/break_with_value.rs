use linad::differentiable;

// `loop` as an expression: `break` with a value.
#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    let z = loop {
        y = y * 2.0;
        if y > 10.0 {
            break y;
        }
    };
    z
}

fn main() {}
