// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

//! The filter text to a syntax tree: a tokenizer and a hand-written recursive-descent parser.
//!
//! Grammar (keywords are case-insensitive):
//! ```text
//! filter     := or
//! or         := and ( OR and )*
//! and        := unary ( AND unary )*
//! unary      := NOT unary | '(' or ')' | condition
//! condition  := column ( op value | IS [NOT] NULL | [NOT] IN '(' value ( ',' value )* ')' )
//! op         := '=' | '!=' | '<>' | '<' | '<=' | '>' | '>='
//! column     := name | `quoted name` | "quoted name"
//! value      := ['-'] number | 'string' | TRUE | FALSE
//! ```
//! Literals keep their text: their type comes from the column they are compared with, which
//! only [`super::check`] knows. Every error carries the 1-based character column it points at.
//!
//! The tokenizer and the parser share one position type and one error style, so they stay in one
//! file, the grammar next to the code that follows it; its tests sit next to them.

use super::FilterError;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=` or `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The operator as the filter language spells it.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// The operator that holds exactly when this one does not (for a non-null value).
    pub fn negated(self) -> Self {
        match self {
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
        }
    }
}

/// A column name and where it stands in the filter text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The name, unquoted.
    pub name: String,
    /// 1-based character column in the filter text.
    pub at: usize,
}

/// What kind of literal the text holds; its type is decided against the column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiteralKind {
    /// Digits, an optional sign, fraction and exponent (`-12`, `3.25`, `1e9`).
    Number,
    /// A single-quoted string (`''` inside stands for one quote).
    String,
    /// `TRUE` or `FALSE`.
    Boolean,
}

/// A literal as written (strings unquoted), and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal {
    /// Its kind.
    pub kind: LiteralKind,
    /// Its text: the number with its sign, the unquoted string, `true` or `false`.
    pub text: String,
    /// 1-based character column in the filter text.
    pub at: usize,
}

/// The syntax tree of a filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ast {
    /// Both sides hold.
    And(Box<Ast>, Box<Ast>),
    /// Either side holds.
    Or(Box<Ast>, Box<Ast>),
    /// The inner condition does not hold (NULL stays NULL).
    Not(Box<Ast>),
    /// `column op value`.
    Compare {
        /// The column.
        column: Column,
        /// The operator.
        op: CmpOp,
        /// The value.
        value: Literal,
    },
    /// `column IS [NOT] NULL`.
    IsNull {
        /// The column.
        column: Column,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `column [NOT] IN (values)`.
    In {
        /// The column.
        column: Column,
        /// The values, at least one.
        values: Vec<Literal>,
        /// `NOT IN`.
        negated: bool,
    },
}

/// Parses `text` into a syntax tree.
pub fn parse(text: &str) -> Result<Ast, FilterError> {
    let tokens = tokenize(text)?;
    let mut parser = Parser { tokens, next: 0 };
    if parser.peek().token == Token::End {
        return Err(FilterError::new(
            1,
            "the filter is empty; write a condition such as `id > 10`, or remove the key to read every row",
        ));
    }
    let ast = parser.or()?;
    let end = parser.peek();
    if end.token != Token::End {
        let message = match end.token {
            Token::Close => "found `)` without a matching `(`".to_owned(),
            _ => format!("expected AND, OR or end of input, found {}", end.token),
        };
        return Err(FilterError::new(end.at, message));
    }
    Ok(ast)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// A bare or quoted name; `quoted` names are never keywords.
    Name {
        text: String,
        quoted: bool,
    },
    Number(String),
    String(String),
    Op(CmpOp),
    Minus,
    Open,
    Close,
    Comma,
    End,
}

impl Token {
    fn keyword(&self, word: &str) -> bool {
        matches!(self, Token::Name { text, quoted: false } if text.eq_ignore_ascii_case(word))
    }
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Name {
                text,
                quoted: false,
            } => write!(f, "`{text}`"),
            Token::Name { text, quoted: true } => write!(f, "the quoted name `{text}`"),
            Token::Number(text) => write!(f, "`{text}`"),
            Token::String(text) => write!(f, "the string '{}'", text.replace('\'', "''")),
            Token::Op(op) => write!(f, "`{}`", op.symbol()),
            Token::Minus => f.write_str("`-`"),
            Token::Open => f.write_str("`(`"),
            Token::Close => f.write_str("`)`"),
            Token::Comma => f.write_str("`,`"),
            Token::End => f.write_str("end of input"),
        }
    }
}

struct Spanned {
    token: Token,
    /// 1-based character column.
    at: usize,
}

const KEYWORDS: [&str; 8] = ["and", "or", "not", "is", "null", "in", "true", "false"];

fn tokenize(text: &str) -> Result<Vec<Spanned>, FilterError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let (token, len) = match c {
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            ',' => (Token::Comma, 1),
            '-' => (Token::Minus, 1),
            '=' => (Token::Op(CmpOp::Eq), 1),
            '!' if chars.get(i + 1) == Some(&'=') => (Token::Op(CmpOp::Ne), 2),
            '<' => match chars.get(i + 1) {
                Some('=') => (Token::Op(CmpOp::Le), 2),
                Some('>') => (Token::Op(CmpOp::Ne), 2),
                _ => (Token::Op(CmpOp::Lt), 1),
            },
            '>' if chars.get(i + 1) == Some(&'=') => (Token::Op(CmpOp::Ge), 2),
            '>' => (Token::Op(CmpOp::Gt), 1),
            '\'' => {
                let (content, len) = quoted(&chars, i, '\'')?;
                (Token::String(content), len)
            }
            '`' | '"' => {
                let (content, len) = quoted(&chars, i, c)?;
                if content.is_empty() {
                    return Err(FilterError::new(at, "a quoted column name is empty"));
                }
                (
                    Token::Name {
                        text: content,
                        quoted: true,
                    },
                    len,
                )
            }
            c if c.is_ascii_digit() || c == '.' => {
                let len = number_len(&chars[i..]);
                (Token::Number(chars[i..i + len].iter().collect()), len)
            }
            c if c.is_alphabetic() || c == '_' => {
                let len = chars[i..]
                    .iter()
                    .take_while(|c| c.is_alphanumeric() || **c == '_')
                    .count();
                (
                    Token::Name {
                        text: chars[i..i + len].iter().collect(),
                        quoted: false,
                    },
                    len,
                )
            }
            other => {
                return Err(FilterError::new(
                    at,
                    format!(
                        "unexpected character `{other}`; quote column names with `backticks` and strings with 'single quotes'"
                    ),
                ));
            }
        };
        tokens.push(Spanned { token, at });
        i += len;
    }
    tokens.push(Spanned {
        token: Token::End,
        at: chars.len() + 1,
    });
    Ok(tokens)
}

/// The content of the quoted token starting at `start` (a doubled quote is one quote inside)
/// and its length in characters, quotes included.
fn quoted(chars: &[char], start: usize, quote: char) -> Result<(String, usize), FilterError> {
    let mut content = String::new();
    let mut i = start + 1;
    loop {
        match chars.get(i) {
            None => {
                let what = if quote == '\'' { "string" } else { "name" };
                return Err(FilterError::new(
                    start + 1,
                    format!("the {what} starting here is not closed; end it with {quote}"),
                ));
            }
            Some(c) if *c == quote => {
                if chars.get(i + 1) == Some(&quote) {
                    content.push(quote);
                    i += 2;
                } else {
                    return Ok((content, i + 1 - start));
                }
            }
            Some(c) => {
                content.push(*c);
                i += 1;
            }
        }
    }
}

/// Length of the number at the start of `chars`: digits, `.`, and an exponent with its sign.
/// Whether the text is a valid number of the column's type is for the checker to say.
fn number_len(chars: &[char]) -> usize {
    let mut len = 0;
    while len < chars.len() {
        let c = chars[len];
        let exponent_sign =
            (c == '-' || c == '+') && len > 0 && matches!(chars[len - 1], 'e' | 'E');
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' || exponent_sign {
            len += 1;
        } else {
            break;
        }
    }
    len
}

struct Parser {
    tokens: Vec<Spanned>,
    next: usize,
}

impl Parser {
    fn peek(&self) -> &Spanned {
        // `tokenize` always ends with `End`, and the parser never steps past it.
        &self.tokens[self.next.min(self.tokens.len() - 1)]
    }

    fn bump(&mut self) -> &Spanned {
        let at = self.next.min(self.tokens.len() - 1);
        if self.tokens[at].token != Token::End {
            self.next += 1;
        }
        &self.tokens[at]
    }

    fn eat_keyword(&mut self, word: &str) -> bool {
        if self.peek().token.keyword(word) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Ast, FilterError> {
        let mut left = self.and()?;
        while self.eat_keyword("or") {
            let right = self.operand("OR")?;
            left = Ast::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Ast, FilterError> {
        let mut left = self.unary()?;
        while self.eat_keyword("and") {
            let right = self.operand_unary("AND")?;
            left = Ast::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    /// The right side of `OR`: a whole `and` chain.
    fn operand(&mut self, after: &str) -> Result<Ast, FilterError> {
        self.expect_condition(after)?;
        self.and()
    }

    /// The right side of `AND` (or the operand of `NOT`).
    fn operand_unary(&mut self, after: &str) -> Result<Ast, FilterError> {
        self.expect_condition(after)?;
        self.unary()
    }

    /// Fails with "expected a condition after `after`" when the next token cannot start one.
    fn expect_condition(&self, after: &str) -> Result<(), FilterError> {
        let next = self.peek();
        let starts = match &next.token {
            Token::Open => true,
            Token::Name { quoted: true, .. } => true,
            Token::Name { text, .. } => text.eq_ignore_ascii_case("not") || !is_keyword(text),
            _ => false,
        };
        if starts {
            Ok(())
        } else {
            Err(FilterError::new(
                next.at,
                format!("expected a condition after {after}, found {}", next.token),
            ))
        }
    }

    fn unary(&mut self) -> Result<Ast, FilterError> {
        if self.eat_keyword("not") {
            let inner = self.operand_unary("NOT")?;
            return Ok(Ast::Not(Box::new(inner)));
        }
        if self.peek().token == Token::Open {
            let open = self.bump().at;
            self.expect_condition("`(`")?;
            let inner = self.or()?;
            let close = self.peek();
            if close.token != Token::Close {
                return Err(FilterError::new(
                    close.at,
                    format!(
                        "expected `)` to close the `(` at column {open}, found {}",
                        close.token
                    ),
                ));
            }
            self.bump();
            return Ok(inner);
        }
        self.condition()
    }

    fn condition(&mut self) -> Result<Ast, FilterError> {
        let column = self.column()?;
        let next = self.peek();
        let at = next.at;
        match next.token.clone() {
            Token::Op(op) => {
                self.bump();
                let value = self.value(&format!("`{}`", op.symbol()), &column, Some(op))?;
                Ok(Ast::Compare { column, op, value })
            }
            token if token.keyword("is") => {
                self.bump();
                let negated = self.eat_keyword("not");
                if !self.eat_keyword("null") {
                    let after = if negated { "IS NOT" } else { "IS" };
                    let found = self.peek();
                    return Err(FilterError::new(
                        found.at,
                        format!("expected NULL after {after}, found {}", found.token),
                    ));
                }
                Ok(Ast::IsNull { column, negated })
            }
            token if token.keyword("in") || token.keyword("not") => {
                self.bump();
                let negated = token.keyword("not");
                if negated && !self.eat_keyword("in") {
                    let found = self.peek();
                    return Err(FilterError::new(
                        found.at,
                        format!("expected IN after NOT, found {}", found.token),
                    ));
                }
                let values = self.list(negated, &column)?;
                Ok(Ast::In {
                    column,
                    values,
                    negated,
                })
            }
            token => Err(FilterError::new(
                at,
                format!(
                    "expected a comparison (=, !=, <, <=, >, >=), IS [NOT] NULL or [NOT] IN after the column `{}`, found {token}",
                    column.name
                ),
            )),
        }
    }

    fn column(&mut self) -> Result<Column, FilterError> {
        let next = self.bump();
        let at = next.at;
        match &next.token {
            Token::Name { text, quoted } if *quoted || !is_keyword(text) => Ok(Column {
                name: text.clone(),
                at,
            }),
            Token::Name { text, .. } => Err(FilterError::new(
                at,
                format!(
                    "expected a column name, found the keyword `{text}`; quote a column of that name as `{text}` in backticks"
                ),
            )),
            token => Err(FilterError::new(
                at,
                format!(
                    "expected a column name, found {token}; a condition starts with the column, as in `id > 10`"
                ),
            )),
        }
    }

    fn list(&mut self, negated: bool, column: &Column) -> Result<Vec<Literal>, FilterError> {
        let keyword = if negated { "NOT IN" } else { "IN" };
        let open = self.peek();
        if open.token != Token::Open {
            return Err(FilterError::new(
                open.at,
                format!("expected `(` after {keyword}, found {}", open.token),
            ));
        }
        let open_at = self.bump().at;
        let mut values = vec![self.value("`(`", column, None)?];
        loop {
            let next = self.peek();
            match next.token {
                Token::Comma => {
                    self.bump();
                    values.push(self.value("`,`", column, None)?);
                }
                Token::Close => {
                    self.bump();
                    return Ok(values);
                }
                _ => {
                    return Err(FilterError::new(
                        next.at,
                        format!(
                            "expected `,` or `)` to close the list opened at column {open_at}, found {}",
                            next.token
                        ),
                    ));
                }
            }
        }
    }

    /// A literal after `after`; NULL is refused with the form that works.
    fn value(
        &mut self,
        after: &str,
        column: &Column,
        op: Option<CmpOp>,
    ) -> Result<Literal, FilterError> {
        let next = self.bump();
        let at = next.at;
        let token = next.token.clone();
        let literal = |kind, text: String| Ok(Literal { kind, text, at });
        match token {
            Token::Number(text) => literal(LiteralKind::Number, text),
            Token::String(text) => literal(LiteralKind::String, text),
            Token::Minus => match self.bump().token.clone() {
                Token::Number(text) => literal(LiteralKind::Number, format!("-{text}")),
                other => Err(FilterError::new(
                    at + 1,
                    format!("expected a number after `-`, found {other}"),
                )),
            },
            Token::Name {
                ref text,
                quoted: false,
            } if text.eq_ignore_ascii_case("true") || text.eq_ignore_ascii_case("false") => {
                literal(LiteralKind::Boolean, text.to_ascii_lowercase())
            }
            ref t if t.keyword("null") => {
                let fix = match op {
                    Some(CmpOp::Ne) => format!("`{} IS NOT NULL`", column.name),
                    Some(_) => format!("`{} IS NULL`", column.name),
                    None => format!("`{} IS NULL` joined with OR", column.name),
                };
                Err(FilterError::new(
                    at,
                    format!("a comparison with NULL is never true; write {fix}"),
                ))
            }
            other => Err(FilterError::new(
                at,
                format!("expected a value after {after}, found {other}"),
            )),
        }
    }
}

fn is_keyword(text: &str) -> bool {
    KEYWORDS.iter().any(|k| text.eq_ignore_ascii_case(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    fn col(name: &str, at: usize) -> Column {
        Column {
            name: name.into(),
            at,
        }
    }

    fn num(text: &str, at: usize) -> Literal {
        Literal {
            kind: LiteralKind::Number,
            text: text.into(),
            at,
        }
    }

    #[test]
    fn and_binds_tighter_than_or_and_not_tighter_than_and() {
        let ast = parse("a = 1 OR NOT b > 2 and c <= -3").unwrap();
        assert_eq!(
            ast,
            Ast::Or(
                Box::new(Ast::Compare {
                    column: col("a", 1),
                    op: CmpOp::Eq,
                    value: num("1", 5),
                }),
                Box::new(Ast::And(
                    Box::new(Ast::Not(Box::new(Ast::Compare {
                        column: col("b", 14),
                        op: CmpOp::Gt,
                        value: num("2", 18),
                    }))),
                    Box::new(Ast::Compare {
                        column: col("c", 24),
                        op: CmpOp::Le,
                        value: num("-3", 29),
                    }),
                )),
            )
        );
    }

    #[test]
    fn parentheses_group() {
        let ast = parse("(a = 1 or a = 2) and b is not null").unwrap();
        let Ast::And(left, right) = ast else {
            panic!("expected AND at the top")
        };
        assert!(matches!(*left, Ast::Or(..)));
        assert_eq!(
            *right,
            Ast::IsNull {
                column: col("b", 22),
                negated: true
            }
        );
    }

    #[test]
    fn literals_keep_their_text_and_kind() {
        let ast = parse("`order id` NOT IN (1.50, 'it''s', TRUE, -2e3)").unwrap();
        let Ast::In {
            column,
            values,
            negated,
        } = ast
        else {
            panic!("expected IN")
        };
        assert_eq!(column, col("order id", 1));
        assert!(negated);
        let texts: Vec<(LiteralKind, &str)> =
            values.iter().map(|v| (v.kind, v.text.as_str())).collect();
        assert_eq!(
            texts,
            [
                (LiteralKind::Number, "1.50"),
                (LiteralKind::String, "it's"),
                (LiteralKind::Boolean, "true"),
                (LiteralKind::Number, "-2e3"),
            ]
        );
    }

    #[test]
    fn every_operator_parses() {
        for (text, op) in [
            ("=", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<>", CmpOp::Ne),
            ("<", CmpOp::Lt),
            ("<=", CmpOp::Le),
            (">", CmpOp::Gt),
            (">=", CmpOp::Ge),
        ] {
            let ast = parse(&format!("x{text}1")).unwrap();
            assert!(
                matches!(ast, Ast::Compare { op: o, .. } if o == op),
                "{text}"
            );
        }
    }

    #[test]
    fn errors_point_at_the_position_and_say_what_was_expected() {
        for (text, expected) in [
            (
                "",
                "`filter`: at column 1: the filter is empty; write a condition such as `id > 10`, or remove the key to read every row",
            ),
            (
                "amount >= ",
                "`filter`: at column 11: expected a value after `>=`, found end of input",
            ),
            (
                "region = 'eu' AND amount >=",
                "`filter`: at column 28: expected a value after `>=`, found end of input",
            ),
            (
                "a = 1 AND",
                "`filter`: at column 10: expected a condition after AND, found end of input",
            ),
            (
                "a = 1 OR )",
                "`filter`: at column 10: expected a condition after OR, found `)`",
            ),
            (
                "(a = 1",
                "`filter`: at column 7: expected `)` to close the `(` at column 1, found end of input",
            ),
            (
                "a = 1)",
                "`filter`: at column 6: found `)` without a matching `(`",
            ),
            (
                "a = 1 b = 2",
                "`filter`: at column 7: expected AND, OR or end of input, found `b`",
            ),
            (
                "5 = a",
                "`filter`: at column 1: expected a column name, found `5`; a condition starts with the column, as in `id > 10`",
            ),
            (
                "in = 1",
                "`filter`: at column 1: expected a column name, found the keyword `in`; quote a column of that name as `in` in backticks",
            ),
            (
                "a 1",
                "`filter`: at column 3: expected a comparison (=, !=, <, <=, >, >=), IS [NOT] NULL or [NOT] IN after the column `a`, found `1`",
            ),
            (
                "a IS 1",
                "`filter`: at column 6: expected NULL after IS, found `1`",
            ),
            (
                "a NOT 1",
                "`filter`: at column 7: expected IN after NOT, found `1`",
            ),
            (
                "a IN 1",
                "`filter`: at column 6: expected `(` after IN, found `1`",
            ),
            (
                "a IN (1, 2",
                "`filter`: at column 11: expected `,` or `)` to close the list opened at column 6, found end of input",
            ),
            (
                "a IN (1,)",
                "`filter`: at column 9: expected a value after `,`, found `)`",
            ),
            (
                "a = NULL",
                "`filter`: at column 5: a comparison with NULL is never true; write `a IS NULL`",
            ),
            (
                "a != null",
                "`filter`: at column 6: a comparison with NULL is never true; write `a IS NOT NULL`",
            ),
            (
                "a = 'open",
                "`filter`: at column 5: the string starting here is not closed; end it with '",
            ),
            (
                "a = - x",
                "`filter`: at column 6: expected a number after `-`, found `x`",
            ),
            (
                "a # 1",
                "`filter`: at column 3: unexpected character `#`; quote column names with `backticks` and strings with 'single quotes'",
            ),
            (
                "NOT",
                "`filter`: at column 4: expected a condition after NOT, found end of input",
            ),
        ] {
            assert_eq!(error(text), expected, "for {text:?}");
        }
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_eq!(
            error("städte = "),
            "`filter`: at column 10: expected a value after `=`, found end of input"
        );
    }
}
