//! Nesting limits, checked before anything recurses on the input.
//!
//! A procedural macro runs on the compiler's thread (8 MiB of stack); `syn`'s
//! parser, the lowering and the emitter recurse on the nesting of the
//! function, so an input nested deeply enough would overflow that stack and
//! abort the compiler. Like rustc's own `recursion_limit`, these limits turn
//! such inputs into spanned errors:
//!
//! - [`tokens`] runs before `syn` and walks the token trees with an explicit
//!   stack: the nesting of delimiters, plus the runs of prefix operators
//!   (`- ! * & |`), generic arguments (`<`) and `else if` chains that `syn`
//!   parses recursively, may not exceed [`MAX_NESTING`] (a `<` that is a
//!   comparison counts until the next `>`, `;` or block: harmless at this limit);
//! - [`syntax`] runs after `syn` (whose expression trees can be deep without
//!   delimiters: `x + x + .. + x`, `x.sin().sin()..`) and visits expressions,
//!   types and patterns, descending at most [`MAX_EXPR_DEPTH`] levels.
//!
//! The IR passes do not need a limit: they run on a thread with a large stack
//! (`expand.rs`).

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// Most nested delimiters (and prefix operators, `else if` links) on one path.
pub const MAX_NESTING: usize = 128;

/// Most nested expressions, types or patterns on one path of the syntax tree.
pub const MAX_EXPR_DEPTH: usize = 256;

fn nesting_error(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "nested too deeply here: #[differentiable] accepts at most {MAX_NESTING} levels of nesting (counting brackets, blocks, generic arguments, prefix operators and `else if` links); split the function: bind inner expressions with `let`, or move inner code into helper functions"
        ),
    )
}

/// One token list being walked: its remaining tokens, the depth at which it
/// starts, the prefix operators in a row and the `else` links of the current
/// `if` chain so far, and whether the last token was a `{ .. }` group.
struct Frame {
    it: proc_macro2::token_stream::IntoIter,
    base: usize,
    run: usize,
    chain: usize,
    angle: usize,
    after_brace: bool,
}

/// Checks the nesting of a token stream without recursion.
pub fn tokens(ts: &TokenStream) -> Result<(), syn::Error> {
    let frame = |it, base| Frame {
        it,
        base,
        run: 0,
        chain: 0,
        angle: 0,
        after_brace: false,
    };
    let mut stack = vec![frame(ts.clone().into_iter(), 0)];
    while let Some(mut f) = stack.pop() {
        while let Some(tt) = f.it.next() {
            let after_brace = std::mem::take(&mut f.after_brace);
            let is_else = matches!(&tt, TokenTree::Ident(i) if i == "else");
            if after_brace && !is_else {
                f.chain = 0;
            }
            let depth = f.base + f.run + f.chain + f.angle;
            match tt {
                TokenTree::Group(g) => {
                    let brace = g.delimiter() == Delimiter::Brace;
                    // Generic arguments hold no blocks: a `<` before one was
                    // a comparison (`if x < y { .. }`).
                    let depth = if brace { depth - f.angle } else { depth };
                    if depth + 1 > MAX_NESTING {
                        return Err(nesting_error(g.span_open()));
                    }
                    f.run = 0;
                    f.after_brace = brace;
                    if brace {
                        f.angle = 0;
                    }
                    stack.push(f);
                    stack.push(frame(g.stream().into_iter(), depth + 1));
                    break;
                }
                TokenTree::Punct(p) => {
                    if matches!(p.as_char(), '-' | '!' | '*' | '&' | '|') {
                        f.run += 1;
                        if depth + 1 > MAX_NESTING {
                            return Err(nesting_error(p.span()));
                        }
                    } else {
                        f.run = 0;
                        match p.as_char() {
                            ';' => {
                                f.chain = 0;
                                f.angle = 0;
                            }
                            '<' => {
                                f.angle += 1;
                                if depth + 1 > MAX_NESTING {
                                    return Err(nesting_error(p.span()));
                                }
                            }
                            '>' => f.angle = f.angle.saturating_sub(1),
                            _ => {}
                        }
                    }
                }
                TokenTree::Ident(i) => {
                    f.run = 0;
                    if is_else {
                        f.chain += 1;
                        if f.base + f.chain > MAX_NESTING {
                            return Err(nesting_error(i.span()));
                        }
                    }
                }
                TokenTree::Literal(_) => f.run = 0,
            }
        }
    }
    Ok(())
}

/// Checks the depth of a parsed function's syntax tree, recursing at most
/// [`MAX_EXPR_DEPTH`] levels.
pub fn syntax(f: &syn::ItemFn) -> Result<(), syn::Error> {
    let mut d = Depth {
        depth: 0,
        found: None,
    };
    d.visit_item_fn(f);
    match d.found {
        Some(span) => Err(syn::Error::new(
            span,
            format!(
                "expression nested too deeply: #[differentiable] accepts at most {MAX_EXPR_DEPTH} levels of nested expressions, types or patterns; split it: bind parts of it with `let` (e.g. partial sums of a long sum)"
            ),
        )),
        None => Ok(()),
    }
}

struct Depth {
    depth: usize,
    found: Option<Span>,
}

impl Depth {
    /// Enters one level; false (and the error recorded) past the limit.
    fn enter(&mut self, span: impl FnOnce() -> Span) -> bool {
        if self.found.is_some() {
            return false;
        }
        if self.depth >= MAX_EXPR_DEPTH {
            self.found = Some(span());
            return false;
        }
        self.depth += 1;
        true
    }
}

impl<'a> Visit<'a> for Depth {
    fn visit_expr(&mut self, e: &'a syn::Expr) {
        if self.enter(|| head_span(e)) {
            syn::visit::visit_expr(self, e);
            self.depth -= 1;
        }
    }

    fn visit_type(&mut self, t: &'a syn::Type) {
        // A type within the limit is shallow enough to span whole.
        if self.enter(Span::call_site) {
            syn::visit::visit_type(self, t);
            self.depth -= 1;
        }
    }

    fn visit_pat(&mut self, p: &'a syn::Pat) {
        if self.enter(Span::call_site) {
            syn::visit::visit_pat(self, p);
            self.depth -= 1;
        }
    }
}

/// The span of an expression's operator or first token, found without
/// walking its (possibly very deep) operands.
fn head_span(e: &syn::Expr) -> Span {
    use syn::Expr as E;
    match e {
        E::Binary(b) => b.op.span(),
        E::Unary(u) => u.op.span(),
        E::MethodCall(m) => m.method.span(),
        E::Call(c) => c.paren_token.span.open(),
        E::Field(f) => f.dot_token.span,
        E::Index(i) => i.bracket_token.span.open(),
        E::Cast(c) => c.as_token.span,
        E::Paren(p) => p.paren_token.span.open(),
        E::Block(b) => b.block.brace_token.span.open(),
        E::If(i) => i.if_token.span,
        E::ForLoop(f) => f.for_token.span,
        E::Reference(r) => r.and_token.span,
        E::Assign(a) => a.eq_token.span,
        E::Lit(l) => l.lit.span(),
        E::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(Span::call_site, |s| s.ident.span()),
        _ => Span::call_site(),
    }
}
