//! Reads of the records that carry no scope of their own: facts, documents and checklists are
//! the tenant's shared knowledge, written by a principal with the writer role, and every
//! principal of the tenant reads them as written. (What names entities, such as slot values,
//! instances, goals and resolution candidates, is in `tools.rs`.)

use super::Reader;
use crate::error::Error;
use crate::knowledge::{Contradiction, DocumentSummary, DocumentView, FactQuery, FactView};
use crate::slots::Checklist;

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

    /// A document by id, or a URL's latest version.
    pub fn document(&self, id_or_url: &str) -> Result<Option<DocumentView>, Error> {
        self.snap.document(id_or_url)
    }

    /// The defined checklists.
    pub fn checklists(&self) -> Result<Vec<Checklist>, Error> {
        self.snap.checklists()
    }

    /// One checklist by name.
    pub fn checklist(&self, name: &str) -> Result<Option<Checklist>, Error> {
        self.snap.checklist(name)
    }
}
