//! `$calc` (version 3, docs/mock-language.md "Arithmetic text"): the value
//! of an arithmetic expression written as text — `+ - * /`, parentheses,
//! unary signs, decimal literals — computed with exact decimals (a
//! quotient is the one step that rounds), optionally rounded to `places`.
//! The text is at most [`MAX_CHARS`] characters and [`MAX_TOKENS`] tokens,
//! so parsing and evaluating it is bounded.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_push};
use crate::error::{CallError, OperandFault, Origin, Rejection, reject, truncate};
use crate::expr::decimals::{add, mul, places_literal, round, sub, to_json};
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::reference::Reference;
use crate::scope::{Memo, Render, Scope};
use rust_decimal::Decimal;
use serde_json::Value;
use toolmock_contract::json_kind;

/// At most this many characters in one text.
pub const MAX_CHARS: usize = 256;

/// At most this many tokens (numbers, operators, parentheses) in one text.
pub const MAX_TOKENS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Number(Decimal),
    Plus,
    Minus,
    Times,
    Divide,
    Open,
    Close,
}

fn refused(message: String) -> Rejection {
    reject(OperandFault::InvalidExpression, message)
}

/// The tokens of `text`, each with the 1-based character where it starts.
fn tokens(text: &str) -> Result<Vec<(Token, usize)>, Rejection> {
    let count = text.chars().count();
    if count > MAX_CHARS {
        return Err(refused(format!(
            "$calc: the text has {count} characters; at most {MAX_CHARS}"
        )));
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let at = i + 1;
        let token = match c {
            ' ' => {
                i += 1;
                continue;
            }
            '+' => Token::Plus,
            '-' => Token::Minus,
            '*' => Token::Times,
            '/' => Token::Divide,
            '(' => Token::Open,
            ')' => Token::Close,
            '0'..='9' | '.' => {
                let start = i;
                while chars
                    .get(i)
                    .is_some_and(|c| c.is_ascii_digit() || *c == '.')
                {
                    i += 1;
                }
                let literal: String = chars.get(start..i).unwrap_or(&[]).iter().collect();
                out.push((Token::Number(number(&literal, at)?), at));
                continue;
            }
            other => {
                return Err(refused(format!(
                    "$calc: {other:?} at character {at} is not part of an arithmetic expression (numbers, + - * /, parentheses and spaces)"
                )));
            }
        };
        out.push((token, at));
        i += 1;
    }
    if out.len() > MAX_TOKENS {
        return Err(refused(format!(
            "$calc: the text has {} tokens; at most {MAX_TOKENS}",
            out.len()
        )));
    }
    Ok(out)
}

/// A number as written: digits with at most one '.', and a digit on at
/// least one side of it (`12`, `12.5`, `.5`, `5.`).
fn number(literal: &str, at: usize) -> Result<Decimal, Rejection> {
    let (whole, fraction) = literal.split_once('.').unwrap_or((literal, ""));
    if fraction.contains('.') || (whole.is_empty() && fraction.is_empty()) {
        return Err(refused(format!(
            "$calc: {:?} at character {at} is not a number",
            truncate(literal)
        )));
    }
    let text = format!(
        "{}.{}",
        if whole.is_empty() { "0" } else { whole },
        if fraction.is_empty() { "0" } else { fraction }
    );
    Decimal::from_str_exact(&text)
        .map(|d| d.normalize())
        .map_err(|_| {
            refused(format!(
                "$calc: {:?} at character {at} does not fit an exact decimal (at most 28 significant digits)",
                truncate(literal)
            ))
        })
}

/// A recursive-descent reader over the tokens (their count bounds its depth).
struct Reader<'t> {
    tokens: &'t [(Token, usize)],
    next: usize,
    end: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.next).map(|(t, _)| *t)
    }

    fn unexpected(&self) -> Rejection {
        match self.tokens.get(self.next) {
            Some((token, at)) => refused(format!(
                "$calc: unexpected {} at character {at}",
                describe(*token)
            )),
            None => refused(format!(
                "$calc: the expression ends early (after character {})",
                self.end
            )),
        }
    }

    fn sum(&mut self) -> Result<Decimal, Rejection> {
        let mut value = self.product()?;
        while let Some(op @ (Token::Plus | Token::Minus)) = self.peek() {
            self.next += 1;
            let right = self.product()?;
            value = if op == Token::Plus {
                add(value, right)
            } else {
                sub(value, right)
            }
            .map_err(inexact)?;
        }
        Ok(value)
    }

    fn product(&mut self) -> Result<Decimal, Rejection> {
        let mut value = self.unary()?;
        while let Some(op @ (Token::Times | Token::Divide)) = self.peek() {
            let at = self.tokens.get(self.next).map_or(0, |(_, at)| *at);
            self.next += 1;
            let right = self.unary()?;
            value = if op == Token::Times {
                mul(value, right).map_err(inexact)?
            } else {
                divide(value, right, at)?
            };
        }
        Ok(value)
    }

    fn unary(&mut self) -> Result<Decimal, Rejection> {
        match self.peek() {
            Some(Token::Minus) => {
                self.next += 1;
                Ok(-self.unary()?)
            }
            Some(Token::Plus) => {
                self.next += 1;
                self.unary()
            }
            Some(Token::Number(n)) => {
                self.next += 1;
                Ok(n)
            }
            Some(Token::Open) => {
                self.next += 1;
                let value = self.sum()?;
                if self.peek() != Some(Token::Close) {
                    return Err(self.unexpected());
                }
                self.next += 1;
                Ok(value)
            }
            _ => Err(self.unexpected()),
        }
    }
}

fn describe(token: Token) -> String {
    match token {
        Token::Number(n) => format!("number {n}"),
        Token::Plus => "'+'".into(),
        Token::Minus => "'-'".into(),
        Token::Times => "'*'".into(),
        Token::Divide => "'/'".into(),
        Token::Open => "'('".into(),
        Token::Close => "')'".into(),
    }
}

fn inexact(rejection: Rejection) -> Rejection {
    refused(rejection.message.replacen("$add", "$calc", 1))
}

/// `a / b`: the quotient to as many digits as an exact decimal holds (at
/// most 28 decimal places, digits below 2^96), the last rounded half to
/// even; dividing by zero is refused.
fn divide(a: Decimal, b: Decimal, at: usize) -> Result<Decimal, Rejection> {
    if b.is_zero() {
        return Err(refused(format!(
            "$calc: division by zero (the '/' at character {at})"
        )));
    }
    a.checked_div(b).map(|q| q.normalize()).ok_or_else(|| {
        refused(format!(
            "$calc: the quotient of the '/' at character {at} is beyond ±7.9e28"
        ))
    })
}

/// The value of arithmetic text, rounded to `places` when given.
pub fn calculate(text: &str, places: Option<u32>) -> Result<Decimal, Rejection> {
    let tokens = tokens(text)?;
    let end = text.chars().count();
    let mut reader = Reader {
        tokens: &tokens,
        next: 0,
        end,
    };
    let value = reader.sum()?;
    if reader.next != tokens.len() {
        return Err(reader.unexpected());
    }
    Ok(places.map_or(value, |p| round(value, p)))
}

/// A compiled `$calc` whose text is read per call.
#[derive(Debug, Clone)]
struct Calc {
    text: Expr,
    places: Option<u32>,
    at: Box<str>,
}

impl Calc {
    fn blame(&self, rejection: Rejection) -> CallError {
        match &self.text {
            Expr::Reference(r) => r.blame(rejection),
            other => CallError::refused_operand(
                other.origin().max(Origin::State),
                None,
                rejection,
                &self.at,
            ),
        }
    }

    fn eval(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        let text = match &self.text {
            Expr::Reference(r) => r.resolve(scope)?.into_owned(),
            other => other.render(scope)?,
        };
        let Value::String(text) = text else {
            return Err(self.blame(refused(format!(
                "$calc takes a text, not {}",
                json_kind(&text)
            ))));
        };
        let value = calculate(&text, self.places).map_err(|r| self.blame(r))?;
        to_json(value).map_err(|r| self.blame(refused(r.message)))
    }
}

impl Render for Calc {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        self.eval(scope)
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for Calc {
    fn name(&self) -> &'static str {
        "$calc"
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        self.text.for_each_reference(f);
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }
}

/// `{"$calc": {"text": …, "places": N?}}` at `at`.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator(key));
    let operand_at = pointer_push(at, key);
    let fields = c.object(operand, &operand_at, "$calc's operand {text, places?}")?;
    let before = c.diagnostics.len();
    c.shape(
        fields,
        &operand_at,
        &crate::check::context::Shape {
            allowed: &["text", "places"],
            required: &["text"],
            what: "$calc",
        },
    );
    let places = fields
        .get("places")
        .and_then(|p| places_literal(c, p, &pointer_push(&operand_at, "places"), "$calc"));
    let text_at = pointer_push(&operand_at, "text");
    let text = fields.get("text").map(|t| c.node(t, &text_at));
    if let Some(Expr::Literal(literal)) = &text
        && !literal.is_string()
    {
        c.wrong_type(&text_at, "a text (a string)", literal);
    }
    if c.diagnostics.len() != before {
        return None;
    }
    let calc = Calc {
        text: text?,
        places,
        at: at.into(),
    };
    if matches!(calc.text, Expr::Literal(_)) {
        // Nothing here reads the call, so an empty scope serves.
        let state = serde_json::Map::new();
        let memo = Memo::new();
        let scope = Scope::new(&Value::Null, &state, &memo);
        return match calc.eval(&scope) {
            Ok(value) => Some(Expr::Literal(value)),
            Err(e) => {
                c.push(
                    DiagnosticCode::InvalidLiteral,
                    &text_at,
                    format!("{e} (invalid_expression)"),
                );
                None
            }
        };
    }
    Some(Expr::Op(Box::new(calc)))
}
