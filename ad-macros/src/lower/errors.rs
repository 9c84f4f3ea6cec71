//! The texts of the front end's refusals, in one place (rustc style: lower
//! case, what is not supported, then what to write instead). Type errors
//! that mirror rustc's wording are built where they arise (`ops.rs`).

/// `&mut` in an expression.
pub const MUT_REF: &str =
    "mutable references (`&mut`) are not supported in #[differentiable] functions: use `let mut` variables and assignments";
/// A labelled block.
pub const LABEL: &str = "labelled blocks are not supported: a labelled loop is (`'a: for ..` with `break 'a` / `continue 'a`); leave a block by `if`/`else`";
/// `unsafe { .. }`.
pub const UNSAFE: &str = "`unsafe` blocks are not supported in #[differentiable] functions";
/// `while let`.
pub const WHILE_LET: &str = "`while let` is not supported: use `while` with a condition";
/// `loop` with no `break` it can see.
pub const LOOP_WITHOUT_BREAK: &str =
    "this `loop` has no `break` linad can follow: end it with `if c { break; }` at the top level of its body (a `break` that ends a branch of an `if` there); a `return` does not end it";
/// `break value` out of something else than a `loop`.
pub const BREAK_VALUE: &str =
    "`break` with a value is supported out of a `loop` (`let r = loop { .. break v; .. };`), not here: assign the value to a variable declared before the loop, then `break;`";
/// `break value` whose type the syntax does not show.
pub const BREAK_VALUE_TYPE: &str =
    "linad needs the type of this `break`'s value before it lowers the loop, and cannot see it from the syntax: annotate the loop's result (`let r: f64 = loop { .. };`)";
/// `break value` of an array (or another value without a zero).
pub const BREAK_VALUE_ARRAY: &str =
    "`break` with an array value is not supported (numbers, `bool` and tuples of them are): assign the array to a variable declared before the loop, then `break;`";
/// `break` elsewhere.
pub const BREAK: &str =
    "`break` is supported as a statement of a loop body or of the `if`s and blocks in it, not inside an expression (a `let` initialiser, a `match` arm): make it a statement (`if c { break; }`)";
/// `continue`.
pub const CONTINUE: &str =
    "`continue` is supported as a statement of a loop body or of the `if`s and blocks in it, not inside an expression (a `let` initialiser, a `match` arm): make it a statement (`if c { continue; }`)";
/// `return` before the end.
pub const EARLY_RETURN: &str =
    "early `return` is not supported: only a final `return value;` is; compute the result with `if`/`else` expressions instead (`if c { a } else { b }`)";
/// A struct literal.
pub const STRUCT_LIT: &str =
    "struct literals are not supported in #[differentiable] functions: use tuples";
/// A range outside `for` and iterator chains.
pub const RANGE_VALUE: &str =
    "ranges are only supported in `for i in a..b` loops and iterator chains (`(a..b).map(|i| ..).sum::<f64>()`)";
/// An `if let` pattern that cannot be tested.
pub const IF_LET_PATTERN: &str = "`if let` patterns are supported on numbers, `bool` and field-less enums of this crate: literals, ranges (`1..=3`), variants (`Mode::Fast`), `_`, bindings and `|`; destructure tuples with `let`, and test with `if`";

/// `let` as an expression other than `if let P = e` (let chains).
pub const LET_EXPR: &str =
    "`let` expressions are supported only as the whole condition of `if let P = e`: write the other conditions as a nested `if`";
/// `?`.
pub const TRY: &str = "the `?` operator is not supported in #[differentiable] functions";
/// Arrays of arrays (`[[a, b], [c, d]]`).
pub const NESTED_ARRAY: &str =
    "arrays of arrays are not supported: hold a matrix in an `Array2` (`array![[a, b], [c, d]]`, `Array2::zeros((r, c))`), indexed `m[[i, j]]`";
/// `async` / `.await`.
pub const ASYNC: &str = "`async` and `.await` are not supported in #[differentiable] functions";
/// Anything else.
pub const UNSUPPORTED_EXPR: &str =
    "this expression is not supported in a #[differentiable] function";
/// `f32`.
pub const F32: &str = "`f32` is not supported: #[differentiable] functions compute in `f64`";
/// String, char and byte literals.
pub const OTHER_LIT: &str =
    "only numeric and boolean literals are supported in #[differentiable] functions";
/// Items inside the body.
pub const ITEM: &str =
    "items (functions, `use`, a `const` or `static` with attributes, ...) inside a #[differentiable] function are not supported: move them outside the function";
/// `Vec::new()` other than as the start of pushes in a `for` loop.
pub const VEC_PUSH: &str =
    "an empty `Vec` is supported as the start of one `for` loop's pushes: `let mut v = Vec::new();` (or `Vec::with_capacity(n)`, `vec![]`), then the first statement naming `v` is a `for` loop calling `v.push(x)` (not in a loop nested in it, not reading `v` otherwise, not pushing again after it), of numbers; else build the array with `Array1::from_shape_fn(n, |i| ..)` or `.map(..).collect()`";
/// `let (a, b);` and other patterns without a value.
pub const LET_NO_INIT: &str =
    "`let` without a value is supported for a name or a tuple of names (`let y;` / `let (p, q);`, then `y = ..` on every path): give these variables their values where they are declared (`let (a, b) = if c { (x, y) } else { (y, x) };`)";
/// `let y;` whose assigned values do not show their type.
pub const LET_DEFERRED_TYPE: &str =
    "linad needs the type of a variable declared without a value before it lowers the statements assigning it, and cannot see it from this value's syntax: annotate a number or a tuple (`let y: f64;`); an array needs its value where it is declared (`let w = if c { .. } else { .. };`)";
/// `let y;` of an array (or another value without a zero).
pub const LET_DEFERRED_ARRAY: &str =
    "a variable declared without a value is supported for numbers, `bool` and tuples of them, not arrays: give the array its value where it is declared (`let a = if c { x.to_owned() } else { x.mapv(f64::exp) };`)";
/// `let .. else`.
pub const LET_ELSE: &str = "`let ... else` is supported as a statement of a block, with patterns on numbers, `bool` and field-less enums";
/// An iterator stored in a variable.
pub const ITER_VALUE: &str =
    "iterators must be consumed in the expression that creates them: end the chain with `.sum::<f64>()`, `.fold(..)` or `.collect::<Array1<f64>>()`";
/// A pattern we cannot bind.
pub const PATTERN: &str =
    "this pattern is not supported: bind a name, `_`, `&name`, or a tuple or a fixed-size array (`[a, b]`) of these";
/// `ref` bindings.
pub const REF_PATTERN: &str = "`ref` bindings are not supported: bind by value";

/// A macro call; `on_entry`: the function's leading assertions are checked
/// on entry by its derivatives (`crate::asserts`), so an assertion may move
/// there.
pub fn macro_refused(m: &syn::Macro, on_entry: bool) -> String {
    let name = m
        .path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    let hint = match name.as_str() {
        "vec" | "array" => "bind the array with `let` (`let v = vec![a, b];`) or remove it",
        _ if on_entry && crate::asserts::is_assertion(m) => {
            "an assertion is supported among the statements a function's body starts with, before any other (its derivatives check it on entry): move it there if it reads only parameters, or check the arguments before calling the function"
        }
        _ if crate::asserts::is_assertion(m) => {
            "remove it (check the arguments before calling the function)"
        }
        "panic" | "unreachable" | "todo" | "unimplemented" => "remove it",
        _ => "remove it",
    };
    format!("macros are not supported in #[differentiable] functions: `{name}!` cannot be differentiated; {hint}")
}

/// A path to a constant or static we do not know.
pub fn const_refused(name: &str) -> String {
    format!(
        "`{name}` is not supported: #[differentiable] functions can only read their parameters, their local variables, std constants such as `std::f64::consts::PI` or `f64::INFINITY`, and `const` or `static` items that the crate's source declares (a constant imported from another crate is not known); pass `{name}` as a parameter"
    )
}
