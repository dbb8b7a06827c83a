//! The question families of `eval traces`, each phrased several ways, with ground truth read off
//! the trace's structure (and off the decisions and facts written alongside it).
//!
//! Evidence is a set of node keys written `Label/id` (`Event/evt-000123`,
//! `Entity/service:orders-db`, `Memory/mem-…`, `Fact/…`): the label never holds a `/`, so a
//! script splits a key at its first one. Which cases are asked and how each is phrased is drawn
//! from the seed, so the same seed asks the same questions.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::knowledge::{Knowledge, MAX_FACTS_PER_SUBJECT};
use super::trace::{Trace, TraceEvent};

/// The families, in the order they are reported.
pub(crate) const FAMILIES: [&str; 10] = [
    "session_failure",
    "request_failure",
    "user_request",
    "after_failure",
    "who_involved",
    "outage",
    "when_did",
    "agent_activity",
    "decision",
    "fact",
];

/// Most evidence items a question may have: all of it must fit in the top 10.
const MAX_EVIDENCE: usize = 8;
/// Most failed events of a session (or of a session and service) asked about.
const MAX_FAILED: usize = 5;

const SESSION_FAILURE: &[&str] = &[
    "Why did session {session} fail?",
    "What went wrong in {session}?",
    "Which errors happened during {session}?",
    "{session} had problems: which steps failed?",
];
const REQUEST_FAILURE: &[&str] = &[
    "What went wrong when {user} asked: {request}",
    "{user} asked \"{request}\" - which steps failed?",
    "Which errors did {user} run into with the request {request}",
];
const USER_REQUEST: &[&str] = &[
    "What did {user} ask for in session {session}?",
    "What was the task in {session}?",
    "In {session}, what did {user} request?",
    "Which request started session {session}?",
];
const AFTER_FAILURE: &[&str] = &[
    "What happened after the {tool} call {event} failed?",
    "{event} failed: what came next?",
    "Which steps followed the failed {tool} call {event}?",
];
const WHO_INVOLVED: &[&str] = &[
    "Who was involved in event {event}?",
    "Which agents, users, tools and services took part in {event}?",
    "{event}: who and what did it involve?",
];
const OUTAGE: &[&str] = &[
    "Which tool calls failed contacting {service} in session {session}?",
    "In {session}, which calls to {service} failed?",
    "What failed when {session} talked to {service}?",
];
const WHEN_FIRST_FAILURE: &[&str] = &[
    "When did {agent} first fail in session {session}?",
    "At what time did {agent} hit its first failure in {session}?",
    "In {session}, when did {agent} fail for the first time?",
];
const WHEN_TOOL_FAILED: &[&str] = &[
    "When did the {tool} call in {session} fail?",
    "At what time did {tool} fail in session {session}?",
    "{session}: when did the {tool} call fail?",
];
const AGENT_ACTIVITY: &[&str] = &[
    "What did {agent} do in session {session}?",
    "Which steps did {agent} take during {session}?",
    "In {session}, what was {agent} doing?",
];
const DECISION: &[&str] = &[
    "What did we decide after {service} failed in session {session}?",
    "Which decision did {agent} make in {session} when the {tool} call to {service} failed?",
    "In {session}, {service} failed: what was decided?",
];
const FACT: &[&str] = &[
    "What do we know about {subject}?",
    "Which facts do we have on {subject}?",
    "Tell me what is recorded about {subject}.",
];

/// One question and the node keys that answer it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Question {
    pub(crate) family: &'static str,
    /// Which of the family's phrasings was used (an index into its list).
    pub(crate) phrasing: usize,
    pub(crate) text: String,
    /// What the question names: `session`, `event`, `agent`, `user`, `tool`, `service` or
    /// `subject`, with the value written in the text.
    pub(crate) anchors: Vec<(&'static str, String)>,
    /// Node keys, `Label/id`, sorted.
    pub(crate) evidence: Vec<String>,
}

/// A node key as `eval traces` writes it.
pub(crate) fn key(label: &str, id: &str) -> String {
    format!("{label}/{id}")
}

fn event_key(e: &TraceEvent) -> String {
    key("Event", &e.id)
}

/// A case a family can ask about: the phrasings, what fills their slots, and the evidence.
struct Case {
    templates: &'static [&'static str],
    slots: Vec<(&'static str, String)>,
    evidence: Vec<String>,
}

impl Case {
    fn new(
        templates: &'static [&'static str],
        slots: Vec<(&'static str, String)>,
        evidence: impl IntoIterator<Item = String>,
    ) -> Case {
        let mut evidence: Vec<String> = evidence.into_iter().collect();
        evidence.sort();
        evidence.dedup();
        Case { templates, slots, evidence }
    }

    fn phrase(&self, template: &str) -> String {
        self.slots.iter().fold(template.to_owned(), |text, (slot, value)| {
            text.replace(&format!("{{{slot}}}"), value)
        })
    }
}

/// Up to `per_family` questions of every family, sampled and phrased from `seed`.
pub(crate) fn questions(
    trace: &Trace,
    knowledge: &Knowledge,
    seed: u64,
    per_family: usize,
) -> Vec<Question> {
    let mut out = Vec::new();
    for (i, family) in FAMILIES.iter().enumerate() {
        let mut cases = match *family {
            "session_failure" => session_failure(trace),
            "request_failure" => request_failure(trace),
            "user_request" => user_request(trace),
            "after_failure" => after_failure(trace),
            "who_involved" => who_involved(trace),
            "outage" => outage(trace),
            "when_did" => when_did(trace),
            "agent_activity" => agent_activity(trace),
            "decision" => decision(knowledge),
            _ => fact(knowledge),
        };
        cases.retain(|c| (1..=MAX_EVIDENCE).contains(&c.evidence.len()));
        // Each family draws from its own stream, so one family's cases never shift another's.
        let stream = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = SmallRng::seed_from_u64(seed ^ stream);
        cases.shuffle(&mut rng);
        for case in cases.into_iter().take(per_family) {
            let phrasing = rng.random_range(0..case.templates.len());
            let template = case.templates[phrasing];
            let text = case.phrase(template);
            // A phrasing may leave a slot out ("What was the task in S?" names no user).
            let anchors = case
                .slots
                .into_iter()
                .filter(|(slot, _)| template.contains(&format!("{{{slot}}}")))
                .collect();
            out.push(Question { family, phrasing, text, anchors, evidence: case.evidence });
        }
    }
    out
}

/// Sessions with 1 to 5 failed events → those events.
fn session_failure(trace: &Trace) -> Vec<Case> {
    let mut cases = Vec::new();
    for s in trace.sessions.keys() {
        let failed: Vec<String> = trace.session(s).filter(|e| e.failed()).map(event_key).collect();
        if (1..=MAX_FAILED).contains(&failed.len()) {
            cases.push(Case::new(SESSION_FAILURE, vec![("session", s.clone())], failed));
        }
    }
    cases
}

/// Sessions with 1 to 5 failed events, asked about by their user and the words of their first
/// request (no session id) → those events.
fn request_failure(trace: &Trace) -> Vec<Case> {
    // A request asked in several sessions by the same user names none of them.
    let mut asked: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for s in trace.sessions.keys() {
        if let Some(first) = trace.session(s).find(|e| e.event_type == "observation.input")
            && let (Some(user), Some(text)) = (&first.user, &first.text)
        {
            *asked.entry((user.as_str(), text.as_str())).or_default() += 1;
        }
    }
    let mut cases = Vec::new();
    for s in trace.sessions.keys() {
        let failed: Vec<String> = trace.session(s).filter(|e| e.failed()).map(event_key).collect();
        if !(1..=MAX_FAILED).contains(&failed.len()) {
            continue;
        }
        let Some(first) = trace.session(s).find(|e| e.event_type == "observation.input") else {
            continue;
        };
        let (Some(user), Some(text)) = (&first.user, &first.text) else { continue };
        if asked.get(&(user.as_str(), text.as_str())) != Some(&1) {
            continue;
        }
        let slots = vec![("user", user.clone()), ("request", text.clone())];
        cases.push(Case::new(REQUEST_FAILURE, slots, failed));
    }
    cases
}

/// Sessions → their first `observation.input` event, the root request.
fn user_request(trace: &Trace) -> Vec<Case> {
    let mut cases = Vec::new();
    for s in trace.sessions.keys() {
        let Some(first) = trace.session(s).find(|e| e.event_type == "observation.input") else {
            continue;
        };
        let Some(user) = &first.user else { continue };
        let slots = vec![("session", s.clone()), ("user", user.clone())];
        cases.push(Case::new(USER_REQUEST, slots, [event_key(first)]));
    }
    cases
}

/// Failed tool calls with 1 to 5 consequences (CAUSED_BY children) → the consequences.
fn after_failure(trace: &Trace) -> Vec<Case> {
    let mut cases = Vec::new();
    for e in trace.events.iter().filter(|e| e.failed()) {
        let Some(tool) = &e.tool else { continue };
        let children: Vec<String> = trace.children(&e.id).map(event_key).collect();
        if (1..=MAX_FAILED).contains(&children.len()) {
            let slots = vec![("tool", tool.clone()), ("event", e.id.clone())];
            cases.push(Case::new(AFTER_FAILURE, slots, children));
        }
    }
    cases
}

/// Events referencing at least two entities → those entities.
fn who_involved(trace: &Trace) -> Vec<Case> {
    trace
        .events
        .iter()
        .filter(|e| e.entities.len() >= 2)
        .map(|e| {
            let entities = e.entities.iter().map(|r| key("Entity", &r.id));
            Case::new(WHO_INVOLVED, vec![("event", e.id.clone())], entities)
        })
        .collect()
}

/// (Session, service) pairs → the session's failed events that reference the service.
fn outage(trace: &Trace) -> Vec<Case> {
    let mut cases = Vec::new();
    for s in trace.sessions.keys() {
        // Service id → (name as first written, failed events referencing it).
        let mut by_service: BTreeMap<&str, (&str, Vec<String>)> = BTreeMap::new();
        for e in trace.session(s).filter(|e| e.failed()) {
            for service in e.named("service") {
                let entry = by_service.entry(&service.id).or_insert((&service.name, Vec::new()));
                entry.1.push(event_key(e));
            }
        }
        for (name, failed) in by_service.into_values() {
            if failed.len() <= MAX_FAILED {
                let slots = vec![("session", s.clone()), ("service", name.to_owned())];
                cases.push(Case::new(OUTAGE, slots, failed));
            }
        }
    }
    cases
}

/// An agent's first failure in a session, and a session's only failed call of a tool → that
/// event; cases whose answer would not be a single event are left out.
fn when_did(trace: &Trace) -> Vec<Case> {
    let mut cases = Vec::new();
    for s in trace.sessions.keys() {
        let mut by_agent: BTreeMap<&str, Vec<&TraceEvent>> = BTreeMap::new();
        let mut by_tool: BTreeMap<&str, Vec<&TraceEvent>> = BTreeMap::new();
        for e in trace.session(s).filter(|e| e.failed()) {
            by_agent.entry(&e.agent).or_default().push(e);
            if let Some(tool) = &e.tool {
                by_tool.entry(tool).or_default().push(e);
            }
        }
        for (agent, failed) in by_agent {
            // In time order: the first is unique unless the second happened at the same instant.
            if failed.get(1).is_some_and(|next| next.occurred_at_ns == failed[0].occurred_at_ns) {
                continue;
            }
            let slots = vec![("agent", agent.to_owned()), ("session", s.clone())];
            cases.push(Case::new(WHEN_FIRST_FAILURE, slots, [event_key(failed[0])]));
        }
        for (tool, failed) in by_tool {
            if let [only] = failed.as_slice() {
                let slots = vec![("tool", tool.to_owned()), ("session", s.clone())];
                cases.push(Case::new(WHEN_TOOL_FAILED, slots, [event_key(only)]));
            }
        }
    }
    cases
}

/// (Agent, session) pairs with 2 to 8 events → those events.
fn agent_activity(trace: &Trace) -> Vec<Case> {
    let mut cases = Vec::new();
    for s in trace.sessions.keys() {
        let mut by_agent: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for e in trace.session(s) {
            by_agent.entry(&e.agent).or_default().push(event_key(e));
        }
        for (agent, events) in by_agent {
            if events.len() >= 2 {
                let slots = vec![("agent", agent.to_owned()), ("session", s.clone())];
                cases.push(Case::new(AGENT_ACTIVITY, slots, events));
            }
        }
    }
    cases
}

/// Decisions written → their Memory node.
fn decision(knowledge: &Knowledge) -> Vec<Case> {
    knowledge
        .decisions
        .iter()
        .map(|d| {
            let slots = vec![
                ("session", d.session.clone()),
                ("service", d.service.clone()),
                ("tool", d.tool.clone()),
                ("agent", d.agent.clone()),
            ];
            Case::new(DECISION, slots, [key("Memory", d.record.id())])
        })
        .collect()
}

/// Fact subjects written → their Fact nodes.
fn fact(knowledge: &Knowledge) -> Vec<Case> {
    knowledge
        .facts
        .values()
        .filter(|claims| claims.len() <= MAX_FACTS_PER_SUBJECT)
        .filter_map(|claims| {
            let subject = &claims.first()?.subject;
            let facts = claims.iter().map(|c| key("Fact", &c.fact_id));
            Some(Case::new(FACT, vec![("subject", subject.name.clone())], facts))
        })
        .collect()
}
