//! Syntax-level rewrites into forms the lowering knows:
//!
//! - `match` on integers, `bool` (and `f64` literals) with literal, range,
//!   wildcard, binding and `|` patterns and guards becomes an `if` chain on
//!   a hidden binding of the scrutinee:
//!
//!   ```text
//!   match n { 0 => a, 1 | 2 => b, k if k > 9 => c, _ => d }
//!   ==>  { let m = n; if m == 0 { a } else if m == 1 || m == 2 { b }
//!          else if { let k = m; k > 9 } { let k = m; c } else { d } }
//!   ```
//!
//! - `if let P = e { a } else { b }` is `match e { P => a, _ => b }`, and
//!   `let P = e else { d };` (with `d` leaving: `return`, `continue`, `break`)
//!   a test and the pattern's bindings, before the other rewrites:
//!
//!   ```text
//!   let 1..=3 = k else { return 0.0; }; s
//!   ==>  let m = k; if !(m >= 1 && m <= 3) { return 0.0; } s
//!   ```
//!
//! - a `continue` ending a branch of an `if` at the top level of a `for`
//!   body: the same rewrite, the rest of the iteration into the `else`;
//! - an early `return` in an `if` at the top level of the body (or of a
//!   branch that is itself rewritten) moves the rest of the body into the
//!   `else` branch, in a nested block so that names declared in the original
//!   `else` stay out of the rest's scope:
//!
//!   ```text
//!   s1; if c { t; return e; } else { u; } s2; y
//!   ==>  s1; if c { t; e } else { { u; } s2; y }
//!   ```

use proc_macro2::Span;
use quote::quote_spanned;
use syn::spanned::Spanned;

/// `if let P = e { a } else { b }` as `match e { P => a, _ => b }`.
pub fn if_let_to_match(i: &syn::ExprIf, l: &syn::ExprLet) -> syn::ExprMatch {
    let (pat, e, then) = (&l.pat, &l.expr, &i.then_branch);
    let span = i.if_token.span;
    let els: syn::Expr = match &i.else_branch {
        Some((_, b)) => (**b).clone(),
        None => syn::parse_quote_spanned!(span=> {}),
    };
    syn::parse_quote_spanned!(span=> match #e { #pat => #then, _ => #els })
}

/// Rewrites every `let P = e else { d };` in `b` (at any depth) as a test
/// that runs `d` when `P` does not match, then `P`'s bindings; the
/// statement must end by leaving (`return`, `continue`, `break`), as Rust
/// requires. A pattern that cannot be tested is an error.
pub fn let_else(b: &mut syn::Block) -> Result<(), syn::Error> {
    struct V {
        n: usize,
        err: Option<syn::Error>,
    }
    impl syn::visit_mut::VisitMut for V {
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            let mut out = Vec::with_capacity(b.stmts.len());
            for mut s in std::mem::take(&mut b.stmts) {
                syn::visit_mut::visit_stmt_mut(self, &mut s);
                let syn::Stmt::Local(l) = &s else {
                    out.push(s);
                    continue;
                };
                let Some(init) = l.init.as_ref().filter(|i| i.diverge.is_some()) else {
                    out.push(s);
                    continue;
                };
                let (e, d) = (&init.expr, &init.diverge.as_ref().expect("checked").1);
                let scrut = syn::Ident::new(&format!("__linad_let_{}", self.n), Span::mixed_site());
                self.n += 1;
                let span = l.let_token.span;
                let pat = match &l.pat {
                    syn::Pat::Type(pt) => &pt.pat,
                    p => p,
                };
                match pattern_test(pat, &scrut, "`let else`") {
                    Ok(test) => {
                        out.push(syn::parse_quote_spanned!(span=> let #scrut = #e;));
                        out.push(syn::parse_quote_spanned!(span=> if !(#test) #d));
                        out.extend(bindings(pat, &scrut));
                    }
                    Err(e) => {
                        self.err.get_or_insert(e);
                        out.push(s);
                    }
                }
            }
            b.stmts = out;
        }
    }
    let mut v = V { n: 0, err: None };
    syn::visit_mut::VisitMut::visit_block_mut(&mut v, b);
    v.err.map_or(Ok(()), Err)
}

/// The `if` chain of a `match`, or the pattern that cannot be tested.
pub fn match_to_if(m: &syn::ExprMatch, id: usize) -> Result<syn::Expr, syn::Error> {
    let span = m.match_token.span;
    let scrut = syn::Ident::new(&format!("__linad_match_{id}"), Span::mixed_site());
    let Some((last, init)) = m.arms.split_last() else {
        return Err(syn::Error::new(
            span,
            "a `match` without arms has no value here",
        ));
    };
    let mut chain = arm_body(last, &scrut);
    for arm in init.iter().rev() {
        let test = pattern_test(&arm.pat, &scrut, "`match`")?;
        let cond = match &arm.guard {
            None => test,
            Some((_, g)) => {
                let binds = bindings(&arm.pat, &scrut);
                let gs = g.span();
                syn::parse_quote_spanned!(gs=> (#test) && { #(#binds)* #g })
            }
        };
        let body = arm_body(arm, &scrut);
        chain = syn::parse_quote_spanned!(span=> if #cond { #body } else { #chain });
    }
    let e = &m.expr;
    Ok(syn::parse_quote_spanned!(span=> { let #scrut = #e; #chain }))
}

/// The arm's body with its pattern's bindings in scope.
fn arm_body(arm: &syn::Arm, scrut: &syn::Ident) -> syn::Expr {
    let binds = bindings(&arm.pat, scrut);
    let body = &arm.body;
    let s = body.span();
    if binds.is_empty() {
        return (*arm.body).clone();
    }
    syn::parse_quote_spanned!(s=> { #(#binds)* #body })
}

/// `let x = scrut;` for each binding of the pattern (`x`, `x @ p`).
fn bindings(p: &syn::Pat, scrut: &syn::Ident) -> Vec<syn::Stmt> {
    match p {
        syn::Pat::Ident(pi) => {
            let id = &pi.ident;
            let mut v: Vec<syn::Stmt> =
                vec![syn::parse_quote_spanned!(id.span()=> let #id = #scrut;)];
            if let Some((_, sub)) = &pi.subpat {
                v.extend(bindings(sub, scrut));
            }
            v
        }
        syn::Pat::Paren(pp) => bindings(&pp.pat, scrut),
        _ => vec![],
    }
}

/// The boolean test of a pattern against `scrut` (in a `what`: `match`,
/// `if let`, `let else`, for the error).
fn pattern_test(p: &syn::Pat, scrut: &syn::Ident, what: &str) -> Result<syn::Expr, syn::Error> {
    let s = p.span();
    Ok(match p {
        syn::Pat::Wild(_) => syn::parse_quote_spanned!(s=> true),
        syn::Pat::Ident(pi) => match &pi.subpat {
            None => syn::parse_quote_spanned!(s=> true),
            Some((_, sub)) => pattern_test(sub, scrut, what)?,
        },
        syn::Pat::Lit(l) => syn::parse_quote_spanned!(s=> #scrut == #l),
        // An enum variant (`Mode::Fast`), compared by discriminant.
        syn::Pat::Path(pp) => syn::parse_quote_spanned!(s=> #scrut == #pp),
        syn::Pat::Paren(pp) => pattern_test(&pp.pat, scrut, what)?,
        syn::Pat::Or(o) => {
            let mut tests = vec![];
            for c in &o.cases {
                tests.push(pattern_test(c, scrut, what)?);
            }
            syn::parse_quote_spanned!(s=> #((#tests))||*)
        }
        syn::Pat::Range(r) => {
            let lo = r.start.as_ref().map(|a| quote_spanned!(s=> #scrut >= #a));
            let hi = r.end.as_ref().map(|b| match r.limits {
                syn::RangeLimits::Closed(_) => quote_spanned!(s=> #scrut <= #b),
                syn::RangeLimits::HalfOpen(_) => quote_spanned!(s=> #scrut < #b),
            });
            match (lo, hi) {
                (Some(a), Some(b)) => syn::parse_quote_spanned!(s=> (#a) && (#b)),
                (Some(a), None) => syn::parse_quote_spanned!(s=> #a),
                (None, Some(b)) => syn::parse_quote_spanned!(s=> #b),
                (None, None) => syn::parse_quote_spanned!(s=> true),
            }
        }
        // A negative literal (`-1`) parses as a constant expression pattern.
        syn::Pat::Verbatim(t) => syn::parse_quote_spanned!(s=> #scrut == #t),
        _ => {
            return Err(syn::Error::new(
                s,
                format!("{what} patterns are supported on numbers, `bool` and field-less enums of this crate: literals, ranges (`1..=3`), variants (`Mode::Fast`), `_`, bindings, `|` and guards; destructure tuples with `let`"),
            ))
        }
    })
}

/// How a branch leaves: by `return` (from the function), by `continue`
/// (to the next iteration of the loop whose body is being rewritten) or by
/// `break` (out of it).
#[derive(Clone, Copy, PartialEq)]
enum Exit {
    Return,
    Continue,
    Break,
}

/// Whether a block ends by leaving (its last statement is a `return` /
/// `continue`, or an `if`/`else` whose branches both end so).
fn leaves(b: &syn::Block, how: Exit) -> bool {
    match b.stmts.last() {
        Some(syn::Stmt::Expr(syn::Expr::Return(_), _)) => how == Exit::Return,
        Some(syn::Stmt::Expr(syn::Expr::Continue(c), _)) => {
            how == Exit::Continue && c.label.is_none()
        }
        Some(syn::Stmt::Expr(syn::Expr::Break(k), _)) => {
            how == Exit::Break && k.label.is_none() && k.expr.is_none()
        }
        Some(syn::Stmt::Expr(syn::Expr::If(i), _)) => match &i.else_branch {
            Some((_, e)) => leaves(&i.then_branch, how) && expr_leaves(e, how),
            None => false,
        },
        _ => false,
    }
}

fn expr_leaves(e: &syn::Expr, how: Exit) -> bool {
    match e {
        syn::Expr::Block(b) => leaves(&b.block, how),
        syn::Expr::If(i) => match &i.else_branch {
            Some((_, e)) => leaves(&i.then_branch, how) && expr_leaves(e, how),
            None => false,
        },
        _ => false,
    }
}

/// Replaces the final `continue` (`how = Continue`) or `break` (`Break`) of
/// a block and of the branches of its final `if` by `with` (nothing: the
/// statement goes); returns how many it replaced.
fn replace_final_exit(b: &mut syn::Block, how: Exit, with: Option<&syn::Stmt>) -> usize {
    let exit = |s: &syn::Stmt| match s {
        syn::Stmt::Expr(syn::Expr::Continue(c), _) => how == Exit::Continue && c.label.is_none(),
        syn::Stmt::Expr(syn::Expr::Break(k), _) => {
            how == Exit::Break && k.label.is_none() && k.expr.is_none()
        }
        _ => false,
    };
    match b.stmts.last_mut() {
        Some(s) if exit(s) => {
            b.stmts.pop();
            b.stmts.extend(with.cloned());
            1
        }
        Some(syn::Stmt::Expr(syn::Expr::If(i), _)) => {
            let mut n = replace_final_exit(&mut i.then_branch, how, with);
            if let Some((_, e)) = &mut i.else_branch {
                match &mut **e {
                    syn::Expr::Block(eb) => n += replace_final_exit(&mut eb.block, how, with),
                    syn::Expr::If(_) => {
                        let mut blk = syn::Block {
                            brace_token: Default::default(),
                            stmts: vec![syn::Stmt::Expr((**e).clone(), None)],
                        };
                        n += replace_final_exit(&mut blk, how, with);
                        if let Some(syn::Stmt::Expr(x, _)) = blk.stmts.pop() {
                            **e = x;
                        }
                    }
                    _ => {}
                }
            }
            // A statement `if` now: its branches have no value.
            if let Some(syn::Stmt::Expr(x, semi)) = b.stmts.last_mut() {
                if semi.is_none() {
                    *semi = Some(syn::Token![;](x.span()));
                }
            }
            n
        }
        _ => 0,
    }
}

/// Moves what follows an `if` whose `then` branch ends by `continue` into
/// its `else` branch, in a `for` loop's body (as [`lift_early_returns`]
/// does for `return`), then removes those `continue`s.
///
/// A `continue` elsewhere in the body (deeper in `if`s and blocks, not in
/// nested loops or closures) sets a flag instead, and what follows it runs
/// only while the flag is unset (see [`flag_exits`]).
pub fn lift_continues(b: &mut syn::Block) {
    lift(b, Exit::Continue);
    replace_final_exit(b, Exit::Continue, None);
    let span = b.brace_token.span.join();
    let skip = syn::Ident::new(SKIP, span);
    let set: syn::Stmt = syn::parse_quote_spanned!(span=> #skip = true;);
    let test: syn::Expr = syn::parse_quote_spanned!(span=> !#skip);
    let stmts = std::mem::take(&mut b.stmts);
    let (mut out, n) = flag_exits(stmts, Exit::Continue, &set, &test);
    if n > 0 {
        out.insert(0, syn::parse_quote_spanned!(span=> let mut #skip = false;));
    }
    b.stmts = out;
}

/// The flag of an iteration that ran a `continue` nested in its body (a
/// name users do not write).
const SKIP: &str = "__linad_skip";

/// Rewrites every exit `how` (`break` or `continue`, unlabelled) in
/// `stmts`, inside `if`s and blocks but not inside nested loops, closures or
/// expressions, as the statement `set` (which sets a flag), and runs what
/// follows a statement that may have set it only when `test` holds
/// (the flag is unset). Returns the rewritten statements and how many exits
/// it rewrote.
///
/// ```text
/// if c1 { s1; if c2 { break; } s3; } s4
/// ==>  if c1 { s1; if c2 { go = false; } if go { s3; } } if go { s4 }
/// ```
fn flag_exits(
    stmts: Vec<syn::Stmt>,
    how: Exit,
    set: &syn::Stmt,
    test: &syn::Expr,
) -> (Vec<syn::Stmt>, usize) {
    let mut out = vec![];
    let mut it = stmts.into_iter();
    while let Some(mut s) = it.next() {
        if is_exit(&s, how) {
            // What follows an exit never runs.
            out.push(set.clone());
            return (out, 1);
        }
        let n = flag_in_stmt(&mut s, how, set, test);
        out.push(s);
        if n > 0 {
            let rest: Vec<syn::Stmt> = it.collect();
            if rest.is_empty() {
                return (out, n);
            }
            let (rest, m) = flag_exits(rest, how, set, test);
            let span = test.span();
            out.push(syn::parse_quote_spanned!(span=> if #test { #(#rest)* }));
            return (out, n + m);
        }
    }
    (out, 0)
}

/// Whether a statement is the exit `how` itself.
fn is_exit(s: &syn::Stmt, how: Exit) -> bool {
    match s {
        syn::Stmt::Expr(syn::Expr::Continue(c), _) => how == Exit::Continue && c.label.is_none(),
        syn::Stmt::Expr(syn::Expr::Break(k), _) => {
            how == Exit::Break && k.label.is_none() && k.expr.is_none()
        }
        _ => false,
    }
}

/// [`flag_exits`] inside the branches of an `if` statement or a block
/// statement; the number of exits rewritten.
fn flag_in_stmt(s: &mut syn::Stmt, how: Exit, set: &syn::Stmt, test: &syn::Expr) -> usize {
    match s {
        syn::Stmt::Expr(e, _) => flag_in_expr(e, how, set, test),
        _ => 0,
    }
}

fn flag_in_expr(e: &mut syn::Expr, how: Exit, set: &syn::Stmt, test: &syn::Expr) -> usize {
    let in_block = |b: &mut syn::Block| {
        let (stmts, n) = flag_exits(std::mem::take(&mut b.stmts), how, set, test);
        b.stmts = stmts;
        n
    };
    match e {
        syn::Expr::If(i) => {
            let mut n = in_block(&mut i.then_branch);
            if let Some((_, els)) = &mut i.else_branch {
                n += flag_in_expr(els, how, set, test);
            }
            n
        }
        syn::Expr::Block(b) if b.label.is_none() => in_block(&mut b.block),
        _ => 0,
    }
}

/// The flag a loop with `break` carries: `true` until a `break` runs (a
/// name users do not write; it never appears in messages).
pub const GO: &str = "__linad_go";

/// Rewrites the `break`s of a loop body that end a branch of an `if` at its
/// top level (or the body itself) as [`lift_continues`] does for
/// `continue`: what follows such an `if` moves into its `else` branch, and
/// the `break` becomes `__linad_go = false;`. The caller makes the loop
/// stop when the flag is false. Returns how many `break`s it rewrote (a
/// `break` elsewhere stays, and is refused where it is lowered).
///
/// ```text
/// loop { x = g(x); if x < 1.0 { break; } n += 1; }
/// { let mut go = true; while go { x = g(x); if x < 1.0 { go = false; } else { n += 1; } } }
/// ```
///
/// A `break` elsewhere in the body (deeper in `if`s and blocks, not in
/// nested loops or closures) clears the flag too, and what follows it runs
/// only while the flag is set (see [`flag_exits`]).
pub fn lift_breaks(b: &mut syn::Block, span: Span) -> usize {
    lift(b, Exit::Break);
    let go = syn::Ident::new(GO, span);
    let stop: syn::Stmt = syn::parse_quote_spanned!(span=> #go = false;);
    let n = replace_final_exit(b, Exit::Break, Some(&stop));
    let test: syn::Expr = syn::parse_quote_spanned!(span=> #go);
    let (stmts, m) = flag_exits(std::mem::take(&mut b.stmts), Exit::Break, &stop, &test);
    b.stmts = stmts;
    n + m
}

/// Moves what follows an `if` whose `then` branch returns into its `else`
/// branch (see the module doc), at the top level of `b` and, recursively,
/// of the branches it builds.
pub fn lift_early_returns(b: &mut syn::Block) {
    lift(b, Exit::Return);
}

fn lift(b: &mut syn::Block, how: Exit) {
    let Some(k) = b.stmts.iter().enumerate().position(|(k, s)| {
        (k + 1 < b.stmts.len() || how != Exit::Return)
            && matches!(s, syn::Stmt::Expr(syn::Expr::If(i), _) if leaves(&i.then_branch, how))
    }) else {
        return;
    };
    let rest: Vec<syn::Stmt> = b.stmts.drain(k + 1..).collect();
    let Some(syn::Stmt::Expr(syn::Expr::If(mut i), _)) = b.stmts.pop() else {
        return;
    };
    let span = i.if_token.span;
    let mut else_block: syn::Block = syn::parse_quote_spanned!(span=> {});
    if let Some((_, e)) = i.else_branch.take() {
        // The original `else` keeps its own scope.
        else_block
            .stmts
            .push(syn::Stmt::Expr(*e, Some(syn::Token![;](span))));
    }
    else_block.stmts.extend(rest);
    lift(&mut i.then_branch, how);
    lift(&mut else_block, how);
    i.else_branch = Some((
        syn::Token![else](span),
        Box::new(syn::Expr::Block(syn::ExprBlock {
            attrs: vec![],
            label: None,
            block: else_block,
        })),
    ));
    let semi = match how {
        Exit::Return => None,
        Exit::Continue | Exit::Break => Some(syn::Token![;](span)),
    };
    b.stmts.push(syn::Stmt::Expr(syn::Expr::If(i), semi));
}

/// The value a `return` inside a loop leaves in (see [`lift_loop_returns`]).
pub const RET: &str = "__linad_ret";
/// Whether a `return` inside a loop ran.
pub const RETURNED: &str = "__linad_returned";

/// `return v;` inside loops, where it ends a branch of an `if` at the top
/// level of a loop body (or the body): it becomes `ret = v; returned =
/// true; break;` (then lifted like any `break`), an enclosing loop breaks
/// when `returned` after the inner one, and after the outermost loop (a
/// statement of the function's body) `if returned { return ret; }` is an
/// early return [`lift_early_returns`] lifts. `zero` initialises `ret` (of
/// the output's type); `None` (an array output) refuses such a `return`.
///
/// ```text
/// for i in 0..n { if x[i] > t { return x[i]; } s += x[i]; }  s
/// let mut ret = 0.0; let mut returned = false;
/// for i in 0..n { if x[i] > t { ret = x[i]; returned = true; break; } s += x[i]; }
/// if returned { return ret; }  s
/// ```
pub fn lift_loop_returns(b: &mut syn::Block, zero: Option<&syn::Expr>) -> Result<(), syn::Error> {
    let mut k = 0;
    while k < b.stmts.len() {
        // On a copy: the function is left as it was when this is refused.
        let mut stmt = b.stmts[k].clone();
        let found = match loop_body_mut(&mut stmt) {
            Some(body) => loop_returns(body),
            None => None,
        };
        if let Some(span) = found {
            let Some(zero) = zero else {
                return Err(syn::Error::new(
                    span,
                    "a `return` inside a loop is supported for `f64` and tuple outputs: for an array output, compute the result in a variable and return it after the loop",
                ));
            };
            b.stmts[k] = stmt;
            let (ret, flag) = (syn::Ident::new(RET, span), syn::Ident::new(RETURNED, span));
            b.stmts
                .insert(k, syn::parse_quote_spanned!(span=> let mut #flag = false;));
            b.stmts
                .insert(k, syn::parse_quote_spanned!(span=> let mut #ret = #zero;));
            b.stmts.insert(
                k + 3,
                syn::parse_quote_spanned!(span=> if #flag { return #ret; }),
            );
            k += 4;
        } else {
            k += 1;
        }
    }
    Ok(())
}

/// The body of a loop statement.
fn loop_body_mut(s: &mut syn::Stmt) -> Option<&mut syn::Block> {
    match s {
        syn::Stmt::Expr(syn::Expr::ForLoop(f), _) => Some(&mut f.body),
        syn::Stmt::Expr(syn::Expr::While(w), _) => Some(&mut w.body),
        syn::Stmt::Expr(syn::Expr::Loop(l), _) => Some(&mut l.body),
        _ => None,
    }
}

/// Rewrites the `return`s of a loop body (see [`lift_loop_returns`]); the
/// span of the first, if any.
fn loop_returns(body: &mut syn::Block) -> Option<Span> {
    let mut found: Option<Span> = None;
    let mut k = 0;
    while k < body.stmts.len() {
        if let Some(inner) = loop_body_mut(&mut body.stmts[k]) {
            if let Some(s) = loop_returns(inner) {
                found.get_or_insert(s);
                let flag = syn::Ident::new(RETURNED, s);
                body.stmts
                    .insert(k + 1, syn::parse_quote_spanned!(s=> if #flag { break; }));
                k += 2;
                continue;
            }
        }
        if let syn::Stmt::Expr(syn::Expr::If(i), _) = &mut body.stmts[k] {
            if let Some(s) = if_returns(i) {
                found.get_or_insert(s);
            }
        }
        k += 1;
    }
    if let Some(s) = final_return(body) {
        found.get_or_insert(s);
    }
    found
}

/// The `return`s ending the branches of an `if` (and its `else if`s).
fn if_returns(i: &mut syn::ExprIf) -> Option<Span> {
    let mut found = final_return(&mut i.then_branch);
    if let Some((_, e)) = &mut i.else_branch {
        let more = match &mut **e {
            syn::Expr::Block(eb) => final_return(&mut eb.block),
            syn::Expr::If(ei) => if_returns(ei),
            _ => None,
        };
        found = found.or(more);
    }
    found
}

/// A final `return v;` of a block as `ret = v; returned = true; break;`,
/// and those of a final `if`'s branches.
fn final_return(b: &mut syn::Block) -> Option<Span> {
    match b.stmts.last_mut() {
        Some(syn::Stmt::Expr(syn::Expr::Return(r), _)) => {
            let span = r.return_token.span;
            let v = r.expr.clone()?;
            b.stmts.pop();
            let (ret, flag) = (syn::Ident::new(RET, span), syn::Ident::new(RETURNED, span));
            b.stmts.push(syn::parse_quote_spanned!(span=> #ret = #v;));
            b.stmts
                .push(syn::parse_quote_spanned!(span=> #flag = true;));
            b.stmts.push(syn::parse_quote_spanned!(span=> break;));
            Some(span)
        }
        Some(syn::Stmt::Expr(syn::Expr::If(i), _)) => if_returns(i),
        _ => None,
    }
}

/// A mutable view bound by `let` and updated through: `let mut r =
/// m.row_mut(i); r += &v;` (also `column_mut`, `slice_mut`,
/// `index_axis_mut`; `r op= e`, `r.assign(e)`, `r.fill(x)`, and reads of
/// `r`) is rewritten, in every block, to updates of the base through a
/// fresh view at each use, which the lowering already knows:
///
/// ```text
/// let mut r = m.row_mut(i);  r += &v;  r.fill(0.0);
/// m.row_mut(i).assign(&(m.row(i) + &v));  m.row_mut(i).fill(0.0);
/// ```
///
/// While `r` lives it borrows `m` mutably, so nothing else changes `m` in
/// between; the view is left as it is (and refused where it is used) when
/// a variable its arguments read is assigned before `r`'s last use.
pub fn inline_mut_views(b: &mut syn::Block) {
    struct Blocks;
    impl syn::visit_mut::VisitMut for Blocks {
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            syn::visit_mut::visit_block_mut(self, b);
            inline_in(&mut b.stmts);
        }
        fn visit_expr_for_loop_mut(&mut self, f: &mut syn::ExprForLoop) {
            mut_lanes_loop(f);
            syn::visit_mut::visit_expr_for_loop_mut(self, f);
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    syn::visit_mut::VisitMut::visit_block_mut(&mut Blocks, b);
}

/// `for mut row in m.rows_mut() { .. }` (also `columns_mut()`,
/// `outer_iter_mut()`, `axis_iter_mut(Axis(a))`, with `.enumerate()`):
/// a counted loop binding `let mut row = m.row_mut(k);` first, whose
/// updates [`inline_in`] then rewrites.
fn mut_lanes_loop(f: &mut syn::ExprForLoop) {
    // The pattern: `mut row` or `(i, mut row)` with `.enumerate()`.
    let (iter, index, row) = {
        let mut e = &*f.expr;
        let mut enumerate = false;
        if let syn::Expr::MethodCall(m) = e {
            if m.method == "enumerate" && m.args.is_empty() {
                enumerate = true;
                e = &m.receiver;
                if let syn::Expr::MethodCall(m2) = e {
                    if m2.method == "into_iter" && m2.args.is_empty() {
                        e = &m2.receiver;
                    }
                }
            }
        }
        let (index, row) = match (&*f.pat, enumerate) {
            (syn::Pat::Tuple(t), true) if t.elems.len() == 2 => {
                (Some(t.elems[0].clone()), t.elems[1].clone())
            }
            (p, false) => (None, p.clone()),
            _ => return,
        };
        (e.clone(), index, row)
    };
    let syn::Expr::MethodCall(m) = &iter else {
        return;
    };
    let base = &m.receiver;
    if !matches!(&**base, syn::Expr::Path(p) if p.path.get_ident().is_some()) {
        return;
    }
    let span = m.method.span();
    let k = syn::Ident::new("__linad_k", span);
    let (len, view): (syn::Expr, syn::Expr) = match (m.method.to_string().as_str(), m.args.len()) {
        ("rows_mut", 0) => (
            syn::parse_quote_spanned!(span=> #base.nrows()),
            syn::parse_quote_spanned!(span=> #base.row_mut(#k)),
        ),
        ("columns_mut", 0) => (
            syn::parse_quote_spanned!(span=> #base.ncols()),
            syn::parse_quote_spanned!(span=> #base.column_mut(#k)),
        ),
        ("outer_iter_mut", 0) => (
            syn::parse_quote_spanned!(span=> #base.len_of(::linad::ndarray::Axis(0))),
            syn::parse_quote_spanned!(span=> #base.index_axis_mut(::linad::ndarray::Axis(0), #k)),
        ),
        ("axis_iter_mut", 1) => {
            let ax = &m.args[0];
            (
                syn::parse_quote_spanned!(span=> #base.len_of(#ax)),
                syn::parse_quote_spanned!(span=> #base.index_axis_mut(#ax, #k)),
            )
        }
        _ => return,
    };
    *f.pat = syn::parse_quote_spanned!(span=> #k);
    *f.expr = syn::parse_quote_spanned!(span=> 0..#len);
    let mut pre: Vec<syn::Stmt> = vec![syn::parse_quote_spanned!(span=> let #row = #view;)];
    if let Some(i) = index {
        pre.insert(0, syn::parse_quote_spanned!(span=> let #i = #k;));
    }
    pre.extend(std::mem::take(&mut f.body.stmts));
    f.body.stmts = pre;
}

/// The view methods and their read-only counterparts.
const MUT_VIEWS: [(&str, &str); 4] = [
    ("row_mut", "row"),
    ("column_mut", "column"),
    ("slice_mut", "slice"),
    ("index_axis_mut", "index_axis"),
];

fn inline_in(stmts: &mut Vec<syn::Stmt>) {
    let mut k = 0;
    while k < stmts.len() {
        if let Some((name, view, read)) = mut_view_let(&stmts[k]) {
            if let Some(last) = last_use(&stmts[k + 1..], &name) {
                let end = k + 1 + last;
                // The arguments must mean the same at every use.
                let mut args_vars = vec![];
                collect_idents(&view, &mut args_vars);
                let between = syn::Block {
                    brace_token: Default::default(),
                    stmts: stmts[k + 1..=end].to_vec(),
                };
                let assigned = super::control::assigned_names(&between);
                if !args_vars.iter().any(|v| assigned.contains(v)) {
                    let mut rw = ViewUses {
                        name: &name,
                        view: &view,
                        read: &read,
                    };
                    for st in &mut stmts[k + 1..=end] {
                        syn::visit_mut::VisitMut::visit_stmt_mut(&mut rw, st);
                    }
                    stmts.remove(k);
                    continue;
                }
            }
        }
        k += 1;
    }
}

/// `let [mut] r = base.row_mut(..);`: the name, the view expression and
/// its read-only counterpart.
fn mut_view_let(s: &syn::Stmt) -> Option<(String, syn::Expr, syn::Expr)> {
    let syn::Stmt::Local(l) = s else {
        return None;
    };
    let syn::Pat::Ident(pi) = &l.pat else {
        return None;
    };
    let init = l.init.as_ref()?;
    if init.diverge.is_some() {
        return None;
    }
    let syn::Expr::MethodCall(m) = &*init.expr else {
        return None;
    };
    if !matches!(&*m.receiver, syn::Expr::Path(p) if p.path.get_ident().is_some()) {
        return None;
    }
    let (_, read) = MUT_VIEWS.iter().find(|(w, _)| m.method == w)?;
    let mut r = m.clone();
    r.method = syn::Ident::new(read, m.method.span());
    Some((
        pi.ident.to_string(),
        syn::Expr::MethodCall(m.clone()),
        syn::Expr::MethodCall(r),
    ))
}

/// The index (in `stmts`) of the last statement naming `name`.
fn last_use(stmts: &[syn::Stmt], name: &str) -> Option<usize> {
    fn names(ts: proc_macro2::TokenStream, name: &str) -> bool {
        ts.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == name,
            proc_macro2::TokenTree::Group(g) => names(g.stream(), name),
            _ => false,
        })
    }
    stmts
        .iter()
        .rposition(|s| names(quote::ToTokens::to_token_stream(s), name))
}

/// The identifiers an expression mentions.
fn collect_idents(e: &syn::Expr, out: &mut Vec<String>) {
    fn go(ts: proc_macro2::TokenStream, out: &mut Vec<String>) {
        for t in ts {
            match t {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => go(g.stream(), out),
                _ => {}
            }
        }
    }
    go(quote::ToTokens::to_token_stream(e), out);
}

/// Rewrites the uses of a mutable view `name` (see [`inline_mut_views`]).
struct ViewUses<'a> {
    name: &'a str,
    view: &'a syn::Expr,
    read: &'a syn::Expr,
}

impl ViewUses<'_> {
    fn is_view(&self, e: &syn::Expr) -> bool {
        matches!(e, syn::Expr::Path(p) if p.path.is_ident(self.name))
    }
}

impl syn::visit_mut::VisitMut for ViewUses<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        let (view, read) = (self.view, self.read);
        let span = e.span();
        if self.is_view(e) {
            *e = read.clone();
            return;
        }
        match e {
            syn::Expr::Binary(b) if self.is_view(&b.left) => {
                let op: Option<syn::BinOp> = match b.op {
                    syn::BinOp::AddAssign(t) => Some(syn::BinOp::Add(syn::Token![+](t.span()))),
                    syn::BinOp::SubAssign(t) => Some(syn::BinOp::Sub(syn::Token![-](t.span()))),
                    syn::BinOp::MulAssign(t) => Some(syn::BinOp::Mul(syn::Token![*](t.span()))),
                    syn::BinOp::DivAssign(t) => Some(syn::BinOp::Div(syn::Token![/](t.span()))),
                    _ => None,
                };
                if let Some(op) = op {
                    self.visit_expr_mut(&mut b.right);
                    let right = b.right.clone();
                    *e = syn::parse_quote_spanned!(span=> #view.assign(&((#read) #op (#right))));
                    return;
                }
            }
            syn::Expr::MethodCall(m)
                if self.is_view(&m.receiver) && (m.method == "assign" || m.method == "fill") =>
            {
                for a in &mut m.args {
                    self.visit_expr_mut(a);
                }
                *m.receiver = view.clone();
                return;
            }
            _ => {}
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    /// Reads inside macros (`s![..row.len()]`): the read-only view.
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        crate::substitute::in_macro(m, self.name, self.read);
    }
}

/// A `const` or (not `mut`) `static` item of a block, with no attribute
/// but doc comments, becomes a `let` of its type at the start of the block,
/// where it is visible to the whole block as the item is (a constant
/// expression: evaluated at run time it gives the bits Rust's constant
/// evaluation gives, IEEE arithmetic either way). Items with other
/// attributes (`#[cfg]`) stay items (refused).
///
/// ```text
/// let y = x * C; const C: f64 = 2.0; y
/// ==>  let C: f64 = 2.0; let y = x * C; y
/// ```
pub fn hoist_consts(b: &mut syn::Block) {
    struct Hoist;
    impl syn::visit_mut::VisitMut for Hoist {
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            let mut lets = vec![];
            let mut rest = vec![];
            for s in std::mem::take(&mut b.stmts) {
                match const_as_let(&s) {
                    Some(l) => lets.push(l),
                    None => rest.push(s),
                }
            }
            lets.extend(rest);
            b.stmts = lets;
            syn::visit_mut::visit_block_mut(self, b);
        }
        // Items nested in the body are refused: not entered.
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    syn::visit_mut::VisitMut::visit_block_mut(&mut Hoist, b);
}

/// `let NAME: TYPE = EXPR;` for a hoistable `const` or `static` item.
fn const_as_let(s: &syn::Stmt) -> Option<syn::Stmt> {
    let syn::Stmt::Item(item) = s else {
        return None;
    };
    let (attrs, ident, ty, expr) = match item {
        syn::Item::Const(c) if c.generics.params.is_empty() => (&c.attrs, &c.ident, &c.ty, &c.expr),
        syn::Item::Static(st) if matches!(st.mutability, syn::StaticMutability::None) => {
            (&st.attrs, &st.ident, &st.ty, &st.expr)
        }
        _ => return None,
    };
    if attrs.iter().any(|a| !a.path().is_ident("doc")) {
        return None;
    }
    Some(syn::parse_quote_spanned!(ident.span()=> let #ident: #ty = #expr;))
}
