//! HTML to readable text: drop markup, scripts, styles and comments, break lines at block
//! elements, decode entities, collapse whitespace. It is not an HTML parser and does not need
//! to be one: it reads a bounded download (1 MiB) once, left to right, and whatever markup it
//! misreads only costs some text. An HTML5 parser (html5ever) would triple this plugin's size
//! and build time for output a model reads the same.

/// A page reduced to text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageText {
    /// The `<title>`, if any.
    pub title: Option<String>,
    /// The readable text: a line per block, list items as `- `.
    pub text: String,
}

/// Elements whose content is never text for a reader.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object", "canvas",
    "select",
];

/// Elements that start or end a line.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "tr",
    "ul",
];

/// Reduces an HTML document to its title and text.
pub fn to_text(html: &str) -> PageText {
    // ASCII lower-casing keeps byte offsets, so searches run on `lower` and slices on `html`.
    let lower = html.to_ascii_lowercase();
    let title = title(html, &lower);
    let mut out = String::with_capacity(html.len() / 2);
    let mut at = 0;
    while let Some(found) = lower[at..].find('<') {
        let lt = at + found;
        push_text(&mut out, &html[at..lt]);
        let next = lower[lt + 1..].chars().next();
        if lower[lt..].starts_with("<!--") {
            at = lower[lt..]
                .find("-->")
                .map_or(html.len(), |end| lt + end + 3);
            continue;
        }
        if !next.is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?')) {
            // A lone `<` in text.
            out.push('<');
            at = lt + 1;
            continue;
        }
        let Some(gt) = lower[lt..].find('>').map(|end| lt + end) else {
            at = html.len();
            break;
        };
        let tag = &lower[lt + 1..gt];
        at = gt + 1;
        let closing = tag.starts_with('/');
        let name: &str = {
            let body = tag.trim_start_matches('/');
            let end = body
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(body.len());
            &body[..end]
        };
        if !closing && SKIPPED.contains(&name) && !tag.ends_with('/') {
            at = skip_element(&lower, at, name);
        } else if name == "li" && !closing {
            out.push_str("\n- ");
        } else if BLOCKS.contains(&name) {
            out.push('\n');
        } else if matches!(name, "td" | "th") && !closing {
            out.push(' ');
        }
    }
    push_text(&mut out, &html[at..]);
    PageText {
        title,
        text: tidy(&out),
    }
}

/// The offset just past `</name ...>` from `from`, or the end.
fn skip_element(lower: &str, from: usize, name: &str) -> usize {
    let close = format!("</{name}");
    let Some(start) = lower[from..].find(&close).map(|i| from + i) else {
        return lower.len();
    };
    lower[start..]
        .find('>')
        .map_or(lower.len(), |end| start + end + 1)
}

fn title(html: &str, lower: &str) -> Option<String> {
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let mut text = String::new();
    push_text(&mut text, &html[start..end]);
    let text = tidy(&text);
    (!text.is_empty()).then_some(text)
}

/// Appends text content: entities decoded, every whitespace run (source line breaks included)
/// as one space.
fn push_text(out: &mut String, text: &str) {
    let decoded = decode_entities(text);
    let mut space = out.ends_with([' ', '\n']);
    for c in decoded.chars() {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
                space = true;
            }
        } else {
            out.push(c);
            space = false;
        }
    }
}

/// Trims each line and drops the empty ones.
fn tidy(text: &str) -> String {
    let lines: Vec<&str> = text
        .split('\n')
        .map(str::trim)
        .filter(|line| !line.is_empty() && *line != "-")
        .collect();
    lines.join("\n")
}

/// Decodes numeric references and the named ones pages use most; anything else stays as is.
fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest
            .get(1..rest.len().min(12))
            .and_then(|window| window.find(';'))
            .and_then(|semi| Some((entity(&rest[1..=semi])?, semi + 2)));
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        return char::from_u32(code).filter(|c| !c.is_control() || c.is_whitespace());
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "middot" => '·',
        "bull" => '•',
        "times" => '×',
        "euro" => '€',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_readable_text_of_a_page() {
        let html = r#"<!DOCTYPE html>
<html><head><title> The   Title </title>
<style>body { color: red }</style><script>var x = "<p>not text</p>";</script></head>
<body>
  <!-- a comment <p>hidden</p> -->
  <h1>Heading</h1>
  <p>First
     paragraph with <a href="/x">a link</a> &amp; an entity&nbsp;&#8212;&#x41;.</p>
  <ul><li>one</li><li>two</li></ul>
  <table><tr><td>a</td><td>b</td></tr></table>
  <p>1 < 2 and &unknown; stays</p>
  <SCRIPT type="x">IGNORED</SCRIPT>
</body></html>"#;
        let page = to_text(html);
        assert_eq!(page.title.as_deref(), Some("The Title"));
        assert_eq!(
            page.text,
            "Heading\nFirst paragraph with a link & an entity —A.\n- one\n- two\na b\n1 < 2 and &unknown; stays"
        );
    }

    #[test]
    fn unterminated_markup_ends_quietly() {
        assert_eq!(to_text("text <p unterminated").text, "text");
        assert_eq!(to_text("<script>never closed").text, "");
        assert_eq!(to_text("<b>bold</b>").title, None);
    }
}
