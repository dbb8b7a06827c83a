//! Deterministic, realistic synthetic agent traces for ctxgraph's demo, tests and benchmarks.
//!
//! [`trace`] yields JSON event envelopes of multi-session AI-agent runs: users ask
//! for refunds, CI fixes, data reports, support answers, latency investigations,
//! migration reviews and research; agents plan with an LLM, call tools against
//! (fictional) services, hit timeouts and HTTP 503s, retry, delegate to other
//! agents and answer. Every event names its causal parent, its agent, its tool and
//! the services, resources and concepts it touches, so the trace exercises the
//! whole context graph.
//!
//! Output is a pure function of [`TraceConfig`]: the same config (seed included)
//! gives byte-identical JSON. Events stream from an iterator whose memory is
//! bounded by the handful of sessions open at once, so a million-event benchmark
//! costs no more memory than the 400-event demo.
//!
//! ```
//! let config = ctxgraph_synth::TraceConfig::default();
//! for event in ctxgraph_synth::trace(&config).take(3) {
//!     println!("{event}");
//! }
//! ```
//!
//! The committed demo trace (`examples/demo-trace.jsonl`) is the default config
//! written as JSON Lines by `ctxgraph generate --events 400 --seed 7`.
//!
//! [`shuffled_arrival`] reorders a finished trace the way a collector receives
//! it (children before parents now and then), for ingestion property tests.

mod arrival;
mod planner;
mod scenario;
mod schedule;
mod stamp;
mod text;
mod vocab;

use std::collections::VecDeque;
use std::iter::FusedIterator;

use chrono::{DateTime, FixedOffset, TimeDelta};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value};

pub use arrival::shuffled_arrival;

use planner::{Planner, Step};
use scenario::{Cast, MIX, Scenario, cast_role};
use schedule::{Arrivals, local_hour};
use text::{Carry, Ctx};

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceConfig {
    /// Seed of the random generator: same seed, same trace.
    pub seed: u64,
    /// Exact number of events the trace yields.
    pub events: usize,
    /// When the first session opens; later sessions spread over the following days.
    pub start: DateTime<FixedOffset>,
    /// How many distinct agents take part (at least one is always used).
    pub agents: usize,
    /// How many distinct users send requests (at least one is always used).
    pub users: usize,
    /// Probability that a tool call's first attempt fails (clamped to 0..=1).
    pub failure_rate: f64,
}

impl Default for TraceConfig {
    /// The demo trace: 400 events from five agents and twelve users, starting
    /// Monday 2026-11-16 08:00 UTC, with 15% of tool calls failing at first.
    fn default() -> TraceConfig {
        TraceConfig {
            seed: 7,
            events: 400,
            start: DateTime::UNIX_EPOCH.fixed_offset() + TimeDelta::seconds(DEMO_START_UNIX_S),
            agents: 5,
            users: 12,
            failure_rate: 0.15,
        }
    }
}

/// 2026-11-16T08:00:00+00:00 as Unix seconds; arithmetic instead of parsing keeps `default` infallible.
const DEMO_START_UNIX_S: i64 = 1_794_816_000;

/// UTC offsets of users, in seconds east: users live in a few time zones.
const USER_OFFSETS_S: [i32; 3] = [0, 3_600, -5 * 3_600];

/// Chance that a returning user follows up on the order or ticket of their previous session.
const RETURNING_SHARE: f64 = 0.35;

/// A streaming trace: an iterator over event envelopes in `occurred_at` order.
///
/// Yields exactly [`TraceConfig::events`] events. Sessions overlap in time and
/// are interleaved; the session open when the count is reached is cut short.
pub struct Trace {
    remaining: usize,
    failure_rate: f64,
    rng: SmallRng,
    agents: Vec<String>,
    users: usize,
    /// Last ids each user talked about, so a later session can pick them up again.
    memory: Vec<Option<Carry>>,
    arrivals: Arrivals,
    deck: Vec<Scenario>,
    open: Vec<Session>,
    next_event: u64,
    next_session: u64,
}

/// A session that has been planned and is being emitted.
struct Session {
    id: String,
    trace_id: String,
    user_id: String,
    steps: VecDeque<Step>,
    /// Global ids of the steps emitted so far, by position, to resolve parents.
    ids: Vec<String>,
}

/// Starts a trace for `config`.
pub fn trace(config: &TraceConfig) -> Trace {
    let mut rng = SmallRng::seed_from_u64(config.seed);
    let agents = (0..config.agents.max(1))
        .map(|i| match (vocab::AGENTS[i % vocab::AGENTS.len()], i / vocab::AGENTS.len()) {
            (base, 0) => base.to_owned(),
            (base, n) => format!("{base}-{}", n + 1),
        })
        .collect();
    let users = config.users.max(1);
    let failure_rate =
        if config.failure_rate.is_nan() { 0.0 } else { config.failure_rate.clamp(0.0, 1.0) };
    let arrivals = Arrivals::new(config.start, &mut rng);
    Trace {
        remaining: config.events,
        failure_rate,
        rng,
        agents,
        users,
        memory: vec![None; users.min(MAX_REMEMBERED_USERS)],
        arrivals,
        deck: Vec::with_capacity(MIX.len()),
        open: Vec::new(),
        next_event: 1,
        next_session: 1,
    }
}

/// Users beyond this many are not remembered between sessions, to keep memory bounded.
const MAX_REMEMBERED_USERS: usize = 4_096;

impl Trace {
    /// Deals scenarios from a shuffled deck, so even a short trace shows the whole mix.
    fn draw_scenario(&mut self) -> Scenario {
        if self.deck.is_empty() {
            self.deck.extend_from_slice(&MIX);
            self.deck.shuffle(&mut self.rng);
        }
        self.deck.pop().unwrap_or(Scenario::Refund)
    }

    /// Picks a user who is awake at `at`: requests come in during local working hours.
    fn pick_user(&mut self, at: &DateTime<FixedOffset>) -> usize {
        let mut user = 0;
        for _ in 0..8 {
            user = self.rng.random_range(0..self.users);
            if (7..20).contains(&local_hour(at, user_offset(user))) {
                break;
            }
        }
        user
    }

    fn open_session(&mut self) {
        let arrival = self.arrivals.next();
        self.arrivals.advance(&mut self.rng);
        let user = self.pick_user(&arrival);
        let offset = FixedOffset::east_opt(user_offset(user)).unwrap_or(*arrival.offset());
        let start = arrival.with_timezone(&offset);
        let returning = self.memory.get(user).cloned().flatten();
        let carry = returning.filter(|_| self.rng.random_bool(RETURNING_SHARE));
        let ctx = Ctx::new(&mut self.rng, &start, carry);
        let scenario = self.draw_scenario();
        let agents = self.agents.len();
        let lead =
            cast_role(scenario.leads(), agents, |k| self.rng.random_range(0..k)).unwrap_or(0);
        let helper = cast_role(scenario.helpers(), agents, |k| self.rng.random_range(0..k))
            .filter(|&h| h != lead);
        let user_id = format!("user-{:04}", user + 1);
        let cast = Cast { lead, helper, user: user_id.clone() };
        let mut planner = Planner::new(&mut self.rng, ctx, &self.agents, start, self.failure_rate);
        scenario.plan(&mut planner, &cast);
        let carry = scenario.remembers_customer().then(|| planner.ctx.carry());
        let steps = planner.into_steps();
        if let (Some(carry), Some(slot)) = (carry, self.memory.get_mut(user)) {
            *slot = Some(carry);
        }
        let n = self.next_session;
        self.next_session += 1;
        self.open.push(Session {
            id: format!("sess-{n:04}"),
            trace_id: format!("trace-{n:04}"),
            user_id,
            ids: Vec::with_capacity(steps.len()),
            steps: steps.into(),
        });
    }

    /// Turns the next step of open session `index` into an envelope.
    fn emit(&mut self, index: usize) -> Option<Value> {
        let session = self.open.get_mut(index)?;
        let step = session.steps.pop_front()?;
        let id = format!("evt-{:06}", self.next_event);
        self.next_event += 1;

        let mut event = Map::new();
        event.insert("event_id".into(), Value::String(id.clone()));
        event.insert("event_type".into(), Value::from(step.event_type));
        event.insert("occurred_at".into(), Value::String(stamp::rfc3339_millis(&step.at)));
        event.insert("session_id".into(), Value::String(session.id.clone()));
        let agent = self.agents.get(step.agent).map_or("agent", String::as_str);
        event.insert("agent_id".into(), Value::from(agent));
        event.insert("trace_id".into(), Value::String(session.trace_id.clone()));
        if let Some(parent) = step.parent.and_then(|p| session.ids.get(p)) {
            event.insert("parent_event_id".into(), Value::String(parent.clone()));
        }
        if let Some(tool) = step.tool {
            event.insert("tool_name".into(), Value::from(tool));
        }
        if step.user {
            event.insert("user_id".into(), Value::String(session.user_id.clone()));
        }
        if let Some(status) = step.status {
            event.insert("status".into(), Value::from(status.as_str()));
        }
        let mut payload = step.payload;
        if let Some(failed) = step.retry_of.and_then(|p| session.ids.get(p)) {
            payload.insert("retry_of".into(), Value::String(failed.clone()));
        }
        event.insert("payload".into(), Value::Object(payload));
        if !step.entities.is_empty() {
            let entities = step
                .entities
                .into_iter()
                .map(|e| {
                    let mut m = Map::new();
                    m.insert("name".into(), Value::String(e.name));
                    m.insert("entity_type".into(), Value::from(e.entity_type));
                    m.insert("role".into(), Value::from(e.role));
                    Value::Object(m)
                })
                .collect();
            event.insert("entities".into(), Value::Array(entities));
        }

        session.ids.push(id);
        if session.steps.is_empty() {
            self.open.remove(index);
        }
        Some(Value::Object(event))
    }
}

/// The UTC offset a user lives at.
fn user_offset(user: usize) -> i32 {
    USER_OFFSETS_S[user % USER_OFFSETS_S.len()]
}

impl Iterator for Trace {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        if self.remaining == 0 {
            return None;
        }
        loop {
            // The open session whose next step is earliest; ties go to the older session.
            let earliest = self
                .open
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.steps.front().map(|step| (step.at, i)))
                .min();
            match earliest {
                Some((at, index)) if at <= self.arrivals.next() => {
                    let event = self.emit(index);
                    if event.is_some() {
                        self.remaining -= 1;
                        return event;
                    }
                    // Unreachable in practice: open sessions always have a step left.
                    self.open.remove(index);
                }
                _ => self.open_session(),
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Trace {}

impl FusedIterator for Trace {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    const ALWAYS: [&str; 7] =
        ["event_id", "event_type", "occurred_at", "session_id", "agent_id", "trace_id", "payload"];
    const OPTIONAL: [&str; 5] = ["parent_event_id", "tool_name", "user_id", "status", "entities"];
    const EVENT_TYPES: [&str; 9] = [
        "session.start",
        "session.end",
        "observation.input",
        "observation.output",
        "agent.invoke",
        "agent.create",
        "llm.chat",
        "llm.embed",
        "tool.execute",
    ];
    const ENTITY_TYPES: [&str; 6] = ["agent", "user", "service", "tool", "resource", "concept"];
    const ROLES: [&str; 5] = ["agent", "instrument", "object", "result", "participant"];
    const STATUSES: [&str; 4] = ["pending", "running", "completed", "failed"];

    fn collect(config: &TraceConfig) -> Vec<Value> {
        trace(config).collect()
    }

    fn strings(config: &TraceConfig) -> Vec<String> {
        trace(config).map(|e| e.to_string()).collect()
    }

    fn at(event: &Value) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(event["occurred_at"].as_str().unwrap()).unwrap()
    }

    fn str_of<'a>(event: &'a Value, key: &str) -> &'a str {
        event[key].as_str().unwrap_or_else(|| panic!("{key} is not a string in {event}"))
    }

    fn has_null(value: &Value) -> bool {
        match value {
            Value::Null => true,
            Value::Array(items) => items.iter().any(has_null),
            Value::Object(map) => map.values().any(has_null),
            Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
        }
    }

    /// Checks every structural promise of the envelope on a whole trace.
    fn check(events: &[Value]) {
        let mut seen: BTreeMap<String, (String, usize)> = BTreeMap::new();
        let mut last_in_session: BTreeMap<String, DateTime<FixedOffset>> = BTreeMap::new();
        let mut previous: Option<DateTime<FixedOffset>> = None;
        for (pos, event) in events.iter().enumerate() {
            let object = event.as_object().unwrap();
            for key in ALWAYS {
                assert!(object.contains_key(key), "missing {key} in {event}");
            }
            for (key, value) in object {
                assert!(
                    ALWAYS.contains(&key.as_str()) || OPTIONAL.contains(&key.as_str()),
                    "unexpected key {key}"
                );
                assert!(!value.is_null(), "null {key} in {event}");
                if key != "payload" && key != "entities" {
                    assert!(value.is_string(), "{key} must be a string in {event}");
                }
            }
            let kind = str_of(event, "event_type");
            assert!(EVENT_TYPES.contains(&kind), "event type {kind}");
            assert!(event["payload"].is_object());
            assert_eq!(
                object.contains_key("tool_name"),
                kind == "tool.execute",
                "tool_name only on tool.execute: {event}"
            );
            if let Some(status) = object.get("status") {
                assert!(STATUSES.contains(&status.as_str().unwrap()), "status {status}");
            }
            if let Some(entities) = object.get("entities") {
                let entities = entities.as_array().unwrap();
                assert!(!entities.is_empty(), "empty entities should be omitted");
                for entity in entities {
                    let entity = entity.as_object().unwrap();
                    assert_eq!(entity.len(), 3, "entity keys: {entity:?}");
                    assert!(!entity["name"].as_str().unwrap().is_empty());
                    assert!(ENTITY_TYPES.contains(&entity["entity_type"].as_str().unwrap()));
                    assert!(ROLES.contains(&entity["role"].as_str().unwrap()));
                }
            }
            let stamp = str_of(event, "occurred_at");
            // 2026-11-20T09:15:02.123+01:00: millisecond precision, explicit offset.
            assert_eq!(stamp.len(), 29, "timestamp shape {stamp}");
            assert_eq!(&stamp[19..20], ".", "timestamp shape {stamp}");
            assert!(matches!(&stamp[23..24], "+" | "-"), "timestamp shape {stamp}");
            let when = at(event);
            if let Some(previous) = previous {
                assert!(when >= previous, "global order broken at {pos}");
            }
            previous = Some(when);

            let id = str_of(event, "event_id").to_owned();
            let session = str_of(event, "session_id").to_owned();
            assert_eq!(str_of(event, "trace_id")[6..], session[5..], "one trace per session");
            if let Some(last) = last_in_session.get(&session) {
                assert!(when >= *last, "session {session} goes back in time at {id}");
            }
            last_in_session.insert(session.clone(), when);
            if let Some(parent) = object.get("parent_event_id") {
                let (parent_session, parent_pos) = seen
                    .get(parent.as_str().unwrap())
                    .unwrap_or_else(|| panic!("parent of {id} not seen earlier"));
                assert_eq!(parent_session, &session, "parent of {id} is in another session");
                assert!(*parent_pos < pos);
            }
            assert!(!has_null(&event["payload"]), "null inside the payload of {id}");
            if let Some(retry_of) = event["payload"].get("retry_of") {
                assert_eq!(
                    Some(retry_of),
                    object.get("parent_event_id"),
                    "a retry hangs off the failed attempt"
                );
            }
            assert!(seen.insert(id.clone(), (session, pos)).is_none(), "duplicate event id {id}");
        }
    }

    #[test]
    fn same_config_gives_identical_json_and_another_seed_does_not() {
        let config = TraceConfig::default();
        assert_eq!(strings(&config), strings(&config));
        let other = TraceConfig { seed: 8, ..TraceConfig::default() };
        assert_ne!(strings(&config), strings(&other));
    }

    #[test]
    fn default_trace_is_well_formed() {
        let events = collect(&TraceConfig::default());
        assert_eq!(events.len(), 400);
        check(&events);
        assert_eq!(str_of(&events[0], "occurred_at"), "2026-11-16T08:00:00.000+00:00");
        assert_eq!(str_of(&events[0], "event_type"), "session.start");
    }

    #[test]
    fn yields_exactly_the_requested_number_of_events() {
        for events in [0, 1, 2, 17, 399, 3_000] {
            let config = TraceConfig { events, seed: events as u64, ..TraceConfig::default() };
            let trace = trace(&config);
            assert_eq!(trace.len(), events);
            let all: Vec<Value> = trace.collect();
            assert_eq!(all.len(), events);
            check(&all);
        }
    }

    #[test]
    fn odd_configs_still_give_valid_traces() {
        let configs = [
            TraceConfig { agents: 1, users: 1, ..TraceConfig::default() },
            TraceConfig { agents: 0, users: 0, failure_rate: f64::NAN, ..TraceConfig::default() },
            TraceConfig { agents: 20, users: 500, events: 2_000, ..TraceConfig::default() },
            TraceConfig { failure_rate: 0.0, ..TraceConfig::default() },
            TraceConfig { failure_rate: 1.0, ..TraceConfig::default() },
            TraceConfig { failure_rate: -3.0, seed: u64::MAX, ..TraceConfig::default() },
        ];
        for config in configs {
            let events = collect(&config);
            assert_eq!(events.len(), config.events);
            check(&events);
            let agents: BTreeSet<&str> = events.iter().map(|e| str_of(e, "agent_id")).collect();
            assert!(agents.len() <= config.agents.max(1), "{agents:?}");
        }
        let none_fail = collect(&TraceConfig { failure_rate: 0.0, ..TraceConfig::default() });
        assert!(none_fail.iter().all(|e| e["status"] != "failed"));
        let all_fail = collect(&TraceConfig { failure_rate: 1.0, ..TraceConfig::default() });
        assert!(
            all_fail
                .iter()
                .filter(|e| e["event_type"] == "tool.execute")
                .all(|e| e["status"] != "completed")
        );
    }

    #[test]
    fn failures_are_retried_and_most_retries_succeed() {
        let events = collect(&TraceConfig::default());
        let by_id: BTreeMap<&str, &Value> =
            events.iter().map(|e| (str_of(e, "event_id"), e)).collect();
        let retries: Vec<&Value> =
            events.iter().filter(|e| e["payload"].get("retry_of").is_some()).collect();
        assert!(!retries.is_empty(), "no retry in the demo trace");
        for retry in &retries {
            assert_eq!(retry["event_type"], "tool.execute");
            let failed = by_id[retry["payload"]["retry_of"].as_str().unwrap()];
            assert_eq!(failed["event_type"], "tool.execute");
            assert_eq!(failed["status"], "failed");
            assert_eq!(failed["tool_name"], retry["tool_name"]);
            assert!(failed["payload"]["error"].as_str().unwrap().len() > 5);
            assert_eq!(
                retry["payload"]["attempt"].as_u64().unwrap(),
                failed["payload"]["attempt"].as_u64().unwrap() + 1
            );
        }
        let recovered = retries.iter().filter(|r| r["status"] == "completed").count();
        assert!(
            recovered * 2 > retries.len(),
            "{recovered} of {} retries succeeded",
            retries.len()
        );
    }

    #[test]
    fn demo_trace_looks_like_real_multi_agent_work() {
        let events = collect(&TraceConfig::default());
        let agents: BTreeSet<&str> = events.iter().map(|e| str_of(e, "agent_id")).collect();
        assert!(agents.len() >= 3, "{agents:?}");
        let sessions: BTreeSet<&str> = events.iter().map(|e| str_of(e, "session_id")).collect();
        assert!(sessions.len() >= 10, "{} sessions", sessions.len());
        let offsets: BTreeSet<&str> =
            events.iter().map(|e| &str_of(e, "occurred_at")[23..]).collect();
        assert!(offsets.len() >= 2, "{offsets:?}");
        let days: BTreeSet<String> =
            events.iter().map(|e| at(e).naive_utc().date().to_string()).collect();
        assert!(days.len() >= 2, "{days:?}");
        let kinds: BTreeSet<&str> = events.iter().map(|e| str_of(e, "event_type")).collect();
        assert_eq!(kinds.len(), EVENT_TYPES.len(), "{kinds:?}");
        // Sessions overlap: some event of one session falls between two of another.
        let mut switches = 0;
        for pair in events.windows(2) {
            if pair[0]["session_id"] != pair[1]["session_id"] {
                switches += 1;
            }
        }
        assert!(switches > 2 * sessions.len(), "sessions barely interleave: {switches}");
        for event in &events {
            match str_of(event, "event_type") {
                "observation.input" => {
                    assert!(event["payload"]["text"].as_str().unwrap().len() > 20);
                    assert!(event.get("user_id").is_some());
                }
                "tool.execute" if event["status"] != "pending" => {
                    let entities = event["entities"].as_array().unwrap();
                    assert!(
                        entities
                            .iter()
                            .any(|e| e["entity_type"] == "service" && e["role"] == "object")
                    );
                    assert!(event["payload"].get("duration_ms").is_some());
                }
                "llm.chat" => assert!(event["payload"]["output_tokens"].as_u64().unwrap() > 0),
                _ => {}
            }
        }
        let delegations = events
            .iter()
            .filter(|e| {
                e["event_type"] == "agent.invoke" && e["payload"].get("delegated_by").is_some()
            })
            .count();
        assert!(delegations > 0);
    }

    #[test]
    fn gaps_within_a_session_stay_realistic() {
        let events = collect(&TraceConfig { events: 5_000, ..TraceConfig::default() });
        let mut last: BTreeMap<&str, DateTime<FixedOffset>> = BTreeMap::new();
        for event in &events {
            let session = str_of(event, "session_id");
            let when = at(event);
            if let Some(previous) = last.insert(session, when) {
                let gap = (when - previous).num_milliseconds();
                assert!((50..=40_000).contains(&gap), "gap of {gap} ms in {session}");
            }
        }
    }

    #[test]
    fn memory_is_bounded_by_open_sessions() {
        let mut trace = trace(&TraceConfig { events: 200_000, seed: 3, ..TraceConfig::default() });
        let mut most_open = 0;
        while trace.next().is_some() {
            most_open = most_open.max(trace.open.len());
        }
        assert!(most_open <= 16, "{most_open} sessions open at once");
        assert!(most_open >= 3, "sessions should overlap, at most {most_open} open");
    }

    #[test]
    #[ignore = "throughput measurement; run with --release -- --ignored --nocapture"]
    fn generation_throughput() {
        let events = 1_000_000;
        let started = std::time::Instant::now();
        let mut bytes = 0;
        for event in trace(&TraceConfig { events, ..TraceConfig::default() }) {
            bytes += usize::from(event.is_object());
        }
        let elapsed = started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let mut json = 0;
        for event in trace(&TraceConfig { events, ..TraceConfig::default() }) {
            json += event.to_string().len();
        }
        let with_json = started.elapsed().as_secs_f64();
        println!(
            "{events} events in {elapsed:.2} s: {:.0} events/s; with to_string: {:.0} events/s, {:.0} bytes/event",
            events as f64 / elapsed,
            events as f64 / with_json,
            json as f64 / events as f64
        );
        assert_eq!(bytes, events);
    }
}
