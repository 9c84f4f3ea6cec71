//! Rust source written as text: [`Code`] and the [`text!`] macro, the
//! emitter's `quote!` for function bodies.
//!
//! `quote!` builds a token tree, and inside a procedural macro every token
//! it pushes and every stream it splices into another is a call across the
//! compiler's proc-macro bridge: writing the derivatives' bodies that way
//! was about half of what the macro costs a `cargo check` (README "Keeping
//! builds fast"). `text!` takes the same input (`#x`, `#(#xs),*`,
//! `#(#a: #b)*`) and appends each token's text to a `String`; a body is
//! handed to the compiler as one string, lexed once
//! ([`Code::into_tokens`]).
//!
//! ```text
//! let p = ident("mul_3");                       text!(let #p = #a * #b;)
//! let (a, b) = (text!(x_1), text!(0.5f64));  => "let mul_3 = x_1 * 0.5f64 ;"
//! ```
//!
//! The text is the tokens `quote!` would make, each followed by a space (so
//! that no two tokens run together), and values interpolate as `quote!`
//! interpolates them (`5usize`, `"str"`, `true`, an identifier's name): the
//! lexed string is the stream `quote!` makes, with every span at the macro's
//! call site.

use proc_macro2::{Delimiter, Ident, Literal, TokenStream};

/// Rust source: text (tokens, each followed by a space), and where a value
/// made as tokens is interpolated (the user's types and assertions, whose
/// spans point into the user's source), those tokens as they are.
///
/// Text with tokens inside a group is lexed a run at a time, the groups
/// around the tokens made as groups ([`Code::into_tokens`]).
#[derive(Clone, Default, Debug)]
pub struct Code {
    text: String,
    /// Tokens to insert at byte offsets of `text`, in order.
    tokens: Vec<(usize, TokenStream)>,
}

impl Code {
    /// No tokens.
    pub fn new() -> Code {
        Code::default()
    }

    /// Whether there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.tokens.iter().all(|(_, t)| t.is_empty())
    }

    /// Appends one token's text.
    pub fn push_token(&mut self, t: &str) {
        self.text.push_str(t);
        self.text.push(' ');
    }

    /// Appends tokens' text, each followed by a space (`text!`'s runs of
    /// literal tokens).
    pub fn push_text(&mut self, t: &str) {
        self.text.push_str(t);
    }

    /// Appends tokens made as tokens (their spans kept).
    pub fn push_tokens(&mut self, t: TokenStream) {
        if !t.is_empty() {
            self.tokens.push((self.text.len(), t));
        }
    }

    /// Appends the tokens of `c`.
    pub fn push_code(&mut self, c: &Code) {
        let at = self.text.len();
        self.text.push_str(&c.text);
        if !c.tokens.is_empty() {
            self.tokens
                .extend(c.tokens.iter().map(|(k, t)| (k + at, t.clone())));
        }
    }

    /// Appends the tokens of every code of `it` (a `Code`, an `Option`, a
    /// vector, an iterator), as `TokenStream::extend` does.
    pub fn extend<I: IntoIterator<Item = Code>>(&mut self, it: I) {
        for c in it {
            if self.text.is_empty() && self.tokens.is_empty() {
                *self = c;
            } else {
                self.push_code(&c);
            }
        }
    }

    /// The tokens: the text lexed once by the compiler (inside a procedural
    /// macro; `proc_macro2` in tests), every span the call site's. With
    /// tokens interpolated as tokens, the text is lexed a run at a time
    /// between delimiters and those tokens inserted as they are.
    ///
    /// Emitted text that does not lex is a bug of the emitter: the error
    /// names the text.
    pub fn into_tokens(self) -> Result<TokenStream, String> {
        let lex = |t: &str| lex(t).map_err(|e| format!("emitted text does not lex ({e}): {t}"));
        if self.tokens.is_empty() {
            return lex(&self.text);
        }
        // Only the groups around inserted tokens are made here; the text
        // between them (other groups included) is lexed in runs.
        let delims = self.groups_around_tokens();
        // Groups under construction: (delimiter, tokens so far).
        let mut stack: Vec<(Option<Delimiter>, TokenStream)> = vec![(None, TokenStream::new())];
        let mut inserts = self.tokens.into_iter().peekable();
        let mut from = 0;
        let mut delims = delims.into_iter().peekable();
        loop {
            // The next event: tokens to insert (before a delimiter at the
            // same offset) or a delimiter.
            let next_tok = inserts.peek().map(|(k, _)| *k);
            let next_delim = delims.peek().copied();
            let at = match (next_tok, next_delim) {
                (None, None) => self.text.len(),
                (Some(k), None) => k,
                (None, Some(d)) => d,
                (Some(k), Some(d)) => k.min(d),
            };
            let run = lex(&self.text[from..at])?;
            stack.last_mut().expect("the outer level").1.extend(run);
            from = at;
            if next_tok == Some(at) {
                let (_, t) = inserts.next().expect("peeked");
                stack.last_mut().expect("the outer level").1.extend(t);
                continue;
            }
            if next_delim != Some(at) {
                break;
            }
            delims.next();
            let c = char::from(self.text.as_bytes()[at]);
            from = at + 1;
            match c {
                '(' => stack.push((Some(Delimiter::Parenthesis), TokenStream::new())),
                '[' => stack.push((Some(Delimiter::Bracket), TokenStream::new())),
                '{' => stack.push((Some(Delimiter::Brace), TokenStream::new())),
                _ => {
                    let (Some(d), inner) = stack.pop().expect("an open group") else {
                        return Err(format!("unbalanced `{c}` in emitted code"));
                    };
                    let g = proc_macro2::TokenTree::Group(proc_macro2::Group::new(d, inner));
                    stack
                        .last_mut()
                        .ok_or_else(|| format!("unbalanced `{c}` in emitted code"))?
                        .1
                        .extend([g]);
                }
            }
        }
        match stack.pop() {
            Some((None, t)) if stack.is_empty() => Ok(t),
            _ => Err("unbalanced groups in emitted code".into()),
        }
    }
}

/// `src` lexed: by the compiler's lexer alone inside a procedural macro
/// (`proc_macro2`'s `FromStr` first lexes the text again with its own lexer,
/// unoptimised in a user's build, to turn a lexing error into an `Err`:
/// the emitter's text always lexes, its tests check it), else by
/// `proc_macro2`.
fn lex(src: &str) -> Result<TokenStream, String> {
    if proc_macro::is_available() {
        let t: proc_macro::TokenStream = src.parse().map_err(|e| format!("{e:?}"))?;
        Ok(t.into())
    } else {
        src.parse().map_err(|e| format!("{e:?}"))
    }
}

impl Code {
    /// The offsets of the delimiters of the groups that contain inserted
    /// tokens (both ends of each), in order.
    fn groups_around_tokens(&self) -> Vec<usize> {
        // (offset of the opening delimiter, whether tokens are inside).
        let mut open: Vec<(usize, bool)> = vec![];
        let mut keep = vec![];
        let mut inserts = self.tokens.iter().map(|(k, _)| *k).peekable();
        for d in delimiters(&self.text) {
            while inserts.next_if(|k| *k <= d).is_some() {
                if let Some(top) = open.last_mut() {
                    top.1 = true;
                }
            }
            let c = self.text.as_bytes()[d];
            if matches!(c, b'(' | b'[' | b'{') {
                open.push((d, false));
            } else if let Some((o, inside)) = open.pop() {
                if inside {
                    keep.push(o);
                    keep.push(d);
                    // The enclosing group holds these tokens too.
                    if let Some(top) = open.last_mut() {
                        top.1 = true;
                    }
                }
            }
        }
        keep.sort_unstable();
        keep
    }
}

/// The byte offsets of the group delimiters of `text` (tokens separated by
/// spaces), outside string, byte-string and character literals.
fn delimiters(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut k = 0;
    while k < b.len() {
        match b[k] {
            b'(' | b')' | b'[' | b']' | b'{' | b'}' => out.push(k),
            // A string: to its closing quote, escapes skipped.
            b'"' => {
                k += 1;
                while k < b.len() && b[k] != b'"' {
                    k += if b[k] == b'\\' { 2 } else { 1 };
                }
            }
            // A character literal (`'x'`, `'\n'`), not a lifetime.
            b'\'' if b.get(k + 1) == Some(&b'\\') => {
                k += 2;
                while k < b.len() && b[k] != b'\'' {
                    k += if b[k] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' if b.get(k + 2) == Some(&b'\'') => k += 2,
            _ => {}
        }
        k += 1;
    }
    out
}

impl IntoIterator for Code {
    type Item = Code;
    type IntoIter = std::iter::Once<Code>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self)
    }
}

impl FromIterator<Code> for Code {
    fn from_iter<I: IntoIterator<Item = Code>>(it: I) -> Code {
        let mut c = Code::new();
        c.extend(it);
        c
    }
}

/// The text, tokens printed as text (for messages and tests).
impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::new();
        let mut from = 0;
        for (k, t) in &self.tokens {
            s.push_str(&self.text[from..*k]);
            s.push_str(&t.to_string());
            s.push(' ');
            from = *k;
        }
        s.push_str(&self.text[from..]);
        f.write_str(s.trim_end())
    }
}

/// Code interpolated into `quote!` (the public functions, whose tokens keep
/// the user's spans) is lexed there.
impl quote::ToTokens for Code {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self.clone().into_tokens() {
            Ok(t) => tokens.extend(t),
            Err(msg) => tokens.extend(quote::quote!(::core::compile_error!(#msg);)),
        }
    }
}

/// A value `text!` interpolates (`#x`), written as `quote!` writes it.
pub trait ToText {
    /// Appends the value's tokens to `out`.
    fn write_text(&self, out: &mut Code);
}

impl ToText for Code {
    fn write_text(&self, out: &mut Code) {
        out.push_code(self);
    }
}

impl<T: ToText + ?Sized> ToText for &T {
    fn write_text(&self, out: &mut Code) {
        (**self).write_text(out);
    }
}

impl<T: ToText + ?Sized> ToText for &mut T {
    fn write_text(&self, out: &mut Code) {
        (**self).write_text(out);
    }
}

impl<T: ToText> ToText for Option<T> {
    fn write_text(&self, out: &mut Code) {
        if let Some(x) = self {
            x.write_text(out);
        }
    }
}

impl ToText for Ident {
    fn write_text(&self, out: &mut Code) {
        use std::fmt::Write;
        // Written in place: no string of its own.
        let _ = write!(out.text, "{self} ");
    }
}

impl ToText for Literal {
    fn write_text(&self, out: &mut Code) {
        out.push_token(&self.to_string());
    }
}

/// Tokens made by `quote!` or `syn` (the user's types and assertions): kept
/// as tokens, with their spans.
impl ToText for TokenStream {
    fn write_text(&self, out: &mut Code) {
        out.push_tokens(self.clone());
    }
}

/// The user's syntax that a message may point at (types, statements,
/// expressions, patterns): its tokens, with their spans.
macro_rules! syn_to_tokens {
    ($($t:ty),*) => {$(
        impl ToText for $t {
            fn write_text(&self, out: &mut Code) {
                out.push_tokens(quote::ToTokens::to_token_stream(self));
            }
        }
    )*};
}

syn_to_tokens!(syn::Type, syn::Stmt, syn::Expr, syn::Pat);

/// Syntax no message points at (a visibility, a path the emitter names):
/// its text, so that the code around it stays one run of text.
macro_rules! syn_to_text {
    ($($t:ty),*) => {$(
        impl ToText for $t {
            fn write_text(&self, out: &mut Code) {
                out.push_token(&quote::ToTokens::to_token_stream(self).to_string());
            }
        }
    )*};
}

syn_to_text!(syn::Path, syn::Visibility, syn::Lifetime);

impl ToText for syn::Index {
    fn write_text(&self, out: &mut Code) {
        out.push_token(&self.index.to_string());
    }
}

impl<T: ToText + ?Sized> ToText for Box<T> {
    fn write_text(&self, out: &mut Code) {
        (**self).write_text(out);
    }
}

/// Tokens made by `quote!` or `syn`, kept as tokens.
impl From<TokenStream> for Code {
    fn from(t: TokenStream) -> Code {
        let mut c = Code::new();
        c.push_tokens(t);
        c
    }
}

impl ToText for str {
    fn write_text(&self, out: &mut Code) {
        Literal::string(self).write_text(out);
    }
}

impl ToText for String {
    fn write_text(&self, out: &mut Code) {
        self.as_str().write_text(out);
    }
}

impl ToText for bool {
    fn write_text(&self, out: &mut Code) {
        out.push_token(if *self { "true" } else { "false" });
    }
}

impl ToText for usize {
    fn write_text(&self, out: &mut Code) {
        Literal::usize_suffixed(*self).write_text(out);
    }
}

impl ToText for i64 {
    fn write_text(&self, out: &mut Code) {
        Literal::i64_suffixed(*self).write_text(out);
    }
}

impl ToText for f64 {
    fn write_text(&self, out: &mut Code) {
        Literal::f64_suffixed(*self).write_text(out);
    }
}

/// An element of a repetition: the value of a variable `#x` in one round of
/// `#(..)*`. A variable named twice in the repetition is advanced once: the
/// second `next` hands the element back.
pub struct RepElem<T>(pub T);

impl<T> RepElem<T> {
    /// The element again (for a second `#x` of the same round).
    #[allow(dead_code)] // the emitter names no variable twice in a repetition
    pub fn next(self) -> Option<RepElem<T>> {
        Some(self)
    }
}

/// An element that is itself a collection (a nested repetition's) is
/// iterated through it.
impl<T> std::ops::Deref for RepElem<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ToText> ToText for RepElem<T> {
    fn write_text(&self, out: &mut Code) {
        self.0.write_text(out);
    }
}

/// A repetition's iterator variable: any iterator, taken as it is.
pub trait RepIter: Iterator + Sized {
    /// The iterator, and that it iterates.
    fn text_rep(self) -> (Self, bool) {
        (self, true)
    }
}

impl<T: Iterator> RepIter for T {}

/// A repetition's collection variable: a slice, vector or array, iterated
/// by reference.
pub trait RepSlice<'a> {
    /// The iterator over its elements.
    type Iter: Iterator;
    /// The iterator, and that it iterates.
    fn text_rep(&'a self) -> (Self::Iter, bool);
}

impl<'a, T: 'a> RepSlice<'a> for [T] {
    type Iter = std::slice::Iter<'a, T>;
    fn text_rep(&'a self) -> (Self::Iter, bool) {
        (self.iter(), true)
    }
}

impl<'a, T: 'a> RepSlice<'a> for Vec<T> {
    type Iter = std::slice::Iter<'a, T>;
    fn text_rep(&'a self) -> (Self::Iter, bool) {
        (self.iter(), true)
    }
}

impl<'a, T: 'a, const N: usize> RepSlice<'a> for [T; N] {
    type Iter = std::slice::Iter<'a, T>;
    fn text_rep(&'a self) -> (Self::Iter, bool) {
        (self.iter(), true)
    }
}

/// A value named in a repetition that is not iterated: the same in every
/// round (as in `quote!`).
pub trait RepSingle: ToText {
    /// The value, and that it does not iterate.
    fn text_rep(&self) -> (&Self, bool) {
        (self, false)
    }

    /// The value, every round.
    fn next(&self) -> Option<&Self> {
        Some(self)
    }
}

impl<T: ToText + ?Sized> RepSingle for T {}

/// `quote!`'s syntax, writing text: `text!(let #x = #(#ys)+*;)` is a
/// [`Code`] (see the module documentation).
macro_rules! text {
    ($($t:tt)*) => {{
        #[allow(unused_mut)]
        let mut __code = $crate::text::Code::new();
        $crate::text::text_into!(__code; $($t)*);
        __code
    }};
}

/// Appends the text of the tokens after `;` to the [`Code`] variable named
/// first. Runs of literal tokens (groups flattened, their closing
/// delimiters marked) are gathered into one `concat!` string, written with
/// one call: the macro runs unoptimised in a user's build, where each call
/// costs.
macro_rules! text_into {
    ($c:ident; $($t:tt)*) => {
        $crate::text::text_into!(@run $c [] $($t)*)
    };
    (@run $c:ident [$($acc:tt)*]) => {
        $crate::text::text_into!(@flush $c [$($acc)*]);
    };
    (@run $c:ident [$($acc:tt)*] # $v:ident $($rest:tt)*) => {
        $crate::text::text_into!(@flush $c [$($acc)*]);
        $crate::text::ToText::write_text(&$v, &mut $c);
        $crate::text::text_into!(@run $c [] $($rest)*);
    };
    (@run $c:ident [$($acc:tt)*] # ( $($body:tt)* ) * $($rest:tt)*) => {
        $crate::text::text_into!(@flush $c [$($acc)*]);
        $crate::text::text_rep!(@collect [$c] [] [$($body)*] [] $($body)*);
        $crate::text::text_into!(@run $c [] $($rest)*);
    };
    (@run $c:ident [$($acc:tt)*] # ( $($body:tt)* ) $sep:tt * $($rest:tt)*) => {
        $crate::text::text_into!(@flush $c [$($acc)*]);
        $crate::text::text_rep!(@collect [$c] [$sep] [$($body)*] [] $($body)*);
        $crate::text::text_into!(@run $c [] $($rest)*);
    };
    (@run $c:ident [$($acc:tt)*] ( $($g:tt)* ) $($rest:tt)*) => {
        $crate::text::text_into!(@run $c [$($acc)* "( ",] $($g)* __text_close_paren $($rest)*)
    };
    (@run $c:ident [$($acc:tt)*] [ $($g:tt)* ] $($rest:tt)*) => {
        $crate::text::text_into!(@run $c [$($acc)* "[ ",] $($g)* __text_close_bracket $($rest)*)
    };
    (@run $c:ident [$($acc:tt)*] { $($g:tt)* } $($rest:tt)*) => {
        $crate::text::text_into!(@run $c [$($acc)* "{ ",] $($g)* __text_close_brace $($rest)*)
    };
    (@run $c:ident [$($acc:tt)*] __text_close_paren $($rest:tt)*) => {
        $crate::text::text_into!(@run $c [$($acc)* ") ",] $($rest)*)
    };
    (@run $c:ident [$($acc:tt)*] __text_close_bracket $($rest:tt)*) => {
        $crate::text::text_into!(@run $c [$($acc)* "] ",] $($rest)*)
    };
    (@run $c:ident [$($acc:tt)*] __text_close_brace $($rest:tt)*) => {
        $crate::text::text_into!(@run $c [$($acc)* "} ",] $($rest)*)
    };
    (@run $c:ident [$($acc:tt)*] $t:tt $($rest:tt)*) => {
        $crate::text::text_into!(@run $c [$($acc)* stringify!($t), " ",] $($rest)*)
    };
    (@flush $c:ident []) => {};
    (@flush $c:ident [$($acc:tt)+]) => {
        $c.push_text(concat!($($acc)+));
    };
}

/// A repetition `#(body) sep *`: first the variables the body names
/// (`@collect`, nested groups included), then one round per element of the
/// iterated ones, the others the same every round, stopping at the
/// shortest; the separator between rounds.
macro_rules! text_rep {
    (@collect [$c:ident] [$($sep:tt)*] [$($body:tt)*] [$($v:ident)*]) => {{
        #[allow(unused_imports)]
        use $crate::text::{RepIter as _, RepSingle as _, RepSlice as _};
        let mut __iterates = false;
        $(
            #[allow(unused_mut)]
            let (mut $v, __i) = $v.text_rep();
            __iterates |= __i;
        )*
        assert!(__iterates, "text!: a repetition names no collection to iterate");
        let mut __first = true;
        loop {
            $(
                let $v = match $v.next() {
                    Some(__x) => $crate::text::RepElem(__x),
                    None => break,
                };
            )*
            if !__first {
                $( $c.push_token(stringify!($sep)); )*
            }
            __first = false;
            $crate::text::text_into!($c; $($body)*);
        }
    }};
    (@collect [$c:ident] [$($sep:tt)*] [$($body:tt)*] [$($v:ident)*] # $x:ident $($rest:tt)*) => {
        $crate::text::text_rep!(@collect [$c] [$($sep)*] [$($body)*] [$($v)* $x] $($rest)*)
    };
    (@collect [$c:ident] [$($sep:tt)*] [$($body:tt)*] [$($v:ident)*] ( $($g:tt)* ) $($rest:tt)*) => {
        $crate::text::text_rep!(@collect [$c] [$($sep)*] [$($body)*] [$($v)*] $($g)* $($rest)*)
    };
    (@collect [$c:ident] [$($sep:tt)*] [$($body:tt)*] [$($v:ident)*] [ $($g:tt)* ] $($rest:tt)*) => {
        $crate::text::text_rep!(@collect [$c] [$($sep)*] [$($body)*] [$($v)*] $($g)* $($rest)*)
    };
    (@collect [$c:ident] [$($sep:tt)*] [$($body:tt)*] [$($v:ident)*] { $($g:tt)* } $($rest:tt)*) => {
        $crate::text::text_rep!(@collect [$c] [$($sep)*] [$($body)*] [$($v)*] $($g)* $($rest)*)
    };
    (@collect [$c:ident] [$($sep:tt)*] [$($body:tt)*] [$($v:ident)*] $t:tt $($rest:tt)*) => {
        $crate::text::text_rep!(@collect [$c] [$($sep)*] [$($body)*] [$($v)*] $($rest)*)
    };
}

pub(crate) use {text, text_into, text_rep};

#[cfg(test)]
mod tests {
    use super::Code;
    use proc_macro2::TokenStream;
    use quote::{format_ident, quote};

    /// `text!`'s code lexed and printed against `quote!`'s tokens printed
    /// after the same round trip (a negative literal token prints as one
    /// token from `quote!` and lexes as two).
    fn same(c: Code, q: TokenStream) {
        let relex = |s: String| s.parse::<TokenStream>().unwrap().to_string();
        assert_eq!(
            relex(c.into_tokens().unwrap().to_string()),
            relex(q.to_string())
        );
    }

    #[test]
    fn tokens_groups_and_values_read_as_quote_writes_them() {
        let x = format_ident!("x_1");
        let a = text!(f64::sin(#x));
        let qa = quote!(f64::sin(#x));
        let (n, s, b, f, i) = (3usize, "a \"q\"", true, -0.5f64, -7i64);
        same(
            text!(let #x: [f64; #n] = { #a + #f * (#i as f64) }; #s #b ::core::array::from_fn(|__l| 'a: loop {});),
            quote!(let #x: [f64; #n] = { #qa + #f * (#i as f64) }; #s #b ::core::array::from_fn(|__l| 'a: loop {});),
        );
    }

    #[test]
    fn repetitions_zip_their_collections_and_repeat_single_values() {
        let names = vec![format_ident!("a"), format_ident!("b")];
        let tys = [text!(f64), text!(i64)];
        let qtys = [quote!(f64), quote!(i64)];
        let one = text!(u8);
        let q_one = quote!(u8);
        same(
            text!(fn f(#(#names: #tys),*) { #(let _ = (#names, #one, #names);)* }),
            quote!(fn f(#(#names: #qtys),*) { #(let _ = (#names, #q_one, #names);)* }),
        );
        let it = names.iter().map(|n| text!(#n + 1));
        let qit = names.iter().map(|n| quote!(#n + 1));
        same(text!(#(#it)+*), quote!(#(#qit)+*));
        let rows = vec![vec![text!(1)], vec![text!(2), text!(3)]];
        let qrows = vec![vec![quote!(1)], vec![quote!(2), quote!(3)]];
        same(text!(#([#(#rows),*]);*), quote!(#([#(#qrows),*]);*));
        let none: Vec<Code> = vec![];
        assert!(text!(#(#none),*).is_empty());
    }

    #[test]
    fn code_extends_and_lexes_once() {
        let mut c = Code::new();
        c.extend(text!(let a = 1;));
        c.extend(Some(text!(let b = 2;)));
        c.extend(vec![text!(a + b)]);
        assert_eq!(c.to_string(), "let a = 1 ; let b = 2 ; a + b");
        assert!(text!(let a = ;).into_tokens().is_ok());
        let mut open = Code::new();
        open.push_token("\"open");
        assert!(open.into_tokens().is_err());
        // Tokens interpolated as tokens stay tokens, between runs of text.
        let t = quote!(x + 1);
        let mixed = text!(let y = #t; y);
        same(mixed, quote!(let y = x + 1; y));
        // Inside groups too: the groups around them are made as groups.
        let g = quote!([0usize]);
        let deep = text!(fn f() { let y = (a #g, { #t }); });
        same(
            deep,
            quote!(
                fn f() {
                    let y = (a[0usize], { x + 1 });
                }
            ),
        );
    }
}
