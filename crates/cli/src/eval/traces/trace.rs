//! The generated trace as the ground truth reads it: each event's structure (ids, session,
//! agent, user, tool, status, causal parent, time) and the entities it references, indexed by
//! session and by causal parent.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Context;
use ctxgraph_ontology::{Limits, RecordBody, Schema, entity_id, validate_value};
use serde_json::Value;

/// An entity an event references, as the projection writes the REFERENCES edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Referenced {
    /// The Entity node's id (`{type}:{normalised name}`).
    pub(crate) id: String,
    /// Its entity type.
    pub(crate) entity_type: String,
    /// The name as the event writes it (the first spelling, when several map to one id).
    pub(crate) name: String,
}

/// One event of the trace, reduced to what the questions need.
#[derive(Debug, Clone)]
pub(crate) struct TraceEvent {
    pub(crate) id: String,
    pub(crate) event_type: String,
    pub(crate) occurred_at: String,
    pub(crate) occurred_at_ns: i64,
    pub(crate) session: String,
    pub(crate) agent: String,
    pub(crate) user: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) status: Option<String>,
    /// The payload's `error` text, when it has one.
    pub(crate) error: Option<String>,
    /// The payload's `text` (a message, a request), when it has one.
    pub(crate) text: Option<String>,
    /// Every entity it references, each id once, in the projection's order.
    pub(crate) entities: Vec<Referenced>,
}

impl TraceEvent {
    pub(crate) fn failed(&self) -> bool {
        self.status.as_deref() == Some("failed")
    }

    /// Names of the referenced entities of one type, in order.
    pub(crate) fn named(&self, entity_type: &str) -> impl Iterator<Item = &Referenced> {
        self.entities.iter().filter(move |r| r.entity_type == entity_type)
    }
}

/// The whole trace, indexed.
#[derive(Debug)]
pub(crate) struct Trace {
    schema: Schema,
    limits: Limits,
    /// In generation order.
    pub(crate) events: Vec<TraceEvent>,
    ids: BTreeSet<String>,
    /// Session id → its events in time order (`occurred_at`, then id).
    pub(crate) sessions: BTreeMap<String, Vec<usize>>,
    /// Event id → the events whose causal parent it is, in generation order.
    children: BTreeMap<String, Vec<usize>>,
}

impl Trace {
    pub(crate) fn new() -> anyhow::Result<Trace> {
        Ok(Trace {
            schema: Schema::core().context("loading the core schema")?,
            limits: Limits::default(),
            events: Vec::new(),
            ids: BTreeSet::new(),
            sessions: BTreeMap::new(),
            children: BTreeMap::new(),
        })
    }

    /// Add one generated event: validated as ingestion validates it, and its references listed by
    /// the projection's own rule (`ctxgraph_projection::mentions`).
    pub(crate) fn push(&mut self, event: Value) -> anyhow::Result<()> {
        let error = event
            .get("payload")
            .and_then(|p| p.get("error"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let text = event
            .get("payload")
            .and_then(|p| p.get("text"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let valid = validate_value(&self.schema, &self.limits, event)
            .map_err(|e| anyhow::anyhow!("a generated event is not valid: {e}"))?;
        let RecordBody::Event(e) = valid.body() else {
            anyhow::bail!("the generator wrote a {} record, not an event", valid.kind().as_str());
        };
        let mut entities: Vec<Referenced> = Vec::new();
        for m in ctxgraph_projection::mentions(e) {
            let id = entity_id(m.entity_type, m.name);
            if !entities.iter().any(|r| r.id == id) {
                entities.push(Referenced {
                    id,
                    entity_type: m.entity_type.to_owned(),
                    name: m.name.to_owned(),
                });
            }
        }
        let index = self.events.len();
        if !self.ids.insert(e.event_id.clone()) {
            anyhow::bail!("the generator wrote event {} twice", e.event_id);
        }
        self.sessions.entry(e.session_id.clone()).or_default().push(index);
        if let Some(parent) = &e.parent_event_id {
            self.children.entry(parent.clone()).or_default().push(index);
        }
        self.events.push(TraceEvent {
            id: e.event_id.clone(),
            event_type: e.event_type.clone(),
            occurred_at: e.occurred_at.clone(),
            occurred_at_ns: e.occurred_at_ns,
            session: e.session_id.clone(),
            agent: e.agent_id.clone(),
            user: e.user_id.clone(),
            tool: e.tool_name.clone(),
            status: e.status.clone(),
            error,
            text,
            entities,
        });
        Ok(())
    }

    /// Put every session in time order; call once all events are in.
    pub(crate) fn finish(&mut self) {
        let events = &self.events;
        for list in self.sessions.values_mut() {
            list.sort_by(|a, b| {
                (events[*a].occurred_at_ns, &events[*a].id)
                    .cmp(&(events[*b].occurred_at_ns, &events[*b].id))
            });
        }
    }

    /// A session's events in time order.
    pub(crate) fn session(&self, id: &str) -> impl Iterator<Item = &TraceEvent> {
        self.sessions.get(id).into_iter().flatten().map(|i| &self.events[*i])
    }

    /// The events whose causal parent is `id`.
    pub(crate) fn children(&self, id: &str) -> impl Iterator<Item = &TraceEvent> {
        self.children.get(id).into_iter().flatten().map(|i| &self.events[*i])
    }
}
