//! The full-text index's tokenizer outside a store file: a backend that keeps its full-text
//! documents elsewhere (the scale-out store) turns texts into the same index terms as the
//! embedded store, so both give the lexical index the same `(term, document)` occurrences and a
//! question the same terms.

use rusqlite::{Connection, params};

use crate::StoreError;
use crate::embedded::TOKENIZER;

/// An in-memory SQLite connection holding one scratch full-text table with the embedded
/// store's tokenizer (porter stemming over unicode61, diacritics removed).
#[derive(Debug)]
pub struct TextTokenizer {
    conn: Connection,
}

impl TextTokenizer {
    /// A tokenizer (opens an in-memory database: no file is touched).
    pub fn new() -> Result<TextTokenizer, StoreError> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE scratch USING fts5(body, tokenize = '{TOKENIZER}');
             CREATE VIRTUAL TABLE scratch_instance USING fts5vocab(scratch, instance);"
        ))?;
        Ok(TextTokenizer { conn })
    }

    /// Every index term occurrence of each text, as `(index in texts, term)`, grouped by term
    /// in term order, texts ascending within a term (the order of the full-text index's
    /// vocabulary): a term occurring twice in a text is listed twice.
    pub fn occurrences(&self, texts: &[&str]) -> Result<Vec<(usize, String)>, StoreError> {
        scratch_occurrences(&self.conn, "scratch", "scratch_instance", texts)
    }

    /// The distinct index terms of `text`, in term order (as [`crate::GraphReader::text_terms`]).
    pub fn terms(&self, text: &str) -> Result<Vec<String>, StoreError> {
        let mut terms: Vec<String> =
            self.occurrences(&[text])?.into_iter().map(|(_, t)| t).collect();
        terms.dedup();
        Ok(terms)
    }
}

/// Every index term occurrence of each text as `(index in texts, term)`, through the scratch
/// full-text table `table` (emptied first) and its `fts5vocab` instance table `instance`: the
/// one way both backends turn texts into index terms.
pub(crate) fn scratch_occurrences(
    c: &Connection,
    table: &str,
    instance: &str,
    texts: &[&str],
) -> Result<Vec<(usize, String)>, StoreError> {
    c.prepare_cached(&format!("DELETE FROM {table}"))?.execute([])?;
    let mut insert =
        c.prepare_cached(&format!("INSERT INTO {table} (rowid, body) VALUES (?1, ?2)"))?;
    for (i, text) in texts.iter().enumerate() {
        insert.execute(params![i as i64, text])?;
    }
    let mut st = c.prepare_cached(&format!("SELECT doc, term FROM {instance}"))?;
    let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (doc, term) = row?;
        out.push((usize::try_from(doc).unwrap_or(usize::MAX), term));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Embedded, GraphReader, OpenMode};

    #[test]
    fn terms_equal_the_embedded_stores() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = Embedded::open(&dir.path().join("t.ctxg"), OpenMode::CreateIfMissing).unwrap();
        let read = store.begin_read().unwrap();
        let t = TextTokenizer::new().unwrap();
        for text in ["Deploying the Café services failed: timeouts, timeouts", "", "  ,, ", "x"] {
            assert_eq!(t.terms(text).unwrap(), read.text_terms(text).unwrap(), "{text:?}");
        }
        let occ = t.occurrences(&["b a b", "a"]).unwrap();
        let a = |s: &str| s.to_owned();
        assert_eq!(occ, vec![(0, a("a")), (1, a("a")), (0, a("b")), (0, a("b"))]);
    }
}
