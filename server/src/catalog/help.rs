//! Help text as argparse prints it (`%(default)s`, `%(prog)s`, ... expanded).
//!
//! argparse (CPython `HelpFormatter._expand_help`) formats an action's help
//! with `help % params`, where `params` is `vars(action)` plus `prog`, minus
//! every value that is `SUPPRESS`, with callables replaced by their
//! `__name__` and `choices` joined by `", "`. It then collapses every run of
//! whitespace into one space (`_split_lines`) before wrapping. We do the same
//! on the dump's facts, without wrapping, so a tool description reads exactly
//! like `conda <cmd> --help` does.
//!
//! Descriptions are printed raw by conda (it uses
//! `RawDescriptionHelpFormatter`), with only `%(prog)s` expanded
//! (`HelpFormatter._format_text`); [`summary`] takes their first paragraph.

use serde_json::Value;

/// argparse's `SUPPRESS` sentinel as the dump spells it.
pub const SUPPRESS: &str = "==SUPPRESS==";

/// The values `%(name)s` may refer to, taken from one action (argparse's
/// `vars(action)` plus `prog`).
#[derive(Debug, Clone, Default)]
pub struct HelpParams<'a> {
    /// `parser.prog` of the parser the action belongs to.
    pub prog: &'a str,
    /// `action.dest`.
    pub dest: &'a str,
    /// `action.option_strings`.
    pub option_strings: &'a [String],
    /// `action.nargs` as dumped (JSON).
    pub nargs: Value,
    /// `action.const` (JSON or repr string).
    pub const_value: &'a Value,
    /// `action.default` (JSON or repr string; `==SUPPRESS==` is removed).
    pub default: &'a Value,
    /// Name of `action.type`.
    pub type_name: Option<&'a str>,
    /// `action.choices`, when a list.
    pub choices: Option<&'a [Value]>,
    /// `action.required`.
    pub required: bool,
    /// `action.metavar` (JSON: null, string or list).
    pub metavar: &'a Value,
}

impl HelpParams<'_> {
    /// The value of `%(name)…`, as a Python object would format with the
    /// given conversion (`s` → `str()`, `r` → `repr()`, `d`/`i` → integer).
    /// `None` when argparse would not have the key (absent or SUPPRESS):
    /// Python would raise `KeyError` there; we keep the placeholder as is.
    fn lookup(&self, name: &str, conversion: char) -> Option<String> {
        let value: Value = match name {
            "prog" => Value::String(self.prog.to_owned()),
            "dest" => Value::String(self.dest.to_owned()),
            "option_strings" => Value::Array(
                self.option_strings
                    .iter()
                    .map(|s| Value::String(s.clone()))
                    .collect(),
            ),
            "nargs" => self.nargs.clone(),
            "const" => self.const_value.clone(),
            "default" => self.default.clone(),
            "type" => self
                .type_name
                .map_or(Value::Null, |t| Value::String(t.to_owned())),
            "choices" => match self.choices {
                // argparse replaces choices by the ", "-joined str() of each.
                Some(c) => Value::String(c.iter().map(py_str).collect::<Vec<_>>().join(", ")),
                None => Value::Null,
            },
            "required" => Value::Bool(self.required),
            "metavar" => self.metavar.clone(),
            "help" => return None,
            _ => return None,
        };
        if value.as_str() == Some(SUPPRESS) {
            return None;
        }
        match conversion {
            's' => Some(py_str(&value)),
            'r' => Some(py_repr(&value)),
            'd' | 'i' | 'u' => match &value {
                Value::Number(n) => n
                    .as_i64()
                    .map(|i| i.to_string())
                    .or_else(|| n.as_f64().map(|f| (f.trunc() as i64).to_string())),
                Value::Bool(b) => Some(u8::from(*b).to_string()),
                _ => None,
            },
            'f' => match &value {
                Value::Number(n) => n.as_f64().map(|f| format!("{f:.6}")),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Python `str()` of a dumped value (strings unquoted; `None`, `True`,
/// lists as `['a', 'b']`).
pub fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python `repr()` of a dumped value (strings quoted the way Python quotes
/// them).
pub fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string()
            } else if let Some(u) = n.as_u64() {
                u.to_string()
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                if f.fract() == 0.0 && f.is_finite() && f.abs() < 1e16 {
                    format!("{f:.1}")
                } else {
                    f.to_string()
                }
            }
        }
        Value::String(s) => {
            let quote = if s.contains('\'') && !s.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut out = String::with_capacity(s.len() + 2);
            out.push(quote);
            for ch in s.chars() {
                match ch {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    '\r' => out.push_str("\\r"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", py_repr(&Value::String(k.clone())), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Applies Python's `%`-formatting with a mapping to `text`: `%%` → `%`,
/// `%(name)s` / `%(name)r` / `%(name)d` (with optional flags and width,
/// which are ignored) replaced by `lookup`. A placeholder that Python could
/// not format is kept verbatim rather than failing.
pub fn percent_format(text: &str, lookup: impl Fn(&str, char) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('%') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('%') {
            out.push('%');
            rest = tail;
            continue;
        }
        if let Some(inner) = after.strip_prefix('(')
            && let Some(close) = inner.find(')')
        {
            let name = &inner[..close];
            let spec = &inner[close + 1..];
            // Flags and width: `-+ #0` and digits, then the conversion.
            let skip = spec
                .char_indices()
                .find(|(_, c)| !matches!(c, '-' | '+' | ' ' | '#' | '0'..='9' | '.'))
                .map(|(i, _)| i);
            if let Some(skip) = skip {
                let conv = spec[skip..].chars().next().unwrap_or('s');
                if let Some(v) = lookup(name, conv) {
                    out.push_str(&v);
                    rest = &spec[skip + conv.len_utf8()..];
                    continue;
                }
            }
        }
        // Not something we can format: keep the '%' literally.
        out.push('%');
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Collapses every run of whitespace into one space and trims, as argparse's
/// `_split_lines` does before wrapping.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An action's help as argparse prints it: `%`-expanded, whitespace
/// collapsed. `None` for a missing or `SUPPRESS` help.
pub fn expand_help(help: Option<&str>, params: &HelpParams<'_>) -> Option<String> {
    let help = help?;
    if help == SUPPRESS {
        return None;
    }
    let expanded = if help.contains('%') {
        percent_format(help, |name, conv| params.lookup(name, conv))
    } else {
        help.to_owned()
    };
    Some(collapse_whitespace(&expanded))
}

/// A description or epilog as argparse prints it: only `%(prog)s` is
/// expanded (and only when the text contains `%(prog)`, like
/// `_format_text`); line breaks are kept (conda's parsers use
/// `RawDescriptionHelpFormatter`).
pub fn expand_text(text: &str, prog: &str) -> String {
    if text.contains("%(prog)") {
        percent_format(text, |name, conv| {
            (name == "prog" && matches!(conv, 's' | 'r')).then(|| {
                if conv == 'r' {
                    py_repr(&Value::String(prog.to_owned()))
                } else {
                    prog.to_owned()
                }
            })
        })
    } else {
        text.to_owned()
    }
}

/// Abbreviations whose period does not end a sentence (compared without
/// case and without their final period): conda's help writes `(i.e.
/// prefix)`, `(e.g. linux-64)`, `i.e., ^<regex>$`.
pub const ABBREVIATIONS: &[&str] = &[
    "i.e", "e.g", "etc", "vs", "cf", "approx", "incl", "eg", "ie", "resp",
];

/// Splits collapsed text into sentences, each keeping its final
/// punctuation. A sentence ends at `.`, `!` or `?` followed by a space, but
/// never inside parentheses or brackets and never after an abbreviation
/// ([`ABBREVIATIONS`], or any word with an inner period such as `e.g`), so
/// `Full path to environment location (i.e. prefix).` is one sentence.
pub fn sentences(text: &str) -> Vec<String> {
    let flat = collapse_whitespace(text);
    let mut out = Vec::new();
    let mut depth: i32 = 0;
    let mut start = 0;
    let bytes = flat.as_bytes();
    for (i, ch) in flat.char_indices() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = (depth - 1).max(0),
            '.' | '!' | '?' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                let word = flat[start..i]
                    .rsplit(|c: char| c.is_whitespace() || c == '(')
                    .next()
                    .unwrap_or("");
                if ch == '.' && is_abbreviation(word) {
                    continue;
                }
                out.push(flat[start..=i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    let rest = flat[start..].trim();
    if !rest.is_empty() {
        out.push(rest.to_owned());
    }
    out
}

/// Whether the last word of `text` is an abbreviation (`e.g.`, `i.e`):
/// text cut there would end in a cut abbreviation.
pub fn ends_in_abbreviation(text: &str) -> bool {
    let word = text
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("");
    is_abbreviation(word.trim_end_matches(['.', ',']))
}

/// Whether `word` (the text before a period) is an abbreviation rather than
/// the end of a sentence.
fn is_abbreviation(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
        || (lower.contains('.') && lower.chars().filter(|c| c.is_alphabetic()).count() <= 4)
}

/// The tool summary: the first paragraph (text up to the first blank line)
/// of the description, whitespace collapsed, skipping paragraphs that are
/// examples (`Example:`, `Examples:`, ...); falls back to `fallback` (the
/// subcommand's `help=`) when the description is empty. Empty when neither
/// says anything.
pub fn summary(description: Option<&str>, fallback: Option<&str>, prog: &str) -> String {
    let first = |text: &str| -> Option<String> {
        let text = expand_text(text, prog);
        paragraphs(&text)
            .into_iter()
            .map(|p| collapse_whitespace(&p))
            .find(|p| !p.is_empty() && !is_example(p))
    };
    description
        .and_then(first)
        .or_else(|| fallback.filter(|f| *f != SUPPRESS).and_then(first))
        .unwrap_or_default()
}

fn is_example(paragraph: &str) -> bool {
    let lower = paragraph.to_ascii_lowercase();
    lower.starts_with("example:") || lower.starts_with("examples:") || lower == "examples"
}

/// Splits raw text into paragraphs at blank lines.
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !current.trim().is_empty() {
                out.push(std::mem::take(&mut current));
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params<'a>(default: &'a Value, choices: Option<&'a [Value]>) -> HelpParams<'a> {
        HelpParams {
            prog: "conda install",
            dest: "jobs",
            option_strings: &[],
            nargs: Value::Null,
            const_value: &Value::Null,
            default,
            type_name: Some("int"),
            choices,
            required: false,
            metavar: &Value::Null,
        }
    }

    #[test]
    fn expands_like_argparse() {
        let default = json!(4);
        let choices = [json!(1), json!(2), json!("x")];
        let p = params(&default, Some(&choices));
        assert_eq!(
            expand_help(
                Some("Use %(default)s jobs (one of %(choices)s) in %(prog)s; 100%% %(type)s, %(default)r, %(dest)5s"),
                &p
            )
            .as_deref(),
            Some("Use 4 jobs (one of 1, 2, x) in conda install; 100% int, 4, jobs")
        );
    }

    #[test]
    fn suppress_and_unknown_placeholders_are_kept() {
        let default = json!(SUPPRESS);
        let p = params(&default, None);
        assert_eq!(
            expand_help(Some("d=%(default)s u=%(nope)s 5% x"), &p).as_deref(),
            Some("d=%(default)s u=%(nope)s 5% x")
        );
        assert_eq!(expand_help(Some(SUPPRESS), &p), None);
        assert_eq!(expand_help(None, &p), None);
    }

    #[test]
    fn python_str_and_repr() {
        assert_eq!(py_str(&json!(null)), "None");
        assert_eq!(py_str(&json!(true)), "True");
        assert_eq!(py_str(&json!(["a", 1, null])), "['a', 1, None]");
        assert_eq!(py_str(&json!(1.0)), "1.0");
        assert_eq!(py_repr(&json!("it's")), "\"it's\"");
        assert_eq!(py_str(&json!({"k": false})), "{'k': False}");
    }

    #[test]
    fn whitespace_collapses() {
        let d = json!(null);
        let p = params(&d, None);
        assert_eq!(
            expand_help(Some("  a\n  b\t c  "), &p).as_deref(),
            Some("a b c")
        );
    }

    #[test]
    fn sentences_keep_abbreviations_and_parentheses() {
        assert_eq!(
            sentences("Full path to environment location (i.e. prefix). More."),
            vec!["Full path to environment location (i.e. prefix).", "More."]
        );
        assert_eq!(
            sentences("Allow clobbering (i.e. overwriting) of paths. Next one"),
            vec!["Allow clobbering (i.e. overwriting) of paths.", "Next one"]
        );
        assert_eq!(
            sentences("Only full names, i.e., ^<regex>$. --full-name NAME is identical."),
            vec![
                "Only full names, i.e., ^<regex>$.",
                "--full-name NAME is identical."
            ]
        );
        assert_eq!(
            sentences("Platforms (e.g. linux-64, osx-arm64). Repeat it, e.g. twice. Done!"),
            vec![
                "Platforms (e.g. linux-64, osx-arm64).",
                "Repeat it, e.g. twice.",
                "Done!"
            ]
        );
        assert_eq!(sentences("  "), Vec::<String>::new());
        assert_eq!(sentences("No period"), vec!["No period"]);
    }

    #[test]
    fn summary_takes_first_paragraph_and_skips_examples() {
        assert_eq!(
            summary(
                Some("Install a list of packages.\nInto an env.\n\nMore text.\n"),
                Some("help"),
                "conda install"
            ),
            "Install a list of packages. Into an env."
        );
        assert_eq!(
            summary(Some("Examples:\n  conda x\n\nReal text."), None, "p"),
            "Real text."
        );
        assert_eq!(summary(Some(""), Some("From help."), "p"), "From help.");
        assert_eq!(summary(None, None, "p"), "");
        assert_eq!(
            summary(Some("%(prog)s does it"), None, "conda x"),
            "conda x does it"
        );
    }
}
