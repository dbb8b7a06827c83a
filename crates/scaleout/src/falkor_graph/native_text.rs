//! FalkorDB's own full-text index over stage 2's documents: the candidate prefilter of a
//! full-text search outside the lexical index, scored with the engine's BM25 over the stored
//! terms, as FTS5 scores a store file's.
//!
//! # Layout
//!
//! ```text
//! (:_Text {nid, terms})      one node per full-text document: nid its node's creation number,
//!                            terms its terms as `doc_terms` holds them (the engine's tokenizer,
//!                            one per occurrence, space-separated)
//! full-text index on         no stemming and no stop words: the terms are already the
//!   _Text.terms              tokenizer's, so a term matches exactly the documents holding it
//! native_texts               string: set by the commit that wrote a store's first document
//!                            (from then on every document has its copy and is counted)
//! text_tokens                counter: the terms of every document (FTS5's average length is
//!                            this over the document count)
//! ```
//!
//! The copies are written and deleted in the same `MULTI`/`EXEC` as `doc_terms` (stage 2's and
//! stage 3's commits, and the fold that deletes a node), so a forgotten document leaves the
//! index, and the counter, with its node.
//!
//! A search sends each word's term to the index as one escaped term: the query syntax has
//! operators of its own (`|`, `-`, `*`, `@field:`, quotes, braces...) that query parameters do
//! not neutralise, so every character but a letter or digit is escaped with a backslash.

use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_lexical::Bm25;
use ctxgraph_store::StoreError;
use falkordb::FalkorValue;

use super::{FalkorGraph, Write, int, int_at, odd, raw_remote, s, text_at};

/// The label of the documents' copies.
pub(super) const TEXT_LABEL: &str = "_Text";
/// The key marking that every document has its copy and is counted.
pub(super) const NATIVE_TEXTS: &str = "native_texts";
/// The key counting every document's terms.
pub(super) const TEXT_TOKENS: &str = "text_tokens";
/// Documents written per query.
const WRITE_PAGE: usize = 512;
/// Documents the words of a search may match together before the commonest words are left
/// out, rarest first (the store file's full-text search has the same bound).
const MAX_MATCHING_DOCS: u64 = 5_000;
/// Documents' terms read per round trip when scoring.
const READ_PAGE: usize = 1_024;

/// How many terms a document's space-separated terms hold.
pub(super) fn length(terms: &str) -> i64 {
    i64::try_from(terms.split(' ').filter(|t| !t.is_empty()).count()).unwrap_or(i64::MAX)
}

/// `term` as one term of the full-text query syntax: every character but a letter or a digit
/// escaped, so no operator, field name, wildcard or quote in it is read as syntax.
pub(crate) fn escaped(term: &str) -> String {
    let mut out = String::with_capacity(term.len() * 2);
    for c in term.chars() {
        if !c.is_alphanumeric() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl FalkorGraph {
    /// Create the full-text index unless it exists (outside any transaction).
    fn ensure_text_index(&self) -> Result<(), StoreError> {
        super::unless_raced(self.run(
            &format!(
                "CALL db.idx.fulltext.createNodeIndex({{label: '{TEXT_LABEL}', stopwords: []}}, \
                 {{field: 'terms', nostem: true}})"
            ),
            &[],
        ))?;
        super::unless_raced(self.run(&format!("CREATE INDEX FOR (n:{TEXT_LABEL}) ON (n.nid)"), &[]))
    }

    /// The terms' lengths stored for `nids` (0 where there is no document).
    pub(super) fn stored_lengths(&self, nids: &[i64]) -> Result<i64, StoreError> {
        if nids.is_empty() {
            return Ok(0);
        }
        let docs: Vec<Option<String>> =
            self.raw_query(redis::cmd("HMGET").arg(self.stage2_key("doc_terms")).arg(nids))?;
        Ok(docs.iter().flatten().map(|d| length(d)).sum())
    }

    /// The commands of a commit writing the documents `docs` (number, terms) that keep their
    /// copies and the term count: the index created first when missing, the count moved by
    /// what the documents replace, and the marker set when the store held no document before.
    /// Read before the commit's `MULTI`, which watches the stage-2 checkpoint.
    pub(super) fn text_copy_writes(
        &self,
        docs: &[(i64, &str)],
    ) -> Result<Vec<redis::Cmd>, StoreError> {
        if docs.is_empty() {
            return Ok(Vec::new());
        }
        let (marker, stored): (Option<String>, u64) = redis::pipe()
            .cmd("GET")
            .arg(self.stage2_key(NATIVE_TEXTS))
            .cmd("ZCARD")
            .arg(self.stage2_key("text_ids"))
            .query(&mut *self.raw.borrow_mut())
            .map_err(|e| raw_remote(&self.url, &e))?;
        let nids: Vec<i64> = docs.iter().map(|(nid, _)| *nid).collect();
        let replaced = self.stored_lengths(&nids)?;
        // While the marker is there the index is (a reset drops both).
        if marker.is_none() {
            self.ensure_text_index()?;
        }
        let mut out = Vec::new();
        for page in docs.chunks(WRITE_PAGE) {
            let rows = page
                .iter()
                .map(|(nid, terms)| FalkorValue::Array(vec![int(*nid), s(terms)]))
                .collect();
            let write = Write {
                query: format!(
                    "UNWIND $rows AS r MERGE (n:{TEXT_LABEL} {{nid: r[0]}}) SET n.terms = r[1]"
                ),
                params: vec![("rows", FalkorValue::Array(rows))],
            };
            out.push(redis::cmd("GRAPH.QUERY").arg(&self.name).arg(write.with_preamble()?).clone());
        }
        let added: i64 = docs.iter().map(|(_, terms)| length(terms)).sum();
        out.push(
            redis::cmd("INCRBY").arg(self.stage2_key(TEXT_TOKENS)).arg(added - replaced).clone(),
        );
        if stored == 0 {
            out.push(redis::cmd("SET").arg(self.stage2_key(NATIVE_TEXTS)).arg(1).clone());
        }
        Ok(out)
    }

    /// The commands deleting the copies of the documents of `nids`, whose stored terms number
    /// `gone` ([`FalkorGraph::stored_lengths`]), and taking those out of the count (none when
    /// `nids` is empty).
    pub(super) fn text_copy_drops(
        &self,
        nids: &[i64],
        gone: i64,
    ) -> Result<Vec<redis::Cmd>, StoreError> {
        if nids.is_empty() {
            return Ok(Vec::new());
        }
        let write = Write {
            query: format!("UNWIND $nids AS i MATCH (n:{TEXT_LABEL} {{nid: i}}) DELETE n"),
            params: vec![("nids", FalkorValue::Array(nids.iter().map(|n| int(*n)).collect()))],
        };
        Ok(vec![
            redis::cmd("GRAPH.QUERY").arg(&self.name).arg(write.with_preamble()?).clone(),
            redis::cmd("DECRBY").arg(self.stage2_key(TEXT_TOKENS)).arg(gone).clone(),
        ])
    }

    /// [`ctxgraph_store::GraphReader::search_text`] through the full-text index: the documents
    /// above `after` holding a term of `words` (each word's terms by the engine's tokenizer),
    /// scored as FTS5's `bm25()` scores them on a store file (every word one OR-ed phrase, in
    /// the order the store file sends them; the statistics those of every document), best
    /// first, ties by number, at most `limit`. Over every document (`after` < 0) the commonest
    /// words are left out once their documents together pass [`MAX_MATCHING_DOCS`], rarest
    /// first, as on a store file. A store whose documents have no copies (written before the
    /// index was kept) is searched by reading every document's terms instead.
    pub(crate) fn native_search_text(
        &self,
        words: &[String],
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, f64)>, StoreError> {
        // Within a read view, from its memo (read once with the other state keys), which also
        // knows when no document lies above `after`: then nothing is read at all (a store
        // whose graph is stage 1's has no document).
        let (marker, docs, tokens): (bool, u64, Option<i64>) =
            match (self.held_native()?, self.held_text()?) {
                (Some(native), Some(text)) => {
                    if text.docs_after(after) == Some(0) {
                        return Ok(Vec::new());
                    }
                    (native.texts, text.count, native.tokens)
                }
                _ => {
                    let (marker, docs, tokens): (Option<String>, u64, Option<i64>) = redis::pipe()
                        .cmd("GET")
                        .arg(self.stage2_key(NATIVE_TEXTS))
                        .cmd("ZCARD")
                        .arg(self.stage2_key("text_ids"))
                        .cmd("GET")
                        .arg(self.stage2_key(TEXT_TOKENS))
                        .query(&mut *self.raw.borrow_mut())
                        .map_err(|e| raw_remote(&self.url, &e))?;
                    (marker.is_some(), docs, tokens)
                }
            };
        // Without copies, every document's terms read once: the statistics and matches too.
        let scanned = if marker { None } else { Some(self.doc_terms()?) };
        let (docs, tokens) = match &scanned {
            Some(all) => (all.len() as u64, Some(all.values().map(|t| length(t)).sum::<i64>())),
            None => (docs, tokens),
        };
        // Each word's terms, as the store file's full-text index reads the word.
        let mut word_terms: Vec<(usize, String)> = Vec::new();
        for (i, word) in words.iter().enumerate() {
            for term in self.stage2_text_terms(word)? {
                word_terms.push((i, term));
            }
        }
        let distinct: BTreeSet<&str> = word_terms.iter().map(|(_, t)| t.as_str()).collect();
        let distinct: Vec<&str> = distinct.into_iter().collect();
        let matches = match &scanned {
            Some(all) => scanned_matches(all, &distinct, after),
            None => self.term_matches(&distinct, after)?,
        };
        // (documents holding the term, the word): rarest first when capped, else by word.
        let capped = after < 0;
        let mut counted: Vec<(u64, &str, &str)> = word_terms
            .iter()
            .map(|(i, term)| {
                let df = if capped { matches.get(term).map_or(0, |m| m.0) } else { 0 };
                (df, words[*i].as_str(), term.as_str())
            })
            .collect();
        counted.sort_unstable();
        counted.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        let mut matching = 0;
        let mut kept: Vec<&str> = Vec::new();
        for (i, (df, _, term)) in counted.into_iter().enumerate() {
            matching += df;
            if i > 0 && matching > MAX_MATCHING_DOCS {
                break;
            }
            kept.push(term);
        }
        let candidates: BTreeSet<i64> = kept
            .iter()
            .filter_map(|t| matches.get(*t))
            .flat_map(|(_, above)| above.iter().copied())
            .collect();
        let avg_len = if docs > 0 { tokens.unwrap_or(0) as f64 / docs as f64 } else { 0.0 };
        let bm25 = Bm25::FTS5;
        let idf: Vec<f64> =
            kept.iter().map(|t| bm25.idf(docs, matches.get(*t).map_or(0, |m| m.0))).collect();
        let mut hits: Vec<(i64, f64)> = Vec::with_capacity(candidates.len());
        let candidates: Vec<i64> = candidates.into_iter().collect();
        // Every page's read in one round trip.
        let doc_terms = self.stage2_key("doc_terms");
        let mut pipe = redis::pipe();
        for page in candidates.chunks(READ_PAGE) {
            pipe.cmd("HMGET").arg(&doc_terms).arg(page);
        }
        let pages: Vec<Vec<Option<String>>> = if candidates.is_empty() {
            Vec::new()
        } else {
            pipe.query(&mut *self.raw.borrow_mut()).map_err(|e| raw_remote(&self.url, &e))?
        };
        for (page, bodies) in candidates.chunks(READ_PAGE).zip(pages) {
            for (nid, body) in page.iter().zip(bodies) {
                // A document deleted since the index answered has no terms and drops out.
                let Some(body) = body else { continue };
                // Only the question's terms are counted; every term counts in the length.
                let mut tf: BTreeMap<&str, u32> = BTreeMap::new();
                let mut len = 0_u32;
                for term in body.split(' ').filter(|t| !t.is_empty()) {
                    len = len.saturating_add(1);
                    if kept.contains(&term) {
                        *tf.entry(term).or_default() += 1;
                    }
                }
                let score = fts5_score(bm25, &kept, &idf, &tf, len, avg_len);
                if score > 0.0 {
                    hits.push((*nid, score));
                }
            }
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(limit);
        Ok(hits)
    }

    /// For each of `terms`: how many documents hold it, and those above `after`; one query.
    fn term_matches(
        &self,
        terms: &[&str],
        after: i64,
    ) -> Result<BTreeMap<String, (u64, Vec<i64>)>, StoreError> {
        if terms.is_empty() {
            return Ok(BTreeMap::new());
        }
        let queries: Vec<FalkorValue> =
            terms.iter().map(|t| FalkorValue::Array(vec![s(t), s(&escaped(t))])).collect();
        let rows = self.run_read(
            &format!(
                "UNWIND $terms AS t CALL db.idx.fulltext.queryNodes('{TEXT_LABEL}', t[1]) \
                 YIELD node WITH t[0] AS term, collect(node.nid) AS nids \
                 RETURN term, size(nids), [n IN nids WHERE n > $after]"
            ),
            &[("terms", FalkorValue::Array(queries)), ("after", int(after))],
        )?;
        let mut out = BTreeMap::new();
        for r in &rows {
            let term = text_at(r, 0, &self.url)?;
            let df = u64::try_from(int_at(r, 1, &self.url)?).unwrap_or(0);
            let Some(FalkorValue::Array(above)) = r.get(2) else {
                return Err(odd(&self.url, "a list of document numbers"));
            };
            let above = above
                .iter()
                .map(|v| int_at(std::slice::from_ref(v), 0, &self.url))
                .collect::<Result<Vec<i64>, StoreError>>()?;
            out.insert(term, (df, above));
        }
        Ok(out)
    }
}

/// [`FalkorGraph::term_matches`] over the documents `all` (number → terms) read from the
/// store: for each of `terms`, how many documents hold it, and those above `after`.
fn scanned_matches(
    all: &BTreeMap<i64, String>,
    terms: &[&str],
    after: i64,
) -> BTreeMap<String, (u64, Vec<i64>)> {
    let mut out: BTreeMap<String, (u64, Vec<i64>)> = BTreeMap::new();
    for (nid, body) in all {
        let held: BTreeSet<&str> = body.split(' ').filter(|t| !t.is_empty()).collect();
        for term in terms.iter().filter(|t| held.contains(**t)) {
            let entry = out.entry((*term).to_owned()).or_default();
            entry.0 += 1;
            if *nid > after {
                entry.1.push(*nid);
            }
        }
    }
    out
}

/// A document's score for the phrases `kept` (one term each, with their `idf`), in FTS5's
/// `bm25()` order of operations, so the store file's scores come out bit for bit:
/// `Σ idf·((tf·(k1 + 1)) / (tf + k1·(1 − b + b·len / avg_len)))`.
fn fts5_score(
    bm25: Bm25,
    kept: &[&str],
    idf: &[f64],
    tf: &BTreeMap<&str, u32>,
    len: u32,
    avg_len: f64,
) -> f64 {
    let mut score = 0.0;
    for (term, idf) in kept.iter().zip(idf) {
        let f = f64::from(tf.get(term).copied().unwrap_or(0));
        // `idf × (tf·(k1 + 1) / (…))`: the quotient first, as FTS5 groups it (multiplying by
        // the idf before dividing rounds differently in the last bit).
        score += idf
            * ((f * (bm25.k1 + 1.0))
                / (f + bm25.k1 * (1.0 - bm25.b + bm25.b * f64::from(len) / avg_len)));
    }
    score
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_character_but_letters_and_digits_is_escaped() {
        assert_eq!(escaped("deploy42"), "deploy42");
        assert_eq!(escaped("naïve"), "naïve");
        assert_eq!(escaped("@terms:x"), "\\@terms\\:x");
        assert_eq!(escaped("a|b -c *\"{}"), "a\\|b\\ \\-c\\ \\*\\\"\\{\\}");
        assert_eq!(escaped("\\"), "\\\\");
    }

    #[test]
    fn scanned_matches_count_every_holder_and_list_those_above() {
        let all: BTreeMap<i64, String> =
            [(1, "run fail".to_owned()), (4, "run run".to_owned()), (7, "deploy".to_owned())]
                .into();
        let m = scanned_matches(&all, &["run", "deploy", "absent"], 1);
        assert_eq!(m.get("run"), Some(&(2, vec![4])));
        assert_eq!(m.get("deploy"), Some(&(1, vec![7])));
        assert_eq!(m.get("absent"), None);
    }

    #[test]
    fn the_score_divides_before_it_multiplies_by_the_idf_as_fts5_does() {
        // Values where the two groupings round apart: FTS5's is the quotient first.
        let tf: BTreeMap<&str, u32> = [("run", 1)].into();
        let score = fts5_score(Bm25::FTS5, &["run"], &[0.15000000000000002], &tf, 1, 7.3);
        assert_eq!(score, 0.23185755534167474);
    }

    #[test]
    fn a_documents_length_counts_its_terms() {
        assert_eq!(length("a b  a"), 3);
        assert_eq!(length(""), 0);
    }

    #[test]
    fn a_term_the_document_lacks_adds_nothing() {
        let tf: BTreeMap<&str, u32> = [("run", 2)].into();
        let one = fts5_score(Bm25::FTS5, &["run"], &[1.5], &tf, 4, 3.0);
        let two = fts5_score(Bm25::FTS5, &["run", "fail"], &[1.5, 2.0], &tf, 4, 3.0);
        assert!(one > 0.0);
        assert_eq!(one, two);
    }
}
