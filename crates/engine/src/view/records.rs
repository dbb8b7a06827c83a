//! Reads of the records that carry no scope of their own: facts, documents, types, slots,
//! checklists and goals are the tenant's shared knowledge, written by a principal with the
//! writer role, and every principal of the tenant reads them as written. Entity-resolution
//! candidates are different: they name entities, which are derived, so a pair is listed only
//! when the principal may see both entities.

use super::Reader;
use crate::error::Error;
use crate::knowledge::{Contradiction, DocumentSummary, DocumentView, FactQuery, FactView};
use crate::resolve::{Candidate, CandidateStatus};
use crate::slots::{CheckReport, Checklist, Goal, NextReport, SlotFill, TypeInfo};

impl Reader<'_> {
    /// Facts matching `query` (see [`FactQuery`]).
    pub fn facts(&self, query: &FactQuery) -> Result<Vec<FactView>, Error> {
        self.snap.facts(query)
    }

    /// Facts that contradict each other at `as_of` (now when `None`).
    pub fn contradictions(&self, as_of: Option<&str>) -> Result<Vec<Contradiction>, Error> {
        self.snap.contradictions(as_of)
    }

    /// Every document, newest version of each.
    pub fn documents(&self) -> Result<Vec<DocumentSummary>, Error> {
        self.snap.documents()
    }

    /// One document by id or URL, with its sections and sentences.
    pub fn document(&self, id_or_url: &str) -> Result<Option<DocumentView>, Error> {
        self.snap.document(id_or_url)
    }

    /// The declared types.
    pub fn types(&self) -> Result<Vec<TypeInfo>, Error> {
        self.snap.types()
    }

    /// The types an entity is asserted to be, with their sources.
    pub fn types_of(&self, entity_id: &str) -> Result<Vec<(String, String)>, Error> {
        self.snap.types_of(entity_id)
    }

    /// The slot values of an entity.
    pub fn slots_of(&self, entity_id: &str) -> Result<Vec<SlotFill>, Error> {
        self.snap.slots_of(entity_id)
    }

    /// Every checklist.
    pub fn checklists(&self) -> Result<Vec<Checklist>, Error> {
        self.snap.checklists()
    }

    /// One checklist by name.
    pub fn checklist(&self, name: &str) -> Result<Option<Checklist>, Error> {
        self.snap.checklist(name)
    }

    /// Goals, of one user or all.
    pub fn goals(&self, user: Option<&str>) -> Result<Vec<Goal>, Error> {
        self.snap.goals(user)
    }

    /// Which of a checklist's slots an entity fills.
    pub fn check_checklist(&self, name: &str, entity_id: &str) -> Result<CheckReport, Error> {
        self.snap.check_checklist(name, entity_id)
    }

    /// The next question of a checklist over `candidates`, with each slot's gain.
    pub fn next_slot(&self, name: &str, candidates: &[String]) -> Result<NextReport, Error> {
        self.snap.next_slot(name, candidates)
    }

    /// `SAME_AS` pairs of entity resolution (see the snapshot's listing), only those whose two
    /// entities the principal may see; the limit applies after filtering.
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
            let entity = |id: &str| ctxgraph_ontology::graph::NodeKey::new("Entity", id);
            if self.node(&entity(&c.a.id))?.is_some() && self.node(&entity(&c.b.id))?.is_some() {
                out.push(c);
                if out.len() == limit {
                    break;
                }
            }
        }
        Ok(out)
    }
}
