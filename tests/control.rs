//! Control flow through `#[differentiable]`: `if` / `else if` / `else` as
//! expressions and statements, comparisons and boolean operators, `bool`
//! parameters, counted `for` loops (ascending and `.rev()`) updating scalars,
//! tuples and local arrays, nested loops; `while` and `loop` with `break`,
//! `break` and `continue` in `for`.
#![allow(
    clippy::needless_range_loop,
    clippy::assign_op_pattern,
    clippy::nonminimal_bool,
    clippy::neg_cmp_op_on_partial_ord,
    clippy::float_cmp,
    clippy::manual_range_contains,
    clippy::collapsible_else_if,
    clippy::needless_late_init,
    clippy::redundant_closure
)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{Array1, Array2};

// --- if ---------------------------------------------------------------------

/// `if` / `else if` / `else` as the tail expression.
#[differentiable]
fn piecewise(x: f64) -> f64 {
    if x > 0.5 {
        x.sin() * x
    } else if x < -0.5 {
        x * x * x
    } else {
        x.exp()
    }
}

#[test]
fn if_else_if_else_expression() {
    for x in [1.2, -1.3, 0.1] {
        check_derivatives(
            &x,
            |x| piecewise(*x),
            |x, dx| piecewise_jvp(*x, *dx),
            |x, ct| piecewise_vjp(*x, *ct),
        );
    }
}

/// `if` as a statement updating mutable variables; `if` without `else`;
/// `if` as the initialiser of a `let`.
#[differentiable]
fn if_statements(x: f64, y: f64) -> f64 {
    let mut a = x * y;
    let mut b = y;
    if x > y {
        a = a * 2.0;
        b += x;
    } else {
        a -= 1.0;
    }
    if a < 0.0 {
        b *= a;
    }
    let c = if b >= 1.0 { b.ln() } else { b * 0.5 };
    a + b + c
}

#[test]
fn if_as_statement() {
    for p in [(1.5, 0.8), (0.3, 1.4), (-0.9, 2.5), (2.0, 1.9)] {
        check_derivatives(
            &p,
            |(x, y)| if_statements(*x, *y),
            |(x, y), (dx, dy)| if_statements_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| if_statements_vjp(*x, *y, *ct),
        );
    }
}

/// Comparisons `< <= > >= == !=` and `&& || !` in conditions.
#[differentiable]
fn boolean_logic(x: f64, y: f64) -> f64 {
    let inside = x > -1.0 && x <= 1.0;
    let close = (x - y).abs() < 0.1 || x == y;
    let mut r = x + y;
    if inside && !close {
        r = r * x;
    }
    if !(y >= 0.0) || x != 0.5 {
        r += y * y;
    }
    if close {
        r -= 1.0;
    }
    r
}

#[test]
fn comparisons_and_boolean_operators() {
    for p in [(0.3, 0.9), (0.5, -0.7), (1.5, 1.55)] {
        check_derivatives(
            &p,
            |(x, y)| boolean_logic(*x, *y),
            |(x, y), (dx, dy)| boolean_logic_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| boolean_logic_vjp(*x, *y, *ct),
        );
    }
    // At x == 0.5 the condition `x != 0.5` is false only on a set of measure
    // zero, so finite differences step across it: check the derivatives
    // against each other and the hand-computed values instead.
    let no_fd = CheckOptions {
        fd_rel_tol: f64::INFINITY,
        ..CheckOptions::default()
    };
    check_derivatives_with(
        &no_fd,
        &(0.5, 0.8),
        |(x, y)| boolean_logic(*x, *y),
        |(x, y), (dx, dy)| boolean_logic_jvp(*x, *y, *dx, *dy),
        |(x, y), ct| boolean_logic_vjp(*x, *y, *ct),
    );
    // r = (x + y) x: dr/dx = 2x + y, dr/dy = x
    let (_, (gx, gy)) = boolean_logic_vjp(0.5, 0.8, 1.0);
    assert_close(gx, 1.8, 1e-15);
    assert_close(gy, 0.5, 1e-15);
}

/// A `bool` parameter is a constant.
#[differentiable]
fn select(x: f64, y: f64, use_x: bool) -> f64 {
    let s = if use_x { x * x } else { y.sin() };
    if !use_x && y > 0.0 {
        s + y
    } else {
        s
    }
}

#[test]
fn bool_parameter() {
    for flag in [true, false] {
        check_derivatives(
            &(0.7, 0.4),
            |(x, y)| select(*x, *y, flag),
            |(x, y), (dx, dy)| select_jvp(*x, *y, flag, *dx, *dy),
            |(x, y), ct| select_vjp(*x, *y, flag, *ct),
        );
    }
}

/// Nested `if`s inside both branches.
#[differentiable]
fn nested_if(x: f64, y: f64) -> f64 {
    if x > 0.0 {
        if y > 0.0 {
            x * y
        } else {
            x - y
        }
    } else {
        if y > x {
            (x + y).cos()
        } else {
            x / (1.0 + y * y)
        }
    }
}

#[test]
fn nested_if_else() {
    for p in [(0.4, 0.6), (0.4, -0.6), (-0.4, 0.6), (-0.4, -0.9)] {
        check_derivatives(
            &p,
            |(x, y)| nested_if(*x, *y),
            |(x, y), (dx, dy)| nested_if_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| nested_if_vjp(*x, *y, *ct),
        );
    }
}

// --- for loops --------------------------------------------------------------

/// A loop updating one mutable scalar: Horner's scheme with the loop index
/// as a coefficient.
#[differentiable]
fn horner(x: f64, n: usize) -> f64 {
    let mut acc = 1.0;
    for i in 0..n {
        acc = acc * x + (i as f64) * 0.5;
    }
    acc
}

#[test]
fn for_loop_scalar_state() {
    for n in [0, 1, 5, 12] {
        check_derivatives(
            &0.8,
            |x| horner(*x, n),
            |x, dx| horner_jvp(*x, n, *dx),
            |x, ct| horner_vjp(*x, n, *ct),
        );
    }
}

/// `(a..b).rev()` with a non-commutative update, so the order matters; bounds
/// are integer expressions.
#[differentiable]
fn reversed(x: f64, y: f64, n: usize) -> f64 {
    let mut s = y;
    for i in (1..n + 1).rev() {
        s = (s * x).sin() + (i as f64) * s;
    }
    s
}

#[test]
fn for_loop_reversed() {
    for n in [0, 1, 4] {
        check_derivatives(
            &(0.6, 0.3),
            |(x, y)| reversed(*x, *y, n),
            |(x, y), (dx, dy)| reversed_jvp(*x, *y, n, *dx, *dy),
            |(x, y), ct| reversed_vjp(*x, *y, n, *ct),
        );
    }
}

/// Several mutable scalars and a tuple carried by one loop (a rotation
/// and a running product).
#[differentiable]
fn rotate(x: f64, y: f64, theta: f64, n: usize) -> (f64, f64) {
    let mut p = (x, y);
    let mut prod = 1.0;
    let mut count = 0.0;
    for _ in 0..n {
        let (a, b) = p;
        p = (
            a * theta.cos() - b * theta.sin(),
            a * theta.sin() + b * theta.cos(),
        );
        prod *= 1.0 + 0.1 * p.0;
        count += 1.0;
    }
    (p.0 * prod, p.1 + count)
}

#[test]
fn for_loop_tuple_state() {
    check_derivatives(
        &(1.0, 0.5, 0.3),
        |(x, y, t)| rotate(*x, *y, *t, 6),
        |(x, y, t), (dx, dy, dt)| rotate_jvp(*x, *y, *t, 6, *dx, *dy, *dt),
        |(x, y, t), ct| rotate_vjp(*x, *y, *t, 6, *ct),
    );
}

/// A loop with an `if` inside, and a loop whose bounds are not zero-based.
#[differentiable]
fn loop_with_branch(x: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 2..n {
        let fi = i as f64;
        if i < 4 {
            s += (x * fi).sin();
        } else if fi > 4.5 {
            s -= x * x / fi;
        } else {
            s = s * x;
        }
    }
    s
}

#[test]
fn for_loop_with_if() {
    check_derivatives(
        &0.7,
        |x| loop_with_branch(*x, 9),
        |x, dx| loop_with_branch_jvp(*x, 9, *dx),
        |x, ct| loop_with_branch_vjp(*x, 9, *ct),
    );
}

/// A loop writing a local array with `arr[i] = e`, then a loop reading it.
#[differentiable]
fn local_array_writes(x: f64, y: f64, n: usize) -> f64 {
    let mut v = Array1::zeros(n);
    for i in 0..n {
        v[i] = x * (i as f64) + y * y;
    }
    for i in 1..n {
        v[i] = v[i] * v[i - 1].sin();
    }
    let mut s = 0.0;
    for i in 0..n {
        s += v[i];
    }
    s
}

#[test]
fn for_loop_local_array_assignment() {
    check_derivatives(
        &(0.3, 0.5),
        |(x, y)| local_array_writes(*x, *y, 6),
        |(x, y), (dx, dy)| local_array_writes_jvp(*x, *y, 6, *dx, *dy),
        |(x, y), ct| local_array_writes_vjp(*x, *y, 6, *ct),
    );
}

/// Nested loops accumulating into a local matrix with `m[[i, j]] += e`.
#[differentiable]
fn nested_accumulate(a: &Array2<f64>, x: f64) -> f64 {
    let (r, c) = a.dim();
    let mut m: Array2<f64> = Array2::zeros((r, c));
    for i in 0..r {
        for j in 0..c {
            m[[i, j]] += a[[i, j]] * x;
            if j > 0 {
                m[[i, j]] += m[[i, j - 1]] * 0.5;
            }
        }
    }
    let mut s = 0.0;
    for i in 0..r {
        for j in 0..c {
            s += m[[i, j]] * m[[i, j]];
        }
    }
    s
}

#[test]
fn nested_loops_with_2d_updates() {
    let mut rng = rng("nested_accumulate");
    let a = rng.array2(3, 4, -1.0, 1.0);
    check_derivatives(
        &(a, 0.7),
        |(a, x)| nested_accumulate(a, *x),
        |(a, x), (da, dx)| nested_accumulate_jvp(a, *x, da, *dx),
        |(a, x), ct| nested_accumulate_vjp(a, *x, *ct),
    );
}

/// A loop over an array parameter updating a local array and a scalar (a
/// cumulative sum and a running maximum through `max`).
#[differentiable]
fn prefix_sums(v: &Array1<f64>) -> (Array1<f64>, f64) {
    let n = v.len();
    let mut out = Array1::zeros(n);
    let mut run = 0.0;
    let mut best = f64::NEG_INFINITY;
    for i in 0..n {
        run += v[i];
        out[i] = run;
        best = best.max(run);
    }
    (out, best)
}

#[test]
fn loop_building_array_output() {
    let v = Array1::from(vec![0.3, -0.1, 0.7, -0.4, 0.2]);
    check_derivatives(
        &v,
        |v| prefix_sums(v),
        |v, dv| prefix_sums_jvp(v, dv),
        |v, (cout, cbest)| prefix_sums_vjp(v, (cout, *cbest)),
    );
}

/// A triple loop nest with a reversed inner loop and shadowed loop variables.
#[differentiable]
fn triple_nest(x: f64, n: usize) -> f64 {
    let mut s = x;
    for i in 0..n {
        for j in (0..i).rev() {
            for k in 0..2 {
                let t = (i + j + k) as f64;
                s = s + (s * 0.1 * t).sin() * x;
            }
        }
    }
    s
}

#[test]
fn triple_nested_loops() {
    check_derivatives(
        &0.4,
        |x| triple_nest(*x, 4),
        |x, dx| triple_nest_jvp(*x, 4, *dx),
        |x, ct| triple_nest_vjp(*x, 4, *ct),
    );
}

// --- while, loop, break -------------------------------------------------------

/// `while` on a scalar state with an integer counter: the number of
/// iterations depends on the input (reverse mode records it).
#[differentiable]
fn halve_until_small(x: f64, c: f64) -> f64 {
    let mut y = x;
    let mut n = 0usize;
    while y > 1.0 {
        y = y / 2.0 * c;
        n += 1;
    }
    y * x + n as f64
}

#[test]
fn while_loop_scalar_state() {
    for p in [(37.0, 0.9), (0.5, 0.9), (1.5, 0.3), (1e3, 0.99)] {
        check_derivatives(
            &p,
            |(x, c)| halve_until_small(*x, *c),
            |(x, c), (dx, dc)| halve_until_small_jvp(*x, *c, *dx, *dc),
            |(x, c), ct| halve_until_small_vjp(*x, *c, *ct),
        );
    }
    // y = x (c/2)^n with n = 5 at x = 37, c = 0.9: dy/dx = (c/2)^5.
    let (_, (gx, _)) = halve_until_small_vjp(37.0, 0.9, 1.0);
    let y = 37.0 * 0.45f64.powi(5);
    assert_close(gx, y + 37.0 * 0.45f64.powi(5), 1e-12);
}

/// Newton's method ended by `break` inside `loop`, with a `let` before the
/// `break` that the rest of the body reads.
#[differentiable]
fn newton_sqrt(a: f64) -> f64 {
    let mut x = a.max(1.0);
    let mut k = 0;
    loop {
        let next = 0.5 * (x + a / x);
        k += 1;
        if (next - x).abs() <= 1e-15 * next || k == 60 {
            x = next;
            break;
        }
        x = next;
    }
    x
}

#[test]
fn loop_with_break_newton() {
    for a in [2.0, 9.0, 0.25, 1e6] {
        check_derivatives(
            &a,
            |a| newton_sqrt(*a),
            |a, da| newton_sqrt_jvp(*a, *da),
            |a, ct| newton_sqrt_vjp(*a, *ct),
        );
        assert_close(newton_sqrt(a), a.sqrt(), 1e-14);
        // Differentiating the iterations gives d sqrt(a) / da.
        assert_close(newton_sqrt_vjp(a, 1.0).1, 0.5 / a.sqrt(), 1e-9);
    }
}

/// `break` and `continue` in a `for` loop; a `while` with both a condition
/// and a `break`; an array carried by a `while` loop.
#[differentiable]
fn early_exits(v: &Array1<f64>, x: f64) -> (f64, Array1<f64>) {
    let mut s = 0.0;
    for i in 0..v.len() {
        if i % 3 == 2 {
            continue;
        }
        s += x * v[i];
        if s > 4.0 {
            break;
        }
        s += 0.25;
    }
    let mut t = s;
    while t.abs() > 0.1 {
        t = t * 0.7;
        if t.abs() < 0.5 {
            break;
        }
    }
    let mut w = v.clone();
    let mut k = 0;
    while w.sum() > 1.0 && k < 20 {
        w = &w * 0.5 + x * 0.01;
        k += 1;
    }
    (s + t, w)
}

#[test]
fn break_continue_and_array_state() {
    let v = Array1::from(vec![1.0, 0.7, 2.0, -0.3, 1.9, 2.2, 0.4]);
    for x in [0.9, 0.2, 3.0] {
        check_derivatives(
            &(v.clone(), x),
            |(v, x)| early_exits(v, *x),
            |(v, x), (dv, dx)| early_exits_jvp(v, *x, dv, *dx),
            |(v, x), ct| early_exits_vjp(v, *x, (ct.0, &ct.1)),
        );
    }
}

/// A `while` loop with no iteration and one whose count is zero at the
/// input: the companions return the primal unchanged.
#[differentiable]
fn maybe_zero_trips(x: f64, n: usize) -> f64 {
    let mut i = 0;
    let mut y = x;
    while i < n {
        y = y.sin() + x;
        i += 1;
    }
    y
}

#[test]
fn while_loop_zero_and_many_trips() {
    for n in [0usize, 1, 7] {
        check_derivatives(
            &0.3,
            |x| maybe_zero_trips(*x, n),
            |x, dx| maybe_zero_trips_jvp(*x, n, *dx),
            |x, ct| maybe_zero_trips_vjp(*x, n, *ct),
        );
    }
}

// --- field-less enums ------------------------------------------------------------

/// An activation chosen by an enum parameter (a constant: its
/// discriminant), matched with a guard and compared with `==`.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Act {
    Tanh,
    Relu,
    Leaky = 5,
    Poly,
}

#[differentiable]
fn activate(x: f64, act: Act, k: usize) -> f64 {
    let y = match act {
        Act::Tanh => x.tanh(),
        Act::Relu => x.max(0.0),
        Act::Leaky if k > 1 => x.max(0.01 * x) * k as f64,
        Act::Leaky => x.max(0.01 * x),
        Act::Poly => x * x * x,
    };
    if act == Act::Poly || act as usize == 5 {
        y * 2.0
    } else {
        y
    }
}

#[test]
fn match_on_a_field_less_enum() {
    for act in [Act::Tanh, Act::Relu, Act::Leaky, Act::Poly] {
        for (x, k) in [(0.7, 1usize), (-0.4, 3)] {
            check_derivatives(
                &x,
                |x| activate(*x, act, k),
                |x, dx| activate_jvp(*x, act, k, *dx),
                |x, ct| activate_vjp(*x, act, k, *ct),
            );
        }
    }
    // d/dx of 2 * 3 x (Leaky, k = 3, x > 0).
    assert_close(activate_vjp(0.5, Act::Leaky, 3, 1.0).1, 6.0, 1e-15);
    assert_close(
        activate_vjp(0.5, Act::Poly, 1, 1.0).1,
        2.0 * 3.0 * 0.25,
        1e-15,
    );
}

/// `while` and `loop` nested in `for`, in each other and in a
/// `from_shape_fn` closure; a `while` whose state is a local array.
#[differentiable]
fn nested_whiles(v: &Array1<f64>, x: f64) -> (f64, Array1<f64>) {
    let mut total = 0.0;
    for i in 0..v.len() {
        let mut y = v[i] * x;
        let mut k = 0;
        while y.abs() > 0.5 && k < 30 {
            y *= 0.6;
            let mut j = 0;
            loop {
                y += 0.01 * x;
                j += 1;
                if j >= 2 {
                    break;
                }
            }
            k += 1;
        }
        total += y;
    }
    let w = Array1::from_shape_fn(v.len(), |i| {
        let mut z = v[i];
        let mut n = 0;
        while z < x * 4.0 && n < 10 {
            z = z * 1.5 + x;
            n += 1;
        }
        z
    });
    let mut a = Array1::zeros(3);
    let mut t = 0;
    while t < 3 {
        a[t] = total * (t as f64 + 1.0) + w.sum();
        t += 1;
    }
    (total, a)
}

#[test]
fn whiles_nested_in_loops_and_closures() {
    let v = Array1::from(vec![1.3, -2.2, 0.4, 5.0]);
    for x in [0.9, 0.45, 1.7] {
        check_derivatives(
            &(v.clone(), x),
            |(v, x)| nested_whiles(v, *x),
            |(v, x), (dv, dx)| nested_whiles_jvp(v, *x, dv, *dx),
            |(v, x), ct| nested_whiles_vjp(v, *x, (ct.0, &ct.1)),
        );
    }
}

// --- return inside loops --------------------------------------------------------

/// The first element past a threshold, scaled: `return` from inside a `for`
/// loop, from a `while` nested in it, and a tuple output.
#[differentiable(wrt(v, x))]
fn first_past(v: &Array1<f64>, t: f64, x: f64) -> (f64, f64) {
    let mut s = 0.0;
    for i in 0..v.len() {
        let y = v[i] * x;
        if y > t {
            return (y * y, s);
        }
        let mut k = 0;
        while k < 3 {
            s += y * 0.1;
            if s > 10.0 * t {
                return (s, y);
            }
            k += 1;
        }
        s += y;
    }
    (s, x)
}

#[test]
fn return_inside_loops() {
    let v = Array1::from(vec![0.5, 1.0, 3.0, 0.2]);
    for (t, x) in [(2.0, 0.9), (0.3, 1.1), (100.0, 0.7), (0.2, 0.1)] {
        check_derivatives(
            &(v.clone(), x),
            |(v, x)| first_past(v, t, *x),
            |(v, x), (dv, dx)| first_past_jvp(v, t, *x, dv, *dx),
            |(v, x), ct| first_past_vjp(v, t, *x, *ct),
        );
    }
    // t = 2, x = 0.9: y = 2.7 at i = 2, returned squared.
    assert_close(first_past(&v, 2.0, 0.9).0, 2.7 * 2.7, 1e-12);
}

// --- `if let` and `let else` on constants ------------------------------------------

/// `if let` on an enum, an integer range with a binding and a `bool`;
/// `let else` leaving by `return` at the top level and by `continue` in a
/// loop.
#[differentiable]
#[allow(clippy::redundant_pattern_matching)]
fn patterns(x: f64, act: Act, k: usize, flag: bool) -> f64 {
    let mut y = if let Act::Tanh | Act::Poly = act {
        x.tanh()
    } else if let m @ 2..=4 = k {
        x * m as f64
    } else {
        x.sin()
    };
    if let true = flag {
        y = y * y;
    }
    let 0..=9 = k else {
        return y * 10.0;
    };
    let mut acc = y;
    for i in 0..k {
        let 1 = i % 2 else {
            continue;
        };
        acc += x * i as f64;
    }
    acc
}

#[test]
fn if_let_and_let_else_on_constants() {
    for act in [Act::Tanh, Act::Relu, Act::Poly] {
        for k in [1usize, 3, 6, 12] {
            for flag in [false, true] {
                for x in [0.7, -0.4] {
                    check_derivatives(
                        &x,
                        |x| patterns(*x, act, k, flag),
                        |x, dx| patterns_jvp(*x, act, k, flag, *dx),
                        |x, ct| patterns_vjp(*x, act, k, flag, *ct),
                    );
                }
            }
        }
    }
    // Relu, k = 3, no flag: 3 x, plus x (i = 1).
    assert_close(patterns_vjp(0.5, Act::Relu, 3, false, 1.0).1, 4.0, 1e-15);
    // k = 12 leaves by the `let else`: 10 (sin x).
    assert_close(
        patterns_vjp(0.5, Act::Relu, 12, false, 1.0).1,
        10.0 * 0.5f64.cos(),
        1e-15,
    );
}

// --- `break` / `continue` anywhere in `if`s and blocks of a loop body ----------

/// A `break` two `if`s deep, a `continue` in a nested block and in an
/// `else if`, statements after both, in `for`, `while` and `loop`.
#[differentiable]
fn deep_exits(x: f64, n: usize) -> f64 {
    let mut y = x;
    for i in 0..n {
        if y > 1.0 {
            if y > 10.0 {
                break;
            }
            y = y * 0.5;
        }
        {
            if i % 3 == 1 {
                y = y + x;
                continue;
            }
        }
        if i == 7 {
            y = y * 2.0;
        } else if i % 4 == 2 {
            continue;
        }
        y = y * x;
    }
    let mut k = 0;
    while k < n {
        k += 1;
        if k % 2 == 0 {
            if y < 0.5 {
                y = y + 1.0;
                continue;
            }
            y = y * 0.9;
        }
        y = y.sin() + x;
    }
    let mut m = 0;
    loop {
        m += 1;
        if m > 3 {
            if y > 0.0 {
                break;
            } else if m > 6 {
                y = y - 1.0;
                break;
            }
        }
        y = y * x - 0.1;
    }
    y
}

/// `deep_exits` written with flags, as a reference.
fn deep_exits_expected(x: f64, n: usize) -> f64 {
    let mut y = x;
    for i in 0..n {
        if y > 10.0 {
            break;
        }
        if y > 1.0 {
            y *= 0.5;
        }
        if i % 3 == 1 {
            y += x;
            continue;
        }
        if i == 7 {
            y *= 2.0;
        } else if i % 4 == 2 {
            continue;
        }
        y *= x;
    }
    let mut k = 0;
    while k < n {
        k += 1;
        if k % 2 == 0 && y < 0.5 {
            y += 1.0;
            continue;
        }
        if k % 2 == 0 {
            y *= 0.9;
        }
        y = y.sin() + x;
    }
    let mut m = 0;
    loop {
        m += 1;
        if m > 3 && y > 0.0 {
            break;
        }
        if m > 6 {
            y -= 1.0;
            break;
        }
        y = y * x - 0.1;
    }
    y
}

#[test]
fn break_and_continue_deep_in_a_loop_body() {
    for n in [0usize, 1, 5, 9, 14] {
        for x in [1.3, 0.6, -0.8, 3.5] {
            assert_eq!(
                deep_exits(x, n).to_bits(),
                deep_exits_expected(x, n).to_bits()
            );
            check_derivatives(
                &x,
                |x| deep_exits(*x, n),
                |x, dx| deep_exits_jvp(*x, n, *dx),
                |x, ct| deep_exits_vjp(*x, n, *ct),
            );
        }
    }
}

/// `(a..b).step_by(k)` in `for` loops (also reversed after the step, and
/// stepped twice) and in iterator chains.
#[differentiable]
fn stepped(v: &Array1<f64>, k: usize) -> f64 {
    let mut s = 0.0;
    for i in (1..v.len()).step_by(k) {
        s = s * 0.5 + v[i] * v[i - 1];
    }
    for i in (0..v.len()).step_by(2).rev() {
        s = s * 0.9 + v[i].sin();
    }
    for i in (0..v.len()).step_by(2).step_by(2) {
        s += v[i] * (i as f64);
    }
    let t: f64 = (0..v.len()).step_by(3).map(|i| v[i] * v[i]).sum();
    s + t
}

#[test]
fn step_by_ranges() {
    let mut r = rng("step_by_ranges");
    for n in [0, 1, 2, 5, 8] {
        for k in [1, 2, 3, 7] {
            let v = Array1::from_shape_fn(n, |_| r.normal());
            // The primal against std's stepping.
            let mut s = 0.0;
            for i in (1..n).step_by(k) {
                s = s * 0.5 + v[i] * v[i - 1];
            }
            for i in (0..n).step_by(2).rev() {
                s = s * 0.9 + v[i].sin();
            }
            for i in (0..n).step_by(4) {
                s += v[i] * (i as f64);
            }
            let t: f64 = (0..n).step_by(3).map(|i| v[i] * v[i]).sum();
            assert_eq!(stepped(&v, k).to_bits(), (s + t).to_bits());
            check_derivatives(
                &v,
                |v| stepped(v, k),
                |v, d| stepped_jvp(v, k, d),
                |v, ct| stepped_vjp(v, k, *ct),
            );
        }
    }
}

#[test]
#[should_panic]
fn step_by_zero_panics_in_the_companions() {
    let v = Array1::from(vec![1.0, 2.0]);
    let _ = stepped_vjp(&v, 0, 1.0);
}

// Reverse mode in one sweep (`ad_core_ir::vjp`): where the reverse of a loop
// adds into disjoint elements, `f_vjp` runs it inside the forward loop. The
// value is `f`'s and the cotangents the pullback's (forward half, then the
// transposed half), bit for bit.

/// The extended Rosenbrock function: iteration `i` reads `x[2i]` and
/// `x[2i + 1]`.
#[differentiable]
fn pairs(x: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() / 2 {
        let a = x[2 * i];
        let t = a * a - x[2 * i + 1];
        s += 100.0 * t * t + (a - 1.0) * (a - 1.0);
    }
    s
}

/// Stacked residuals (`exp`, `sin`) read at the loop's own index.
#[differentiable]
fn exp_sines(x: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let e = x[i].exp();
        s += e * x[i].sin();
    }
    s
}

/// Nested loops over a matrix, updated state that is not a sum alone.
#[differentiable]
fn grid(x: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.nrows() {
        let mut row = 1.0;
        for j in 0..x.ncols() {
            row += x[[i, j]].tanh() * x[[i, j]];
        }
        s += row.ln();
    }
    s
}

/// A scalar read by every iteration: differentiated, its cotangent takes a
/// contribution from each (two sweeps); a constant, the loop fuses.
#[differentiable]
fn shifted(x: &Array1<f64>, a: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (x[i] - a).powi(2) * 0.5;
    }
    s
}

/// [`shifted`] differentiated with respect to `x` alone.
#[differentiable(wrt(x))]
fn shifted_x(x: &Array1<f64>, a: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (x[i] - a).powi(2) * 0.5;
    }
    s
}

#[test]
fn one_sweep_reverse_mode_agrees_with_the_pullback_bit_for_bit() {
    let mut r = rng("one_sweep");
    for n in [0, 1, 2, 7, 16, 33] {
        let x = Array1::from_shape_fn(n, |_| r.normal());
        let m = Array2::from_shape_fn((n / 3 + 1, n % 5 + 1), |_| r.normal());
        let ct = r.normal();
        let (y, g) = pairs_vjp(&x, ct);
        let (yp, pb) = pairs_pullback(&x);
        assert_eq!(y.to_bits(), pairs(&x).to_bits());
        assert_eq!(yp.to_bits(), y.to_bits());
        assert_same_bits(&g, &pb(ct));
        let (y, g) = exp_sines_vjp(&x, ct);
        assert_eq!(y.to_bits(), exp_sines(&x).to_bits());
        assert_same_bits(&g, &exp_sines_pullback(&x).1(ct));
        let (y, g) = grid_vjp(&m, ct);
        assert_eq!(y.to_bits(), grid(&m).to_bits());
        assert_same_bits(&g, &grid_pullback(&m).1(ct));
        let (y, g) = shifted_x_vjp(&x, 0.3, ct);
        assert_eq!(y.to_bits(), shifted_x(&x, 0.3).to_bits());
        assert_same_bits(&g, &shifted_x_pullback(&x, 0.3).1(ct));
        check_derivatives(&x, pairs, |x, d| pairs_jvp(x, d), |x, c| pairs_vjp(x, *c));
        check_derivatives(
            &x,
            exp_sines,
            |x, d| exp_sines_jvp(x, d),
            |x, c| exp_sines_vjp(x, *c),
        );
        check_derivatives(&m, grid, |x, d| grid_jvp(x, d), |x, c| grid_vjp(x, *c));
        check_derivatives(
            &(x.clone(), 0.3),
            |(x, a)| shifted(x, *a),
            |(x, a), (dx, da)| shifted_jvp(x, *a, dx, *da),
            |(x, a), c| shifted_vjp(x, *a, *c),
        );
    }
}

// --- labelled loops --------------------------------------------------------

/// `continue 'rows` from an inner loop skips the rest of the row and what
/// follows the inner loop; `break 'rows` ends both loops; an own-level
/// `continue 'rows` is a plain `continue`.
#[differentiable]
fn labelled_rows(a: &Array2<f64>, x: f64) -> f64 {
    let mut s = 0.0;
    let mut t = 0.0;
    'rows: for i in 0..a.nrows() {
        if a[[i, 0]] > 0.9 {
            continue 'rows;
        }
        for j in 0..a.ncols() {
            if a[[i, j]] < -0.5 {
                continue 'rows;
            }
            if a[[i, j]] > 0.8 {
                break 'rows;
            }
            s += a[[i, j]] * x;
        }
        t += s * s;
    }
    s + t
}

/// Three levels: an exit from the innermost loop to the outermost one
/// leaves the middle loop too; the middle loop's own `break` stays its own;
/// a labelled `while` and a labelled `loop`.
#[differentiable]
fn labelled_deep(a: &Array2<f64>, x: f64, n: usize) -> f64 {
    let mut s = x;
    'outer: for k in 0..n {
        for i in 0..a.nrows() {
            if i == 3 {
                break;
            }
            for j in 0..a.ncols() {
                s = s * 0.9 + a[[i, j]] * x;
                if s > 2.0 + k as f64 {
                    continue 'outer;
                }
            }
            s += 0.1;
        }
        s -= 0.05;
    }
    let mut m = 0;
    'w: while m < 4 {
        m += 1;
        let mut q = 0;
        'l: loop {
            q += 1;
            s = s * 0.95 + x;
            if q > m {
                break 'l;
            }
            if s > 3.0 {
                break 'w;
            }
        }
    }
    s
}

#[test]
fn labelled_break_and_continue() {
    let mut rng = rng("labelled_rows");
    for trial in 0..6 {
        let a = rng.array2(4, 5, -1.0, 1.0);
        let x = 0.3 + 0.2 * trial as f64;
        check_derivatives(
            &(a.clone(), x),
            |(a, x)| labelled_rows(a, *x),
            |(a, x), (da, dx)| labelled_rows_jvp(a, *x, da, *dx),
            |(a, x), ct| labelled_rows_vjp(a, *x, *ct),
        );
        for n in [0, 1, 3] {
            check_derivatives(
                &(a.clone(), x),
                |(a, x)| labelled_deep(a, *x, n),
                |(a, x), (da, dx)| labelled_deep_jvp(a, *x, n, da, *dx),
                |(a, x), ct| labelled_deep_vjp(a, *x, n, *ct),
            );
        }
    }
    // A hand-followed case: the second row leaves at -0.6 after adding its
    // first element (no `t` update), the third breaks out at 0.85 after
    // adding its first.
    let a = Array2::from_shape_vec((3, 2), vec![0.5, 0.25, 0.1, -0.6, 0.2, 0.85]).unwrap();
    let (y, _) = labelled_rows_jvp(&a, 2.0, &Array2::zeros((3, 2)), 0.0);
    let s = 0.5 * 2.0 + 0.25 * 2.0;
    let expect = (s + 0.1 * 2.0 + 0.2 * 2.0) + s * s;
    assert_eq!(y, expect);
    assert_eq!(labelled_rows(&a, 2.0), expect);
}

// --- loop as an expression: break with a value ------------------------------

/// Newton's method for `sqrt(a)`, the root the value of the `break` (a
/// name bound in the body).
#[differentiable]
fn newton_root(a: f64) -> f64 {
    let mut y = a.max(1.0);
    let r = loop {
        let y1 = 0.5 * (y + a / y);
        if (y1 - y).abs() < 1e-12 {
            break y1;
        }
        y = y1;
    };
    r * 2.0
}

/// A tuple and an integer count out of one `loop`, from two `break`s; a
/// labelled `break 'search (..)` from a nested `for`; an annotated result
/// whose value's type the syntax does not show.
#[differentiable]
fn break_values(x: &Array1<f64>, s: f64) -> f64 {
    let mut k = 0usize;
    let mut acc = s;
    let (v, n) = loop {
        acc = acc * 0.75 + x[k % x.len()];
        k += 1;
        if acc > 2.0 {
            break (acc, k);
        }
        if k >= 7 {
            break (acc * 0.5, k + 10);
        }
    };
    let mut t = s;
    let found = 'search: loop {
        for i in 0..x.len() {
            t += x[i] * s;
            if t > 1.5 {
                break 'search t * x[i];
            }
        }
        if t < -3.0 || t > 100.0 {
            break -t;
        }
        t += 0.5;
    };
    let mut q = 0;
    let w: f64 = loop {
        q += 1;
        if q > 2 {
            break x.sum();
        }
    };
    v * (n as f64) + found + w
}

#[test]
fn loops_with_break_values() {
    for a in [0.3, 2.0, 9.0] {
        check_derivatives(
            &a,
            |a| newton_root(*a),
            |a, da| newton_root_jvp(*a, *da),
            |a, ct| newton_root_vjp(*a, *ct),
        );
        let (y, dy) = newton_root_jvp(a, 1.0);
        assert!((y - 2.0 * a.sqrt()).abs() < 1e-12, "{y}");
        assert!((dy - 1.0 / a.sqrt()).abs() < 1e-9, "{dy}");
    }
    let mut rng = rng("break_values");
    for trial in 0..8 {
        let x = rng.array1(4, -1.0, 1.0);
        let s = -0.5 + 0.3 * trial as f64;
        check_derivatives(
            &(x.clone(), s),
            |(x, s)| break_values(x, *s),
            |(x, s), (dx, ds)| break_values_jvp(x, *s, dx, *ds),
            |(x, s), ct| break_values_vjp(x, *s, *ct),
        );
    }
}

// --- deferred `let` ---------------------------------------------------------

/// Variables declared without a value and assigned on every path: a number
/// (its type from the values), a tuple, an integer, an annotated one, one
/// declared in a loop body.
#[differentiable(wrt(x, w))]
fn deferred_lets(x: f64, w: &Array1<f64>, n: usize) -> f64 {
    let y;
    let t;
    let k;
    let z: f64;
    let (p, q): (f64, usize);
    if x > 0.0 {
        y = x * 2.0;
        t = (x.exp(), 1.0);
        k = n - 1;
    } else {
        y = -x;
        t = (1.0, x.sin());
        k = n + 1;
    }
    match k {
        0 => z = y,
        _ => z = y * t.1,
    }
    p = z * 0.5;
    q = k + 2;
    let mut s = 0.0;
    for i in 0..w.len() {
        let v;
        if w[i] > 0.0 {
            v = w[i] * y;
        } else {
            let u = w[i] * w[i];
            v = u + t.0;
        }
        s += v;
    }
    y * y + t.0 * t.1 + k as f64 + z + s + p * q as f64
}

#[test]
fn lets_without_a_value() {
    let mut rng = rng("deferred_lets");
    for trial in 0..6 {
        let w = rng.array1(5, -1.0, 1.0);
        let x = -0.9 + 0.35 * trial as f64;
        for n in [1usize, 4] {
            check_derivatives(
                &(x, w.clone()),
                |(x, w)| deferred_lets(*x, w, n),
                |(x, w), (dx, dw)| deferred_lets_jvp(*x, w, n, *dx, dw),
                |(x, w), ct| deferred_lets_vjp(*x, w, n, *ct),
            );
        }
    }
}
