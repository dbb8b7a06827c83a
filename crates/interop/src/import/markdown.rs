//! A folder of Markdown notes linked with `[[wikilinks]]`.
//!
//! Mapping: each note is a document (its path relative to the folder as the URL, its first
//! level-1 heading or file name as the title), split into sections, paragraphs and sentences by
//! the document ingest, which also finds the names of known entities in its sentences
//! (mentions). Each note is a `concept` entity named by its file name without `.md`, and each
//! link `[[Target]]` (also `[[Target|shown text]]`, `[[Target#heading]]`, `![[Target]]`) is a
//! fact `Target mentioned_in Note`, source the note's path: a link to another note joins the
//! two notes' entities, and a link to a note not written yet still names its entity.

use std::collections::BTreeSet;

use ctxgraph_ontology::Schema;

use super::{Claim, Imported, Note};

/// The predicate of a link.
const LINK: &str = "mentioned_in";

/// Read notes given as `(path relative to the folder, text)`.
pub fn read(schema: &Schema, files: &[(String, String)]) -> Imported {
    let mut out = Imported::default();
    let mut files: Vec<&(String, String)> = files.iter().collect();
    files.sort();
    for (n, (path, text)) in (1_u64..).zip(files) {
        let name = note_name(path);
        let title = text
            .lines()
            .find_map(|l| l.strip_prefix("# ").map(str::trim).filter(|t| !t.is_empty()))
            .unwrap_or(&name)
            .to_owned();
        out.notes.push(Note { path: path.clone(), title, text: text.clone() });
        let mut seen = BTreeSet::new();
        for target in links(text) {
            if target == name || !seen.insert(target.clone()) {
                continue;
            }
            out.uses(schema, LINK, "entity");
            out.claims.push(Claim {
                item: n,
                subject: target,
                subject_type: "concept".into(),
                predicate: LINK.into(),
                object: name.clone(),
                object_type: Some("concept".into()),
                source: path.clone(),
            });
        }
    }
    out
}

/// A note's name: its file name without the `.md` or `.markdown` extension.
pub fn note_name(path: &str) -> String {
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let lower = file.to_ascii_lowercase();
    let cut = [".markdown", ".md"].iter().find(|e| lower.ends_with(*e)).map_or(0, |e| e.len());
    file[..file.len() - cut].to_owned()
}

/// The targets of a text's wikilinks, in order (with repeats).
pub fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("[[") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("]]") else { break };
        let inner = &after[..end];
        // A link does not span lines; `[[` inside it starts over.
        if !inner.contains('\n') && !inner.contains("[[") {
            let target = inner.split(['|', '#']).next().unwrap_or("").trim();
            if !target.is_empty() {
                out.push(target.to_owned());
            }
            rest = &after[end + 2..];
        } else {
            rest = after;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_titles_and_facts() {
        assert_eq!(
            links("see [[A]], [[B|bee]] and ![[C#part]]; [[\n]] [[ ]] [[D"),
            ["A", "B", "C"]
        );
        assert_eq!(note_name("dir/Billing Service.md"), "Billing Service");
        let schema = Schema::core().unwrap();
        let files = vec![
            ("b.md".to_owned(), "No heading, links [[a]] twice [[a]] and itself [[b]].".to_owned()),
            ("a.md".to_owned(), "# Note A\n\nLinks to [[b|the other]].".to_owned()),
        ];
        let got = read(&schema, &files);
        assert_eq!(got.notes.iter().map(|n| n.title.as_str()).collect::<Vec<_>>(), ["Note A", "b"]);
        let facts: Vec<_> = got
            .claims
            .iter()
            .map(|c| (c.subject.as_str(), c.object.as_str(), c.source.as_str()))
            .collect();
        assert_eq!(facts, [("b", "a", "a.md"), ("a", "b", "b.md")]);
        assert!(got.predicates.is_empty(), "mentioned_in is the schema's");
    }
}
