//! The pretty-printer: a compact, deterministic text form of the IR, read back
//! exactly by [`crate::parse`].
//!
//! This is the form reviewers read in the snapshot tests of every pass, so it
//! aims at being short and regular. One statement per line, nested blocks
//! indented two spaces per level, and everywhere a `;` separates the
//! non-linear items (before it) from the linear ones (after it); the `;` and
//! what follows are omitted when there are no linear items.
//!
//! # Example
//!
//! ```text
//! def f(x_0: f64, w_1: [f64] ; dx_2: f64 @ (), dw_3: [f64] @ [shape(w_1, 0)]) -> (f64 ; f64) {
//!   let s_4: f64 = sin x_0
//!   let c_5: f64 = cos x_0
//!   let ; d_6: f64 = lscale c_5, dx_2  #3
//!   drop dw_3
//!   let n_7: i64 = shape w_1, 0
//!   let r_8: f64, ys_9: [f64] = loop n_7 rev (acc_10: f64 = 0.0) |i_11: i64| {
//!     let w_12: f64 = index w_1[i_11]
//!     let acc_13: f64 = add acc_10, w_12
//!     yield acc_13, w_12
//!   }
//!   return r_8 ; d_6
//! }
//! ```
//!
//! # Grammar
//!
//! `[x]` is optional, `x*` repeats, `NL` is a line break. A *split list* of `a`
//! and `b` is `a, .. , a ; b, .., b` where the `; b..` part is omitted when there
//! are no `b`s and written `; b, ..` when there are no `a`s.
//!
//! ```text
//! program  := func (NL func)*
//! func     := "def" fname "(" split(var ":" ty, var ":" ty ["@" shape]) ")"
//!             "->" "(" split(ty, ty) ")" "{" NL [unbound] stmt* "return" results NL "}" NL
//! unbound  := "unbound" split(var ":" ty, var ":" ty) NL
//! stmt     := ["let" split(var ":" ty, var ":" ty) "="] expr
//! results  := split(atom, var)                          (also after "yield")
//! block    := "{" [src] NL stmt* "yield" results NL "}"      (a compound's src goes after its first "{")
//! expr     := simple [src] NL | compound NL
//! simple   := atom                                      copy
//!           | prim atom, ..                             prim by Prim::name(): "mul a, b"
//!           | "tuple" atom, .. | "untuple" atom
//!           | "index" atom "[" atom, .. "]"
//!           | "update" atom "[" atom, .. "]" ("=" | "+=") atom
//!           | "gather" atom, atom | "scatter_add" atom, atom, atom
//!           | ("reduce_sum" | "reduce_prod" | "reduce_max" | "reduce_min") atom [", axis=" N]
//!           | ("argmax" | "argmin" | "argsum" | "argprod") atom [", axis=" N]
//!           | "scan" atom ["rev"] | "matmul" atom, atom | "transpose" atom
//!           | "broadcast" atom, "[" atom, .. "]" [", axes=[" N, .. "]"]
//!           | "shape" atom, N
//!           | "lzero" shape | "ladd" var, var | "lneg" var | "lscale" atom, var
//!           | "dup" var | "drop" var | "ltuple" var, .. | "luntuple" var
//!           | "lindex" var "[" atom, .. "]" | "lupdate" var "[" atom, .. "]" ("=" | "+=") var
//!           | "lgather" var, atom | "lscatter_add" atom, atom, var
//!           | "lsum" var [", axis=" N] | "lbroadcast" var, "[" atom, .. "]" [", axes=[" N, .. "]"]
//!           | "ltranspose" var | "lscan" var ["rev"]
//!           | "lmatmul" atom, var | "lmatmul" var, atom "lin_left"
//!           | "louter" atom, var | "louter" var, atom "lin_left"
//!           | "call" fname "(" split(atom, var) ")" ["@" shape, ..]
//! compound := "if" atom ["@" shape, ..] block "else" block
//!           | "loop" atom ["rev"] [state] lambda
//!           | "build" "[" atom, .. "]" lambda
//!           | "map" "(" split(atom, var) ")" lambda
//!           | "fold" atom [state] lambda
//! state    := "(" split(var ":" ty "=" atom, var ":" ty "=" var) ")"   paired form
//!           | "(" split(atom, var) ")"                                  positional form
//! lambda   := "|" split(var ":" ty, var ":" ty) "|" block
//! shape    := "()"  scalar | "[" dim, .. "]"  array | "(" shape "," ")" | "(" shape, shape, .. ")" | "(,)"  tuples
//! dim      := atom | "shape(" var ", " N ")"
//! atom     := var | i64 literal | f64 literal | "true" | "false"
//! var      := name "_" index       (name is an identifier, or a quoted string)
//! fname    := identifier | quoted string
//! ty       := as printed by Ty's Display: "f64" | "i64" | "bool" | "[" ty "]" | "(" ty, .. ")" | "(" ty "," ")"
//! src      := "#" N
//! ```
//!
//! The parser also accepts blank lines and `//` comments.
//!
//! *Variables* print as their name hint, `_`, and their index in the
//! [`VarTable`] (`x_0`, `sin_7`); a name that is not an ASCII identifier is
//! quoted (`"x.1"_4`). Every binder carries its type, so the parser never
//! infers. *Literals*: `f64` in Rust's shortest round-trip form, always with a
//! `.` or an exponent (`1.0`, `1e-7`, `inf`, `-inf`, `NaN`, `-NaN`, and
//! `nan0x7ff8000000000001` for other NaN payloads), `i64` plain, `true`/`false`.
//!
//! *Loops and folds* print their state in the paired form, each state
//! parameter with its initial value: `loop n_2 (acc_3: f64 = 0.0 ; dacc_4: f64 =
//! d_1) |i_5: i64| {`, where the loop lambda's parameters are `[i_5, acc_3 ;
//! dacc_4]`; `fold w_1 (acc_3: f64 = 0.0) |x_4: f64| {`, where the fold lambda's
//! parameters are `[acc_3, x_4]`. The `(..)` is omitted when there is no state.
//! When the lambda's parameters do not line up with the initial values (ill-typed
//! IR) the positional form is printed instead: the initial atoms in `(..)` and
//! all the lambda's parameters in `|..|`.
//!
//! *Shapes*: `lin_param_shapes` follow their linear parameters (`dw_3: [f64] @
//! [shape(w_1, 0)]`; the first `k` parameters carry them when only `k` are
//! given); `Call`/`If` `lin_shapes` follow the expression head after `@`.
//! `src` ids print as a trailing `#12` (after the `{` of a compound statement).
//!
//! *Unbound variables*: variables read but never bound (only in ill-scoped IR)
//! are declared on an `unbound` line at the top of the body, so that the text
//! still gives their types. [`func_to_string_exact`] also lists there every
//! table entry the function never mentions (dead variables left by passes), so
//! that parsing gives back the whole [`VarTable`]; the plain printer omits them.
//! The result types in the `def` line are informational (the parser skips them;
//! `?` marks an unknown type).

use crate::ir::*;
use crate::types::Ty;
use crate::visit;
use std::collections::BTreeSet;
use std::fmt::Write;

const INDENT: &str = "  ";

/// Whether a name hint prints bare (empty, or an ASCII identifier).
pub(crate) fn is_plain_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_none_or(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A name hint or function name as printed: bare if it is an identifier, else
/// quoted with Rust string escapes.
fn name_to_string(s: &str) -> String {
    if is_plain_name(s) {
        s.to_string()
    } else {
        format!("{s:?}")
    }
}

/// A function name as printed (bare if an identifier, else quoted).
pub fn func_name_to_string(s: &str) -> String {
    if is_plain_name(s) && !s.is_empty() {
        s.to_string()
    } else {
        format!("{s:?}")
    }
}

/// A variable as printed: `name_N` (`%N` if `v` has no entry in `vars`, which
/// only happens for a variable of another function).
pub fn var_to_string(v: Var, vars: &VarTable) -> String {
    match vars.vars.get(v.0 as usize) {
        Some(info) => format!("{}_{}", name_to_string(&info.name), v.0),
        None => format!("{v}"),
    }
}

/// An `f64` literal as printed: shortest round-trip form, always with a `.` or an
/// exponent; `inf`, `-inf`, `NaN`, `-NaN` and `nan0x<bits>` for other NaNs.
pub fn f64_to_string(x: f64) -> String {
    if x.is_nan() {
        let bits = x.to_bits();
        if bits == f64::NAN.to_bits() {
            "NaN".to_string()
        } else if bits == (-f64::NAN).to_bits() {
            "-NaN".to_string()
        } else {
            format!("nan0x{bits:016x}")
        }
    } else {
        format!("{x:?}")
    }
}

/// An atom as printed.
pub fn atom_to_string(a: &Atom, vars: &VarTable) -> String {
    match a {
        Atom::Var(v) => var_to_string(*v, vars),
        Atom::F64(x) => f64_to_string(*x),
        Atom::I64(x) => x.to_string(),
        Atom::Bool(b) => b.to_string(),
    }
}

/// One size of a shape tree: an atom or `shape(w_1, 0)`.
pub fn dim_to_string(d: &Dim, vars: &VarTable) -> String {
    match d {
        Dim::Atom(a) => atom_to_string(a, vars),
        Dim::Of(v, axis) => format!("shape({}, {axis})", var_to_string(*v, vars)),
    }
}

/// A shape tree: `()` for a scalar, `[n_3, shape(w_1, 0)]` for an array,
/// `(s, t)` for a tuple (`(s,)` with one component, `(,)` with none).
pub fn shape_to_string(s: &ShapeTree, vars: &VarTable) -> String {
    match s {
        ShapeTree::Scalar => "()".to_string(),
        ShapeTree::Array(ds) => format!("[{}]", join(ds.iter().map(|d| dim_to_string(d, vars)))),
        ShapeTree::Tuple(ts) => match ts.as_slice() {
            [] => "(,)".to_string(),
            [t] => format!("({},)", shape_to_string(t, vars)),
            _ => format!("({})", join(ts.iter().map(|t| shape_to_string(t, vars)))),
        },
    }
}

fn join(items: impl IntoIterator<Item = String>) -> String {
    items.into_iter().collect::<Vec<_>>().join(", ")
}

/// `a, b ; c` / `a, b` / `; c` / ``.
fn split(nl: Vec<String>, lin: Vec<String>) -> String {
    match (nl.is_empty(), lin.is_empty()) {
        (_, true) => nl.join(", "),
        (true, false) => format!("; {}", lin.join(", ")),
        (false, false) => format!("{} ; {}", nl.join(", "), lin.join(", ")),
    }
}

fn ty_of(v: Var, vars: &VarTable) -> String {
    match vars.vars.get(v.0 as usize) {
        Some(info) => info.ty.to_string(),
        None => "?".to_string(),
    }
}

fn atom_ty_string(a: &Atom, vars: &VarTable) -> String {
    match a {
        Atom::Var(v) => ty_of(*v, vars),
        Atom::F64(_) => Ty::F64.to_string(),
        Atom::I64(_) => Ty::I64.to_string(),
        Atom::Bool(_) => Ty::BOOL.to_string(),
    }
}

/// A binder with its type: `x_3: f64`.
fn decl(v: Var, vars: &VarTable) -> String {
    format!("{}: {}", var_to_string(v, vars), ty_of(v, vars))
}

fn decls(nl: &[Var], lin: &[Var], vars: &VarTable) -> String {
    split(
        nl.iter().map(|v| decl(*v, vars)).collect(),
        lin.iter().map(|v| decl(*v, vars)).collect(),
    )
}

fn atoms(xs: &[Atom], vars: &VarTable) -> String {
    join(xs.iter().map(|a| atom_to_string(a, vars)))
}

fn lvars(xs: &[Var], vars: &VarTable) -> String {
    join(xs.iter().map(|v| var_to_string(*v, vars)))
}

fn args(nl: &[Atom], lin: &[Var], vars: &VarTable) -> String {
    split(
        nl.iter().map(|a| atom_to_string(a, vars)).collect(),
        lin.iter().map(|v| var_to_string(*v, vars)).collect(),
    )
}

fn axis_suffix(axis: Option<usize>) -> String {
    axis.map(|a| format!(", axis={a}")).unwrap_or_default()
}

fn axes_suffix(axes: &[usize]) -> String {
    if axes.is_empty() {
        String::new()
    } else {
        format!(", axes=[{}]", join(axes.iter().map(|a| a.to_string())))
    }
}

fn shapes_suffix(shapes: &[ShapeTree], vars: &VarTable) -> String {
    if shapes.is_empty() {
        String::new()
    } else {
        format!(
            " @ {}",
            join(shapes.iter().map(|s| shape_to_string(s, vars)))
        )
    }
}

/// The one-line form of an array operation: its name, then its operands.
fn array_op_to_string(op: &ArrayOp, vars: &VarTable) -> String {
    let a = |x: &Atom| atom_to_string(x, vars);
    let name = op.name();
    match op {
        ArrayOp::Index { arr, idx } => format!("{name} {}[{}]", a(arr), atoms(idx, vars)),
        ArrayOp::Update { arr, idx, val, add } => format!(
            "{name} {}[{}] {} {}",
            a(arr),
            atoms(idx, vars),
            if *add { "+=" } else { "=" },
            a(val)
        ),
        ArrayOp::Gather { arr, idx } => format!("{name} {}, {}", a(arr), a(idx)),
        ArrayOp::ScatterAdd { len, idx, vals } => {
            format!("{name} {}, {}, {}", a(len), a(idx), a(vals))
        }
        ArrayOp::Reduce { arr, axis, .. } | ArrayOp::ArgReduce { arr, axis, .. } => {
            format!("{name} {}{}", a(arr), axis_suffix(*axis))
        }
        ArrayOp::Scan { arr, reverse } => {
            format!("{name} {}{}", a(arr), if *reverse { " rev" } else { "" })
        }
        ArrayOp::MatMul { a: l, b } => format!("{name} {}, {}", a(l), a(b)),
        ArrayOp::Transpose { arr } => format!("{name} {}", a(arr)),
        ArrayOp::Broadcast { arr, shape, axes } => format!(
            "{name} {}, [{}]{}",
            a(arr),
            atoms(shape, vars),
            axes_suffix(axes)
        ),
        ArrayOp::Shape { arr, axis } | ArrayOp::Stride { arr, axis } => {
            format!("{name} {}, {axis}", a(arr))
        }
    }
}

/// The one-line form of a linear operation: its name, then its operands.
fn lin_op_to_string(op: &LinOp, vars: &VarTable) -> String {
    let a = |x: &Atom| atom_to_string(x, vars);
    let v = |x: &Var| var_to_string(*x, vars);
    let upd = |add: bool| if add { "+=" } else { "=" };
    let rev = |r: bool| if r { " rev" } else { "" };
    let name = op.name();
    match op {
        LinOp::Zero(s) => format!("{name} {}", shape_to_string(s, vars)),
        LinOp::Add(x, y) => format!("{name} {}, {}", v(x), v(y)),
        LinOp::Neg(x)
        | LinOp::Dup(x)
        | LinOp::Drop(x)
        | LinOp::Untuple(x)
        | LinOp::Transpose(x) => {
            format!("{name} {}", v(x))
        }
        LinOp::Scale { s, x } => format!("{name} {}, {}", a(s), v(x)),
        LinOp::Tuple(xs) if xs.is_empty() => name.to_string(),
        LinOp::Tuple(xs) => format!("{name} {}", lvars(xs, vars)),
        LinOp::Index { x, idx } => format!("{name} {}[{}]", v(x), atoms(idx, vars)),
        LinOp::Update { x, idx, val, add } => format!(
            "{name} {}[{}] {} {}",
            v(x),
            atoms(idx, vars),
            upd(*add),
            v(val)
        ),
        LinOp::Take { x, idx, zero } => format!(
            "{name} {}[{}]{}",
            v(x),
            atoms(idx, vars),
            if *zero { "" } else { " keep" }
        ),
        LinOp::Gather { x, idx } => format!("{name} {}, {}", v(x), a(idx)),
        LinOp::ScatterAdd { len, idx, x } => {
            format!("{name} {}, {}, {}", a(len), a(idx), v(x))
        }
        LinOp::Sum { x, axis } => format!("{name} {}{}", v(x), axis_suffix(*axis)),
        LinOp::Broadcast { x, shape, axes } => format!(
            "{name} {}, [{}]{}",
            v(x),
            atoms(shape, vars),
            axes_suffix(axes)
        ),
        LinOp::SumTo { x, shape } => format!("{name} {}, [{}]", v(x), atoms(shape, vars)),
        LinOp::MatMul { a: m, x, lin_left } | LinOp::Outer { x, b: m, lin_left } => {
            if *lin_left {
                format!("{name} {}, {} lin_left", v(x), a(m))
            } else {
                format!("{name} {}, {}", a(m), v(x))
            }
        }
        LinOp::Scan { x, reverse } => format!("{name} {}{}", v(x), rev(*reverse)),
    }
}

/// The one-line form of a non-compound expression; `None` for `If`, `Loop`,
/// `Build`, `Map`, `Fold` and `While`.
fn simple_expr_to_string(e: &Expr, vars: &VarTable) -> Option<String> {
    Some(match e {
        Expr::Atom(a) => atom_to_string(a, vars),
        Expr::Prim(p, xs) if xs.is_empty() => p.name().to_string(),
        Expr::Prim(p, xs) => format!("{} {}", p.name(), atoms(xs, vars)),
        Expr::Array(op) => array_op_to_string(op, vars),
        Expr::Tuple(xs) if xs.is_empty() => "tuple".to_string(),
        Expr::Tuple(xs) => format!("tuple {}", atoms(xs, vars)),
        Expr::Untuple(a) => format!("untuple {}", atom_to_string(a, vars)),
        Expr::Lin(op) => lin_op_to_string(op, vars),
        Expr::Call(c) => format!(
            "call {}({}){}",
            func_name_to_string(&c.func),
            args(&c.args, &c.lin_args, vars),
            shapes_suffix(&c.lin_shapes, vars)
        ),
        Expr::If(_)
        | Expr::Loop(_)
        | Expr::Build(_)
        | Expr::Map(_)
        | Expr::Fold(_)
        | Expr::While(_) => return None,
    })
}

fn pad(out: &mut String, indent: usize) {
    for _ in 0..indent {
        out.push_str(INDENT);
    }
}

fn src_suffix(src: Option<SrcId>) -> String {
    src.map(|s| format!("  #{}", s.0)).unwrap_or_default()
}

/// Writes the head of a lambda (`|i_3: i64 ; dx_4: f64| {`), the body and the
/// closing `}` (without a line break).
fn write_lambda(
    out: &mut String,
    params: &[Var],
    lin_params: &[Var],
    body: &Block,
    vars: &VarTable,
    indent: usize,
    src: Option<SrcId>,
) {
    let _ = writeln!(
        out,
        "|{}| {{{}",
        decls(params, lin_params, vars),
        src_suffix(src)
    );
    write_block(out, body, vars, indent + 1, "yield");
    pad(out, indent);
    out.push('}');
}

/// Writes the compound expression `e` (the part after `let .. =`), from its head
/// to its closing `}`, without a final line break.
fn write_compound(out: &mut String, e: &Expr, vars: &VarTable, indent: usize, src: Option<SrcId>) {
    let a = |x: &Atom| atom_to_string(x, vars);
    match e {
        Expr::If(i) => {
            let _ = writeln!(
                out,
                "if {}{} {{{}",
                a(&i.cond),
                shapes_suffix(&i.lin_shapes, vars),
                src_suffix(src)
            );
            write_block(out, &i.then_, vars, indent + 1, "yield");
            pad(out, indent);
            out.push_str("} else {\n");
            write_block(out, &i.else_, vars, indent + 1, "yield");
            pad(out, indent);
            out.push('}');
        }
        Expr::Loop(l) => {
            let _ = write!(out, "loop {}{}", a(&l.n), if l.rev { " rev" } else { "" });
            let p = &l.body.params;
            let lp = &l.body.lin_params;
            let paired = p.len() == l.init.len() + 1 && lp.len() == l.lin_init.len();
            if paired {
                if !l.init.is_empty() || !l.lin_init.is_empty() {
                    let nl = p[1..]
                        .iter()
                        .zip(&l.init)
                        .map(|(v, i)| format!("{} = {}", decl(*v, vars), a(i)))
                        .collect();
                    let lin = lp
                        .iter()
                        .zip(&l.lin_init)
                        .map(|(v, i)| format!("{} = {}", decl(*v, vars), var_to_string(*i, vars)))
                        .collect();
                    let _ = write!(out, " ({})", split(nl, lin));
                }
                out.push(' ');
                write_lambda(out, &p[..1], &[], &l.body.body, vars, indent, src);
            } else {
                if !l.init.is_empty() || !l.lin_init.is_empty() {
                    let _ = write!(out, " ({})", args(&l.init, &l.lin_init, vars));
                }
                out.push(' ');
                write_lambda(out, p, lp, &l.body.body, vars, indent, src);
            }
        }
        Expr::Build(b) => {
            let _ = write!(out, "build [{}] ", atoms(&b.shape, vars));
            write_lambda(
                out,
                &b.body.params,
                &b.body.lin_params,
                &b.body.body,
                vars,
                indent,
                src,
            );
        }
        Expr::Map(m) => {
            let _ = write!(out, "map({}) ", args(&m.arrs, &m.lin_arrs, vars));
            write_lambda(
                out,
                &m.body.params,
                &m.body.lin_params,
                &m.body.body,
                vars,
                indent,
                src,
            );
        }
        Expr::Fold(fd) => {
            let _ = write!(out, "fold {}", a(&fd.arr));
            let p = &fd.body.params;
            let k = fd.init.len();
            if p.len() == k + 1 {
                if k > 0 {
                    let nl: Vec<String> = p[..k]
                        .iter()
                        .zip(&fd.init)
                        .map(|(v, i)| format!("{} = {}", decl(*v, vars), a(i)))
                        .collect();
                    let _ = write!(out, " ({})", nl.join(", "));
                }
                out.push(' ');
                write_lambda(
                    out,
                    &p[k..],
                    &fd.body.lin_params,
                    &fd.body.body,
                    vars,
                    indent,
                    src,
                );
            } else {
                if k > 0 {
                    let _ = write!(out, " ({})", atoms(&fd.init, vars));
                }
                out.push(' ');
                write_lambda(
                    out,
                    p,
                    &fd.body.lin_params,
                    &fd.body.body,
                    vars,
                    indent,
                    src,
                );
            }
        }
        Expr::While(w) => {
            // `while (init..) |s..| { cond } do |s..| { body }`
            out.push_str("while ");
            if !w.init.is_empty() {
                let _ = write!(out, "({}) ", atoms(&w.init, vars));
            }
            write_lambda(
                out,
                &w.cond.params,
                &w.cond.lin_params,
                &w.cond.body,
                vars,
                indent,
                src,
            );
            out.push_str(" do ");
            write_lambda(
                out,
                &w.body.params,
                &w.body.lin_params,
                &w.body.body,
                vars,
                indent,
                None,
            );
        }
        _ => {
            // Not compound: print it on one line.
            if let Some(s) = simple_expr_to_string(e, vars) {
                out.push_str(&s);
                out.push_str(&src_suffix(src));
            }
        }
    }
}

/// Writes one statement at `indent`, ending with a line break.
fn write_stmt(out: &mut String, s: &Stmt, vars: &VarTable, indent: usize) {
    pad(out, indent);
    if !s.binds.is_empty() || !s.lin_binds.is_empty() {
        let _ = write!(out, "let {} = ", decls(&s.binds, &s.lin_binds, vars));
    }
    match simple_expr_to_string(&s.expr, vars) {
        Some(e) => {
            out.push_str(&e);
            out.push_str(&src_suffix(s.src));
        }
        None => write_compound(out, &s.expr, vars, indent, s.src),
    }
    out.push('\n');
}

/// Writes the statements of a block and its `kw` (`yield` / `return`) line.
fn write_block(out: &mut String, b: &Block, vars: &VarTable, indent: usize, kw: &str) {
    for s in &b.stmts {
        write_stmt(out, s, vars, indent);
    }
    pad(out, indent);
    out.push_str(kw);
    let r = args(&b.results, &b.lin_results, vars);
    if !r.is_empty() {
        out.push(' ');
        out.push_str(&r);
    }
    out.push('\n');
}

/// An expression as printed after `let .. = `. Compound expressions span
/// several lines: their nested statements are indented one level (two spaces)
/// and the last line is the closing `}`.
pub fn expr_to_string(e: &Expr, vars: &VarTable) -> String {
    let mut out = String::new();
    write_compound(&mut out, e, vars, 0, None);
    out
}

/// A statement as printed (with its `src` id), ending with a line break;
/// compound statements span several lines.
pub fn stmt_to_string(s: &Stmt, vars: &VarTable) -> String {
    let mut out = String::new();
    write_stmt(&mut out, s, vars, 0);
    out
}

/// A block as printed inside a lambda or branch: its statements then `yield
/// results`, each line indented by `indent` levels (two spaces each) and ending
/// with a line break.
pub fn block_to_string(b: &Block, vars: &VarTable, indent: usize) -> String {
    let mut out = String::new();
    write_block(&mut out, b, vars, indent, "yield");
    out
}

/// Variables the function declares: parameters, binders and lambda parameters.
fn declared(f: &Func) -> BTreeSet<Var> {
    fn block(b: &Block, out: &mut BTreeSet<Var>) {
        for s in &b.stmts {
            out.extend(s.binds.iter().chain(&s.lin_binds));
            for l in visit::lambdas(&s.expr) {
                out.extend(l.params.iter().chain(&l.lin_params));
            }
            for nested in visit::blocks(&s.expr) {
                block(nested, out);
            }
        }
    }
    let mut out: BTreeSet<Var> = f.params.iter().chain(&f.lin_params).copied().collect();
    block(&f.body, &mut out);
    out
}

/// Variables the function reads (operands, results, shape dims), at any depth.
fn referenced(f: &Func) -> BTreeSet<Var> {
    fn block(b: &Block, out: &mut BTreeSet<Var>) {
        for s in &b.stmts {
            let mut nl = vec![];
            let mut lin = vec![];
            visit::for_each_operand(&s.expr, &mut |a| nl.extend(a.var()), &mut |v| lin.push(v));
            out.extend(nl);
            out.extend(lin);
            for nested in visit::blocks(&s.expr) {
                block(nested, out);
            }
        }
        out.extend(b.results.iter().filter_map(Atom::var));
        out.extend(b.lin_results.iter().copied());
    }
    let mut out = BTreeSet::new();
    for s in &f.lin_param_shapes {
        visit::shape_vars(s, &mut out);
    }
    block(&f.body, &mut out);
    out
}

fn write_func(out: &mut String, f: &Func, exact: bool) {
    let vars = &f.vars;
    let lin: Vec<String> = f
        .lin_params
        .iter()
        .enumerate()
        .map(|(i, v)| match f.lin_param_shapes.get(i) {
            Some(s) => format!("{} @ {}", decl(*v, vars), shape_to_string(s, vars)),
            None => decl(*v, vars),
        })
        .collect();
    let params = split(f.params.iter().map(|v| decl(*v, vars)).collect(), lin);
    let res = split(
        f.body
            .results
            .iter()
            .map(|a| atom_ty_string(a, vars))
            .collect(),
        f.body.lin_results.iter().map(|v| ty_of(*v, vars)).collect(),
    );
    let _ = writeln!(
        out,
        "def {}({params}) -> ({res}) {{",
        func_name_to_string(&f.name)
    );
    let decl_set = declared(f);
    let unbound: Vec<Var> = if exact {
        (0..f.vars.len() as u32)
            .map(Var)
            .filter(|v| !decl_set.contains(v))
            .collect()
    } else {
        referenced(f)
            .into_iter()
            .filter(|v| !decl_set.contains(v) && (v.0 as usize) < f.vars.len())
            .collect()
    };
    if !unbound.is_empty() {
        let (lin, nl): (Vec<Var>, Vec<Var>) = unbound.into_iter().partition(|v| vars.is_linear(*v));
        let _ = writeln!(out, "{INDENT}unbound {}", decls(&nl, &lin, vars));
    }
    write_block(out, &f.body, vars, 1, "return");
    out.push_str("}\n");
}

/// A function as printed (see the module doc). Table entries the function
/// never mentions are not printed; see [`func_to_string_exact`].
pub fn func_to_string(f: &Func) -> String {
    let mut out = String::new();
    write_func(&mut out, f, false);
    out
}

/// A function as printed, plus an `unbound` line declaring every entry of its
/// [`VarTable`] that it does not bind, so that parsing the text gives back an
/// equal [`Func`] even when passes left dead variables in the table.
pub fn func_to_string_exact(f: &Func) -> String {
    let mut out = String::new();
    write_func(&mut out, f, true);
    out
}

/// A program as printed: its functions in order, separated by blank lines.
pub fn program_to_string(p: &Program) -> String {
    let fs: Vec<String> = p.funcs.iter().map(func_to_string).collect();
    fs.join("\n")
}

/// As [`program_to_string`] with [`func_to_string_exact`] for every function.
pub fn program_to_string_exact(p: &Program) -> String {
    let fs: Vec<String> = p.funcs.iter().map(func_to_string_exact).collect();
    fs.join("\n")
}
