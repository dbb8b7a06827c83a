//! Splitting a source document into sections, paragraphs and sentences (seed 001's lexical
//! hierarchy).
//!
//! A pure, deterministic function of the format and the text: the document record keeps the text
//! in the log, and the projection splits it again on every reprojection, so the tree is rebuilt
//! exactly. The input is untrusted (a fuzz target drives it); nothing here panics or recurses.
//!
//! # Markdown
//! - An ATX heading (`#` to `######` after at most three spaces, then a space or the end of the
//!   line) starts a section titled by the heading text (closing `#`s removed). Text before the
//!   first heading is an untitled section of level 0, kept only when it holds a paragraph.
//! - Paragraphs are separated by blank lines, thematic breaks (`---`, `***`, `___`) and headings.
//!   A list item (`-`, `*`, `+`, `1.`, `1)`) starts a paragraph of its own, without its marker.
//!   Block-quote markers (`>`) are dropped. Lines of a paragraph are joined by one space.
//! - A fenced code block (three or more backticks or tildes) is one paragraph of one sentence: its
//!   lines verbatim, joined by line breaks. An unclosed fence runs to the end of the text.
//!
//! # Plain text
//! One untitled section; paragraphs are separated by blank lines.
//!
//! # Sentences
//! A paragraph splits after `.`, `!`, `?` or `…` (with any closing quotes or brackets) followed by
//! white space and a character that is not a lower-case letter. A `.` after a single letter (an
//! initial) or after a common abbreviation ([`ABBREVIATIONS`]) ends no sentence. Sentences are
//! trimmed; empty ones are dropped.

/// Abbreviations whose final `.` ends no sentence (compared lower-cased, inner dots removed).
pub const ABBREVIATIONS: &[&str] = &[
    "eg", "ie", "etc", "vs", "cf", "dr", "mr", "mrs", "ms", "prof", "fig", "no", "st", "jr", "sr",
    "inc", "ltd", "approx", "dept", "est", "al",
];

/// How a document's text is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DocumentFormat {
    /// Markdown: headings, lists, code fences.
    Markdown,
    /// Plain text: blank-line paragraphs.
    Text,
}

impl DocumentFormat {
    /// The name in records: `markdown` or `text`.
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentFormat::Markdown => "markdown",
            DocumentFormat::Text => "text",
        }
    }

    /// Parse a record's `format`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "markdown" => Some(DocumentFormat::Markdown),
            "text" => Some(DocumentFormat::Text),
            _ => None,
        }
    }
}

/// A split document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DocumentTree {
    /// The text of the first level-1 heading, if any.
    pub title: Option<String>,
    /// Sections in document order.
    pub sections: Vec<SectionPart>,
}

/// One section: a heading and its paragraphs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionPart {
    /// Heading text; `None` for the untitled section before the first heading.
    pub title: Option<String>,
    /// Heading level, 1 to 6; 0 for the untitled section.
    pub level: u8,
    /// Paragraphs, each a list of sentences, in order.
    pub paragraphs: Vec<Vec<String>>,
}

impl DocumentTree {
    /// Every sentence in document order, with its section and paragraph order (both counted
    /// across the whole document, from 0).
    pub fn sentences(&self) -> Vec<(usize, usize, &str)> {
        let mut out = Vec::new();
        let mut paragraph = 0;
        for (s, section) in self.sections.iter().enumerate() {
            for p in &section.paragraphs {
                for sentence in p {
                    out.push((s, paragraph, sentence.as_str()));
                }
                paragraph += 1;
            }
        }
        out
    }

    /// How many sentences the document has.
    pub fn sentence_count(&self) -> usize {
        self.sections.iter().flat_map(|s| &s.paragraphs).map(Vec::len).sum()
    }
}

/// Split `text` as `format` (see the module docs).
pub fn split_document(format: DocumentFormat, text: &str) -> DocumentTree {
    let mut b = Builder::default();
    match format {
        DocumentFormat::Text => {
            for line in text.lines() {
                if line.trim().is_empty() {
                    b.flush();
                } else {
                    b.lines.push(line.trim().to_owned());
                }
            }
        }
        DocumentFormat::Markdown => markdown(&mut b, text),
    }
    b.flush();
    b.finish()
}

#[derive(Default)]
struct Builder {
    title: Option<String>,
    sections: Vec<SectionPart>,
    current: Option<SectionPart>,
    lines: Vec<String>,
}

impl Builder {
    fn section(&mut self) -> &mut SectionPart {
        self.current.get_or_insert_with(|| SectionPart {
            title: None,
            level: 0,
            paragraphs: vec![],
        })
    }

    /// End the paragraph being gathered, if any.
    fn flush(&mut self) {
        if self.lines.is_empty() {
            return;
        }
        let joined = self.lines.join(" ");
        self.lines.clear();
        let sentences = split_sentences(&joined);
        if !sentences.is_empty() {
            self.section().paragraphs.push(sentences);
        }
    }

    fn code(&mut self, lines: &[&str]) {
        let code = lines.join("\n");
        if !code.trim().is_empty() {
            self.section().paragraphs.push(vec![code.trim_end().to_owned()]);
        }
    }

    fn heading(&mut self, level: u8, title: String) {
        self.flush();
        self.close_section();
        if level == 1 && self.title.is_none() && !title.is_empty() {
            self.title = Some(title.clone());
        }
        self.current = Some(SectionPart { title: Some(title), level, paragraphs: vec![] });
    }

    fn close_section(&mut self) {
        if let Some(s) = self.current.take()
            && (s.title.is_some() || !s.paragraphs.is_empty())
        {
            self.sections.push(s);
        }
    }

    fn finish(mut self) -> DocumentTree {
        self.close_section();
        DocumentTree { title: self.title, sections: self.sections }
    }
}

fn markdown(b: &mut Builder, text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let (indent, rest) = split_indent(line);
        if indent <= 3
            && let Some((ch, n)) = fence(rest)
        {
            b.flush();
            let start = i;
            while i < lines.len() {
                let (ind, r) = split_indent(lines[i]);
                if ind <= 3
                    && fence(r).is_some_and(|(c, m)| c == ch && m >= n)
                    && r.trim_start_matches(ch).trim().is_empty()
                {
                    break;
                }
                i += 1;
            }
            b.code(&lines[start..i]);
            i += 1; // The closing fence, when there is one.
            continue;
        }
        if rest.trim().is_empty() {
            b.flush();
            continue;
        }
        if indent <= 3
            && let Some((level, title)) = heading(rest)
        {
            b.heading(level, title);
            continue;
        }
        if indent <= 3 && thematic_break(rest) {
            b.flush();
            continue;
        }
        let mut content = rest.trim();
        while let Some(r) = content.strip_prefix('>') {
            content = r.trim_start();
        }
        if let Some(item) = list_item(content) {
            b.flush();
            content = item;
        }
        if !content.is_empty() {
            b.lines.push(content.to_owned());
        }
    }
}

/// Leading spaces (a tab counts as four) and the rest of the line.
fn split_indent(line: &str) -> (usize, &str) {
    let mut width = 0;
    for (i, c) in line.char_indices() {
        match c {
            ' ' => width += 1,
            '\t' => width += 4,
            _ => return (width, &line[i..]),
        }
    }
    (width, "")
}

/// A code fence's character and length.
fn fence(rest: &str) -> Option<(char, usize)> {
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = rest.chars().take_while(|c| *c == ch).count();
    (n >= 3).then_some((ch, n))
}

fn heading(rest: &str) -> Option<(u8, String)> {
    let n = rest.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&n) {
        return None;
    }
    let after = &rest[n..];
    if !(after.is_empty() || after.starts_with(' ') || after.starts_with('\t')) {
        return None;
    }
    let mut title = after.trim();
    // A closing sequence of `#`s after a space is not part of the title.
    let stripped = title.trim_end_matches('#');
    if stripped.is_empty() || stripped.ends_with(' ') || stripped.ends_with('\t') {
        title = stripped.trim_end();
    }
    u8::try_from(n).ok().map(|level| (level, title.to_owned()))
}

fn thematic_break(rest: &str) -> bool {
    let chars: Vec<char> = rest.chars().filter(|c| !c.is_whitespace()).collect();
    chars.len() >= 3 && matches!(chars[0], '-' | '*' | '_') && chars.iter().all(|c| *c == chars[0])
}

/// The text of a list item without its marker, if the line is one.
fn list_item(content: &str) -> Option<&str> {
    for marker in ["- ", "* ", "+ "] {
        if let Some(r) = content.strip_prefix(marker) {
            return Some(r.trim_start());
        }
    }
    let digits = content.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let r = &content[digits..];
        if let Some(r) = r.strip_prefix(". ").or_else(|| r.strip_prefix(") ")) {
            return Some(r.trim_start());
        }
    }
    None
}

/// Split one paragraph into sentences (see the module docs).
pub fn split_sentences(text: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let (_, c) = chars[i];
        if !matches!(c, '.' | '!' | '?' | '…') {
            i += 1;
            continue;
        }
        let dot_at = i;
        let mut j = i + 1;
        while j < chars.len()
            && matches!(chars[j].1, '.' | '!' | '?' | '…' | '"' | '\'' | '”' | '’' | ')' | ']')
        {
            j += 1;
        }
        let ends = if j == chars.len() {
            true
        } else if chars[j].1.is_whitespace() {
            let next = chars[j..].iter().map(|(_, c)| *c).find(|c| !c.is_whitespace());
            let lower_next = next.is_some_and(char::is_lowercase);
            let abbreviation = c == '.' && j == dot_at + 1 && abbreviation_before(&chars, dot_at);
            !(lower_next || abbreviation)
        } else {
            false
        };
        if ends {
            let end = chars.get(j).map_or(text.len(), |(b, _)| *b);
            push_trimmed(&mut out, &text[start..end]);
            start = end;
        }
        i = j;
    }
    push_trimmed(&mut out, &text[start..]);
    out
}

fn push_trimmed(out: &mut Vec<String>, s: &str) {
    let t = s.trim();
    if !t.is_empty() {
        out.push(t.to_owned());
    }
}

/// Whether the word ending right before the `.` at `dot` is an initial or an abbreviation.
fn abbreviation_before(chars: &[(usize, char)], dot: usize) -> bool {
    let mut k = dot;
    while k > 0 && !chars[k - 1].1.is_whitespace() && chars[k - 1].1 != '(' {
        k -= 1;
    }
    let word: String = chars[k..dot]
        .iter()
        .map(|(_, c)| *c)
        .filter(|c| *c != '.')
        .flat_map(char::to_lowercase)
        .collect();
    let letters = word.chars().count();
    (letters == 1 && word.chars().all(char::is_alphabetic))
        || ABBREVIATIONS.contains(&word.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_at_terminators_but_not_abbreviations_or_decimals() {
        assert_eq!(
            split_sentences(
                "We chose Postgres. It is v3.11, e.g. stable! Is it? yes it is. J. Doe agreed."
            ),
            [
                "We chose Postgres.",
                "It is v3.11, e.g. stable!",
                "Is it? yes it is.",
                "J. Doe agreed."
            ]
        );
        assert_eq!(split_sentences("  "), Vec::<String>::new());
        assert_eq!(split_sentences("No terminator"), ["No terminator"]);
        assert_eq!(
            split_sentences("He said \"stop.\" Then left."),
            ["He said \"stop.\"", "Then left."]
        );
    }

    #[test]
    fn markdown_builds_sections_paragraphs_and_code() {
        let md = "Preamble line.\n\n# Title\n\nFirst para. Second sentence.\ncontinued here.\n\n## Deps ##\n- item one\n- item two\n  more\n\n```rust\nfn main() {}\n\n```\n> quoted text.\n---\n#nohash is text\n";
        let tree = split_document(DocumentFormat::Markdown, md);
        assert_eq!(tree.title.as_deref(), Some("Title"));
        let titles: Vec<_> = tree.sections.iter().map(|s| (s.title.as_deref(), s.level)).collect();
        assert_eq!(titles, [(None, 0), (Some("Title"), 1), (Some("Deps"), 2)]);
        assert_eq!(tree.sections[0].paragraphs, [vec!["Preamble line.".to_owned()]]);
        assert_eq!(
            tree.sections[1].paragraphs,
            [vec!["First para.".to_owned(), "Second sentence. continued here.".to_owned()]]
        );
        assert_eq!(
            tree.sections[2].paragraphs,
            [
                vec!["item one".to_owned()],
                vec!["item two more".to_owned()],
                vec!["fn main() {}".to_owned()],
                vec!["quoted text.".to_owned()],
                vec!["#nohash is text".to_owned()],
            ]
        );
        assert_eq!(tree.sentence_count(), 8);
        let orders: Vec<_> = tree.sentences().iter().map(|(s, p, _)| (*s, *p)).collect();
        assert_eq!(orders, [(0, 0), (1, 1), (1, 1), (2, 2), (2, 3), (2, 4), (2, 5), (2, 6)]);
    }

    #[test]
    fn plain_text_is_one_section_and_unclosed_fences_run_to_the_end() {
        let tree = split_document(DocumentFormat::Text, "# not a heading.\n\nSecond.\r\n");
        assert_eq!(tree.sections.len(), 1);
        assert_eq!(tree.sections[0].paragraphs.len(), 2);
        let tree = split_document(DocumentFormat::Markdown, "```\ncode\n# inside\n");
        assert_eq!(tree.sections[0].paragraphs, [vec!["code\n# inside".to_owned()]]);
        assert_eq!(split_document(DocumentFormat::Markdown, ""), DocumentTree::default());
    }
}
