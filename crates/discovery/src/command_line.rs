//! Splitting a `--stdio` command line into words, as a POSIX shell would
//! (quotes and backslashes; no variables, globs or redirections).

use crate::DiscoveryError;

/// Splits `line` into words: whitespace separates words; `'…'` keeps its
/// content literally; `"…"` keeps its content, where `\` escapes `"`, `\`,
/// `$` and `` ` ``; outside quotes `\` escapes the next character.
///
/// ```
/// use toolmock_discovery::split_command_line;
/// assert_eq!(
///     split_command_line(r#"python3 "my server.py" --name 'a b' x\ y"#).unwrap(),
///     ["python3", "my server.py", "--name", "a b", "x y"]
/// );
/// ```
pub fn split_command_line(line: &str) -> Result<Vec<String>, DiscoveryError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unterminated("'")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(unterminated("\"")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unterminated("\"")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(c) => word.push(c),
                    None => {
                        return Err(DiscoveryError::InvalidCommand {
                            reason: "the command ends with a lone backslash".into(),
                        });
                    }
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

fn unterminated(quote: &str) -> DiscoveryError {
    DiscoveryError::InvalidCommand {
        reason: format!("a {quote} quote is not closed"),
    }
}

#[cfg(test)]
mod tests {
    use super::split_command_line;

    #[test]
    fn splits_like_a_shell() {
        let cases: &[(&str, &[&str])] = &[
            ("a b  c", &["a", "b", "c"]),
            ("  padded  ", &["padded"]),
            ("''", &[""]),
            (r#"a"b c"d"#, &["ab cd"]),
            (r#""say \"hi\" \n""#, &[r#"say "hi" \n"#]),
            (r"one\ word", &["one word"]),
            ("tab\tsplit", &["tab", "split"]),
        ];
        for (line, want) in cases {
            assert_eq!(split_command_line(line).unwrap(), *want, "{line}");
        }
    }

    #[test]
    fn refuses_broken_quoting() {
        for line in ["'open", "\"open", "trailing\\"] {
            let e = split_command_line(line).unwrap_err();
            assert_eq!(e.code(), "invalid_command", "{line}");
        }
    }

    #[test]
    fn empty_is_no_words() {
        assert!(split_command_line("   ").unwrap().is_empty());
    }
}
