//! Anchors: the nodes, sessions and traces a question names by id, found by exact lookup.
//!
//! An id is not a word: "sess-23-1457" split into BM25 terms matches every session, and an
//! event's UUID matches nothing useful. So every token of the question that could be an id is
//! looked up, in one store query per label, among the ids of the node labels an agent names
//! (events, memories, facts, receipts, documents, summaries) and among session ids. What is found
//! seeds the expansion with top relevance, and its tokens leave the BM25 words. Entities are
//! found by name elsewhere (`entity_matches`), since people name them in words.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ctxgraph_ontology::graph::{Direction, Edge, Node, NodeKey};
use ctxgraph_store::ManyRead;

use crate::error::Error;
use crate::view::Snapshot;

/// Labels whose ids a question may name.
const LABELS: &[&str] = &["Event", "Memory", "Fact", "DecisionReceipt", "Document", "Summary"];
/// Events of a named session or trace read to find one the caller may see (past them, the
/// session or trace is taken as hidden: bounded work, and nothing hidden is hinted at).
const VISIBLE_PROBE: usize = 64;
/// Most tokens of one question looked up (a question naming more ids than this is not asking
/// about each of them, and the lookup must stay bounded however long the question is).
const MAX_TOKENS: usize = 32;

/// What a question names exactly.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Anchors {
    /// Nodes named by id, in the order the question names them.
    pub(crate) nodes: Vec<NodeKey>,
    /// Sessions named by id, in the order the question names them.
    pub(crate) sessions: Vec<String>,
    /// Traces named by id (a run, a conversation), in the order the question names them.
    pub(crate) traces: Vec<String>,
    /// The lower-case content words of the tokens found: not BM25 words.
    pub(crate) words: BTreeSet<String>,
    /// The nodes read to find them and the entities found (`None`: no such node), handed on
    /// so that recall does not read them again.
    pub(crate) read: BTreeMap<NodeKey, Option<Arc<Node>>>,
    /// Which of the candidate entity ids given exist, in the order given (read with the
    /// anchors, for recall's entity list).
    pub(crate) entities: Vec<String>,
    /// Sessions named by a token, with their first events as deep as recall's scope list
    /// reads them (on a store whose reads are round trips only), in session order.
    pub(crate) runs: BTreeMap<String, Vec<NodeKey>>,
    /// The REFERENCES out of the events of `runs`, read with them when the question names an
    /// entity too (recall then reads them to place the entity in the session, or for the scope
    /// list's named things), on a store whose reads are round trips only.
    pub(crate) refs: BTreeMap<NodeKey, Vec<Edge>>,
}

impl Anchors {
    /// Whether the question names nothing exactly.
    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.sessions.is_empty() && self.traces.is_empty()
    }
}

/// The tokens of `text` that could be ids: whitespace-separated, stripped of the punctuation
/// around them (quotes, brackets, a trailing `?`, `.`, `,`, a possessive `'s`), at least two
/// characters, and holding a digit or one of `-`, `_`, `:`, `.`, `/` (plain words are names,
/// which entity lookup handles). Each distinct token once, in order.
pub(crate) fn id_tokens(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for raw in text.split_whitespace() {
        let token = raw.trim_matches(|c: char| {
            matches!(c, '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>')
                || matches!(c, '?' | '!' | ',' | ';' | '.' | ':')
        });
        let token = token.strip_suffix("'s").unwrap_or(token);
        let id_like =
            token.chars().any(|c| c.is_ascii_digit() || matches!(c, '-' | '_' | ':' | '.' | '/'));
        if token.chars().count() >= 2 && id_like && !out.contains(&token) {
            out.push(token);
            if out.len() == MAX_TOKENS {
                break;
            }
        }
    }
    out
}

impl Snapshot<'_> {
    /// The anchors of `text` that `who` may see: its id-like tokens that are ids of visible
    /// nodes of [`LABELS`], or of sessions and traces with a visible event among their first
    /// `VISIBLE_PROBE`. What the caller may not see is no anchor, and its words stay BM25 words,
    /// so the answer is the same as if it did not exist.
    pub(crate) fn anchors(
        &self,
        text: &str,
        who: &crate::view::Reader<'_>,
        entity_ids: &[String],
        scope_events: usize,
    ) -> Result<Anchors, Error> {
        let tokens = id_tokens(text);
        let ids: Vec<String> = tokens.iter().map(|t| (*t).to_owned()).collect();
        let mut anchors = Anchors::default();
        // Which candidate entity ids exist, which tokens are ids of which labels, and each
        // token's session and trace probes: reads that do not depend on each other, sent
        // together (a store whose reads are round trips pays one, not one each).
        // On a store whose reads are round trips, a named session's events are read as deep
        // as recall's scope list reads them, and with the anchors' nodes (the scope list then
        // reads neither); the embedded store reads what it read before.
        let speculate = self.read.batch_reads_pay();
        let probe = if speculate { scope_events.max(VISIBLE_PROBE) } else { VISIBLE_PROBE };
        let mut reads = vec![ManyRead::ExistingIds { label: "Entity", ids: entity_ids }];
        if !tokens.is_empty() {
            reads.extend([
                ManyRead::ExistingIdsByLabel { labels: LABELS, ids: &ids },
                ManyRead::SessionEvents { ids: &ids, limit: probe },
                ManyRead::TraceEvents { ids: &ids, limit: VISIBLE_PROBE },
            ]);
        }
        let mut answers = self.read.read_together(&reads)?.into_iter();
        let mut answer = || super::answered(answers.next());
        anchors.entities = answer()?.into_ids()?;
        let entities: Vec<NodeKey> =
            anchors.entities.iter().map(|id| NodeKey::new("Entity", id)).collect();
        if tokens.is_empty() {
            if !entities.is_empty() {
                let nodes = self.nodes_shared(&entities)?;
                anchors.read.extend(entities.into_iter().zip(nodes));
            }
            return Ok(anchors);
        }
        let by_label = answer()?.into_ids_by_label()?;
        let mut sessions: Vec<Vec<String>> = answer()?
            .into_slots()?
            .into_iter()
            .map(|slots| slots.into_iter().map(|slot| slot.event_id).collect())
            .collect();
        // The sessions read deeper than the probe: kept whole for the scope list, cut to the
        // probe here.
        let mut runs: Vec<NodeKey> = Vec::new();
        if probe > VISIBLE_PROBE {
            for (token, events) in tokens.iter().zip(&mut sessions) {
                if !events.is_empty() {
                    let run: Vec<NodeKey> =
                        events.iter().map(|id| NodeKey::new("Event", id)).collect();
                    runs.extend(run.iter().cloned());
                    anchors.runs.insert((*token).to_owned(), run);
                    events.truncate(VISIBLE_PROBE);
                }
            }
        }
        let traces = answer()?.into_trace_events()?;
        let mut found: BTreeSet<&str> = BTreeSet::new();
        let visible = |key: &NodeKey| -> Result<bool, Error> {
            match self.read.node(key)? {
                Some(n) => who.may_see(&n),
                None => Ok(false),
            }
        };
        let mut existing: Vec<NodeKey> = Vec::new();
        for (label, ids) in LABELS.iter().zip(by_label) {
            let ids: BTreeSet<String> = ids.into_iter().collect();
            existing.extend(
                tokens.iter().filter(|t| ids.contains(**t)).map(|t| NodeKey::new(*label, *t)),
            );
        }
        // The first event of every probe, which is always looked at.
        let firsts: Vec<NodeKey> = sessions
            .iter()
            .chain(&traces)
            .filter_map(|events| events.first())
            .map(|id| NodeKey::new("Event", id))
            .collect::<BTreeSet<NodeKey>>()
            .into_iter()
            .collect();
        // The nodes found, the probes' first events, the entities found and the events of the
        // runs read whole, in one read (those the engine's cache holds at this view's node
        // generation are not read again).
        let wanted: Vec<NodeKey> =
            existing.iter().chain(&firsts).chain(&entities).chain(&runs).cloned().collect();
        // With a named entity, the runs' references too, in the same round trip.
        let refs = !runs.is_empty() && !entities.is_empty();
        let others = [ManyRead::EdgesOf {
            keys: &runs,
            edge_type: Some("REFERENCES"),
            direction: Direction::Out,
        }];
        let (nodes, answers) = self.nodes_with(&wanted, if refs { &others } else { &[] })?;
        let mut nodes = nodes.into_iter();
        if refs {
            let edges = super::answered(answers.into_iter().next())?.into_edges()?;
            anchors.refs = runs.iter().cloned().zip(edges).collect();
        }
        for key in existing {
            let node = nodes.next().flatten();
            if let Some(n) = &node
                && who.may_see(n)?
            {
                found.insert(tokens.iter().find(|t| **t == key.id).copied().unwrap_or_default());
                anchors.nodes.push(key.clone());
            }
            anchors.read.insert(key, node);
        }
        let read: BTreeMap<NodeKey, Option<Arc<Node>>> =
            firsts.into_iter().map(|key| (key, nodes.next().flatten())).collect();
        let entity_nodes: Vec<(NodeKey, Option<Arc<Node>>)> =
            entities.into_iter().chain(runs).map(|key| (key, nodes.next().flatten())).collect();
        let any_visible = |events: &[String]| -> Result<bool, Error> {
            for id in events {
                let key = NodeKey::new("Event", id);
                let seen = match read.get(&key) {
                    Some(Some(n)) => who.may_see(n)?,
                    Some(None) => false,
                    None => visible(&key)?,
                };
                if seen {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        for ((token, session), trace) in tokens.iter().zip(&sessions).zip(&traces) {
            if any_visible(session)? {
                anchors.sessions.push((*token).to_owned());
                found.insert(token);
            }
            if any_visible(trace)? {
                anchors.traces.push((*token).to_owned());
                found.insert(token);
            }
        }
        anchors.read.extend(read);
        anchors.read.extend(entity_nodes);
        // Keep the question's order of mention.
        anchors.nodes.sort_by_key(|k| tokens.iter().position(|t| *t == k.id));
        for token in found {
            anchors.words.extend(super::content_words(token));
        }
        Ok(anchors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_tokens_keep_ids_and_drop_words() {
        let q = "Who was involved in event 8a7940b6-f8e8-c495-b179-542341252249? And sess-23-1457's end.";
        assert_eq!(id_tokens(q), vec!["8a7940b6-f8e8-c495-b179-542341252249", "sess-23-1457"]);
        assert_eq!(
            id_tokens("What happened after the pytest.run call evt-000080 failed?"),
            vec!["pytest.run", "evt-000080"]
        );
        assert_eq!(id_tokens("(day:2026-11-16)"), vec!["day:2026-11-16"]);
        assert!(id_tokens("why did the deploy fail").is_empty());
    }

    #[test]
    fn id_tokens_are_bounded_and_distinct() {
        let q = (0..100).map(|i| format!("e-{i} e-{i}")).collect::<Vec<_>>().join(" ");
        let tokens = id_tokens(&q);
        assert_eq!(tokens.len(), MAX_TOKENS);
        assert_eq!(tokens[1], "e-1");
    }
}
