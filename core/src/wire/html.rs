//! HTML for the pages of the flow: escaping, and page templates with a small Mustache subset.
//!
//! A template is compiled once, with the configuration, and rendered per request:
//! `{{name}}` inserts a value, HTML-escaped; `{{#name}}…{{/name}}` shows its content when `name`
//! is true, or once per item of a list (the item is `{{.}}`); `{{^name}}…{{/name}}` shows it when
//! `name` is false or empty. Only the variables a page defines exist, so a typo fails when the
//! configuration is built, not when a user sees the page. This subset is all the pages need;
//! the template crates that do more bring derives or dynamic values larger than this module.

use crate::prelude::*;
/// Escapes text for HTML content and quoted attribute values.
pub fn escape(text: &str, out: &mut String) {
    // Byte by byte: the five are ASCII, so each sits on a character boundary, and the runs
    // between them are copied whole. (Splitting at a set of chars decoded every character: 6 %
    // of a code flow's time in wasm, the consent page's hidden query most.)
    let mut run = 0;
    for (at, byte) in text.bytes().enumerate() {
        let entity = match byte {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(text.get(run..at).unwrap_or_default());
        out.push_str(entity);
        run = at + 1;
    }
    out.push_str(text.get(run..).unwrap_or_default());
}

/// A value a template can show.
#[derive(Clone, Copy)]
pub enum Value<'a> {
    /// Text, escaped when inserted.
    Text(&'a str),
    /// Markup the renderer built itself (already escaped), inserted as it is.
    Markup(&'a str),
    /// A condition for a section.
    Flag(bool),
    /// Items a section repeats over (`{{.}}` is the item).
    List(&'a [&'a str]),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
    Item,
    Section {
        name: String,
        inverted: bool,
        body: Vec<Part>,
    },
}

/// A compiled page template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// Why a template cannot be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl Template {
    /// Compiles `text`, accepting only the variables named in `known`.
    pub fn compile(text: &str, known: &[&str]) -> Result<Template, TemplateError> {
        let mut rest = text;
        let parts = parse(&mut rest, None, known)?;
        Ok(Template { parts })
    }

    /// Renders with `lookup` giving each variable's value.
    pub fn render<'a>(&self, lookup: &dyn Fn(&str) -> Option<Value<'a>>) -> String {
        let mut out = String::new();
        render(&self.parts, lookup, None, &mut out);
        out
    }
}

/// Where the two-byte delimiter `pair` (`{{` or `}}`) first starts in `text`. A plain scan:
/// `str::find` with a string needle links a general substring searcher, kilobytes of wasm for
/// two fixed bytes.
fn find_pair(text: &str, pair: &[u8; 2]) -> Option<usize> {
    text.as_bytes().windows(2).position(|w| w == pair)
}

fn parse(rest: &mut &str, open: Option<&str>, known: &[&str]) -> Result<Vec<Part>, TemplateError> {
    let mut parts = Vec::new();
    loop {
        let Some(start) = find_pair(rest, b"{{") else {
            if let Some(name) = open {
                return Err(TemplateError(format!("section {name} is not closed")));
            }
            if !rest.is_empty() {
                parts.push(Part::Literal((*rest).to_owned()));
            }
            *rest = "";
            return Ok(parts);
        };
        let (literal, tag) = rest.split_at_checked(start).unwrap_or_default();
        if !literal.is_empty() {
            parts.push(Part::Literal(literal.to_owned()));
        }
        let Some(end) = find_pair(tag, b"}}") else {
            return Err(TemplateError("a {{ tag is not closed".into()));
        };
        let inner = tag.get(2..end).unwrap_or_default().trim();
        *rest = tag.get(end + 2..).unwrap_or_default();
        let check = |name: &str| {
            if known.contains(&name) {
                Ok(name.to_owned())
            } else {
                Err(TemplateError(format!("unknown variable {name}")))
            }
        };
        if let Some(name) = inner.strip_prefix('/') {
            return match open {
                Some(expected) if expected == name.trim() => Ok(parts),
                _ => Err(TemplateError(format!(
                    "unexpected {{{{/{}}}}}",
                    name.trim()
                ))),
            };
        }
        let section = inner
            .strip_prefix('#')
            .map(|n| (n, false))
            .or_else(|| inner.strip_prefix('^').map(|n| (n, true)));
        if let Some((name, inverted)) = section {
            let name = check(name.trim())?;
            let body = parse(rest, Some(&name), known)?;
            parts.push(Part::Section {
                name,
                inverted,
                body,
            });
        } else if inner == "." {
            parts.push(Part::Item);
        } else {
            parts.push(Part::Variable(check(inner)?));
        }
    }
}

fn render<'a>(
    parts: &[Part],
    lookup: &dyn Fn(&str) -> Option<Value<'a>>,
    item: Option<&str>,
    out: &mut String,
) {
    for part in parts {
        match part {
            Part::Literal(text) => out.push_str(text),
            Part::Item => escape(item.unwrap_or_default(), out),
            Part::Variable(name) => match lookup(name) {
                Some(Value::Text(text)) => escape(text, out),
                Some(Value::Markup(markup)) => out.push_str(markup),
                Some(Value::List(items)) => escape(&items.join(" "), out),
                Some(Value::Flag(flag)) => out.push_str(if flag { "true" } else { "false" }),
                None => {}
            },
            Part::Section {
                name,
                inverted,
                body,
            } => match (lookup(name), inverted) {
                (Some(Value::List(items)), false) => {
                    for it in items {
                        render(body, lookup, Some(it), out);
                    }
                }
                (Some(Value::List([])), true) => render(body, lookup, item, out),
                (Some(Value::Flag(flag)), inverted) if flag != *inverted => {
                    render(body, lookup, item, out)
                }
                (Some(Value::Text(text) | Value::Markup(text)), inverted)
                    if text.is_empty() == *inverted =>
                {
                    render(body, lookup, item, out)
                }
                (None, true) => render(body, lookup, item, out),
                _ => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Escaping is the five entities and nothing else, character by character, whatever
        /// the text (multi-byte characters next to special ones included).
        #[test]
        fn escape_replaces_exactly_the_five_special_characters(text in "[a-z&<>\"'é€\u{1F600} ]{0,24}") {
            let mut escaped = String::new();
            escape(&text, &mut escaped);
            let expected: String = text.chars().map(|c| match c {
                '&' => "&amp;".to_owned(),
                '<' => "&lt;".to_owned(),
                '>' => "&gt;".to_owned(),
                '"' => "&quot;".to_owned(),
                '\'' => "&#39;".to_owned(),
                other => other.to_string(),
            }).collect();
            prop_assert_eq!(escaped, expected);
        }
    }

    #[test]
    fn variables_are_escaped_sections_repeat_and_unknown_names_fail() {
        let compiled = Template::compile(
            "<h1 {{page_data}}>{{app}}</h1>{{#offline}}away{{/offline}}{{^offline}}here{{/offline}}<ul>{{#scopes}}<li>{{.}}</li>{{/scopes}}</ul>",
            &["page_data", "app", "offline", "scopes"],
        );
        assert!(compiled.is_ok(), "{compiled:?}");
        let Ok(t) = compiled else { return };
        let scopes = ["a.read", "b<write"];
        let html = t.render(&|name| match name {
            "page_data" => Some(Value::Markup("data-page=\"x\"")),
            "app" => Some(Value::Text("A & \"B\"")),
            "offline" => Some(Value::Flag(false)),
            "scopes" => Some(Value::List(&scopes)),
            _ => None,
        });
        assert_eq!(
            html,
            "<h1 data-page=\"x\">A &amp; &quot;B&quot;</h1>here<ul><li>a.read</li><li>b&lt;write</li></ul>"
        );
        assert!(Template::compile("{{nope}}", &["app"]).is_err());
        assert!(Template::compile("{{#app}}open", &["app"]).is_err());
        assert!(Template::compile("{{/app}}", &["app"]).is_err());
    }
}
