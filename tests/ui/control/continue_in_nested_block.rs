use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let mut y = x;
    for i in 0..n {
        let t = {
            if i == 2 {
                continue;
            }
            x
        };
        y = y * t;
    }
    y
}

fn main() {}
