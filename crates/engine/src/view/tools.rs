//! The reads that name entities, behind the knowledge tools of the interfaces: types with
//! their instances, slot values, goals, checklist checks and questions, entity-resolution
//! candidates, and a link's state for a vote. What names an entity is kept only when the
//! principal may see the entity, and a question about a hidden entity is answered as about an
//! unknown one. (Records without scope of their own are in `records.rs`.)

use ctxgraph_ontology::graph::{Direction, NodeKey};
use ctxgraph_projection::MEMORY;
use serde_json::Value;

use super::Reader;
use crate::error::Error;
use crate::resolve::{Candidate, CandidateStatus};
use crate::slots::{
    CheckReport, EVIDENCE_PER_ANSWER, Goal, NextOptions, NextReport, SlotFill, TypeInfo,
};

/// Where a link between two memories stands, for a vote on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkLookup {
    /// The link exists from `from` to `to` and no vote deleted it (it may have decayed).
    Found,
    /// It existed and a vote deleted it.
    Deleted,
    /// No such link from `from` to `to`, but there is one from `to` to `from`.
    Reversed,
    /// No such link either way.
    Missing,
    /// `from` or `to` is not a memory the principal may see.
    UnknownMemory,
}

impl Reader<'_> {
    /// Whether a link of `link_type` (any case, e.g. `implements`) runs from one visible memory
    /// to another, for a vote on it: an automatic link that decayed below the pruning threshold
    /// still counts, since a vote is about the link, not about its current strength.
    pub fn memory_link(&self, from: &str, to: &str, link_type: &str) -> Result<LinkLookup, Error> {
        if self.memory(from)?.is_none() || self.memory(to)?.is_none() {
            return Ok(LinkLookup::UnknownMemory);
        }
        let edge_type = link_type.trim().to_ascii_uppercase();
        let runs = |a: &str, b: &str| -> Result<bool, Error> {
            Ok(self
                .snap
                .read
                .edges_of(&NodeKey::new(MEMORY, a), Some(&edge_type), Direction::Out)?
                .iter()
                .any(|e| e.key.to.label == MEMORY && e.key.to.id == b))
        };
        if !runs(from, to)? {
            return Ok(if runs(to, from)? { LinkLookup::Reversed } else { LinkLookup::Missing });
        }
        let votes = crate::memory::votes_of(&*self.snap.read, &NodeKey::new(MEMORY, from))?;
        let deleted = votes
            .get(&(from.to_owned(), to.to_owned(), edge_type))
            .is_some_and(|v| v.props.get("deleted").and_then(Value::as_bool).unwrap_or(false));
        Ok(if deleted { LinkLookup::Deleted } else { LinkLookup::Found })
    }

    /// Whether the entity exists and the principal may see it.
    pub fn sees_entity(&self, entity_id: &str) -> Result<bool, Error> {
        Ok(self.node(&NodeKey::new("Entity", entity_id))?.is_some())
    }

    /// The declared types, each with its visible instances only.
    pub fn types(&self) -> Result<Vec<TypeInfo>, Error> {
        let mut out = Vec::new();
        for mut t in self.snap.types()? {
            let mut instances = Vec::new();
            for id in t.instances {
                if self.sees_entity(&id)? {
                    instances.push(id);
                }
            }
            t.instances = instances;
            out.push(t);
        }
        Ok(out)
    }

    /// A visible entity's slot values and types (id, name); `None` when it is hidden or unknown.
    #[allow(clippy::type_complexity)]
    pub fn slots_of(
        &self,
        entity_id: &str,
    ) -> Result<Option<(Vec<SlotFill>, Vec<(String, String)>)>, Error> {
        if !self.sees_entity(entity_id)? {
            return Ok(None);
        }
        Ok(Some((self.snap.slots_of(entity_id)?, self.snap.types_of(entity_id)?)))
    }

    /// The types a visible entity is asserted to be, with their sources (none for a hidden
    /// one).
    pub fn types_of(&self, entity_id: &str) -> Result<Vec<(String, String)>, Error> {
        if !self.sees_entity(entity_id)? {
            return Ok(Vec::new());
        }
        self.snap.types_of(entity_id)
    }

    /// Goals, of one user or all, whose user the principal may see.
    pub fn goals(&self, user: Option<&str>) -> Result<Vec<Goal>, Error> {
        let mut out = Vec::new();
        for g in self.snap.goals(user)? {
            if self.sees_entity(&g.user_id)? {
                out.push(g);
            }
        }
        Ok(out)
    }

    /// A checklist checked against a visible entity; `None` when the entity is hidden or
    /// unknown.
    pub fn check_checklist(
        &self,
        name: &str,
        entity_id: &str,
    ) -> Result<Option<CheckReport>, Error> {
        // The owner is told why (an unknown entity is an error of the snapshot's read).
        if !self.who.is_owner() && !self.sees_entity(entity_id)? {
            return Ok(None);
        }
        self.snap.check_checklist(name, entity_id).map(Some)
    }

    /// The next slot to ask about over visible candidates, under the prior the visible goals
    /// give (of `options.user`, or every user's, that influence the checklist), with the visible
    /// facts and events that mention each answer (when `options.search`); `Err(id)` names the
    /// first candidate that is hidden or unknown.
    pub fn next_slot(
        &self,
        name: &str,
        candidates: &[String],
        options: &NextOptions,
    ) -> Result<Result<NextReport, String>, Error> {
        for c in candidates {
            if !self.who.is_owner() && !self.sees_entity(c)? {
                return Ok(Err(c.clone()));
            }
        }
        let goals = self.goals(options.user.as_deref())?;
        let mut evidence = |answer: &str| -> Result<Vec<String>, Error> {
            if !options.search {
                return Ok(Vec::new());
            }
            // Only what records say about the world: slot values, sentences and memories are
            // where the answers themselves are kept, not evidence of which one is meant.
            Ok(self
                .search(answer, EVIDENCE_PER_ANSWER * 4)?
                .into_iter()
                .filter(|(n, _)| matches!(n.key.label.as_str(), "Event" | "Fact"))
                .take(EVIDENCE_PER_ANSWER)
                .map(|(n, _)| n.key.id)
                .collect())
        };
        self.snap.next_slot(name, candidates, &goals, options.search_cost, &mut evidence).map(Ok)
    }

    /// The candidates consistent with known answers (those whose known slots agree with every known answer), over
    /// visible candidates; `Err(id)` names the first candidate that is hidden or unknown.
    #[allow(clippy::type_complexity)]
    pub fn filter_candidates(
        &self,
        name: &str,
        candidates: &[String],
        known: &[(String, String)],
    ) -> Result<Result<(Vec<String>, Vec<(String, String)>), String>, Error> {
        for c in candidates {
            if !self.who.is_owner() && !self.sees_entity(c)? {
                return Ok(Err(c.clone()));
            }
        }
        self.snap.filter_candidates(name, candidates, known).map(Ok)
    }

    /// Entity-resolution pairs whose two entities the principal may see, best first, at most
    /// `limit` (counted after filtering).
    pub fn entity_candidates(
        &self,
        status: Option<CandidateStatus>,
        limit: usize,
    ) -> Result<Vec<Candidate>, Error> {
        if self.who.is_owner() {
            return self.snap.entity_candidates(status, limit);
        }
        let mut out = Vec::new();
        for c in self.snap.entity_candidates(status, usize::MAX)? {
            if out.len() >= limit {
                break;
            }
            if self.sees_entity(&c.a.id)? && self.sees_entity(&c.b.id)? {
                out.push(c);
            }
        }
        Ok(out)
    }
}
