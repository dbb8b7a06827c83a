//! Principals and policies: over random graphs, scopes and principals, nothing a principal may
//! not see is returned, counted or walked through by any read of the choke point (`Scoped`).

use std::collections::BTreeSet;

use ctxgraph::{
    Direction, Engine, IngestOptions, NodeKey, Principal, RecallQuery, TraversalOptions,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::engine;

const ROLES: [&str; 5] = ["operator", "visitor", "viewer", "pii_reviewer", "admin"];
const WORDS: [&str; 8] =
    ["deploy", "timeout", "database", "invoice", "rollback", "cache", "email", "token"];

/// A random scope: (audience, allow, deny as role indexes; pii flag 0 none, 1 not cleared,
/// 2 pending review, 3 cleared).
type ScopeSpec = (Vec<usize>, Vec<usize>, Vec<usize>, usize, bool);

fn scope_json(spec: &ScopeSpec) -> (Option<Value>, Option<Value>) {
    let (audience, allow, deny, pii, named) = spec;
    let roles = |ix: &Vec<usize>| ix.iter().map(|i| ROLES[*i].to_owned()).collect::<Vec<_>>();
    let mut aud: Vec<String> = audience.iter().map(|i| format!("role:{}", ROLES[*i])).collect();
    if *named {
        aud.push("principal:p1".into());
    }
    let mut scope = serde_json::Map::new();
    if !aud.is_empty() {
        scope.insert("audience".into(), json!(aud));
    }
    if !allow.is_empty() {
        scope.insert("allow_roles".into(), json!(roles(allow)));
    }
    if !deny.is_empty() {
        scope.insert("deny_roles".into(), json!(roles(deny)));
    }
    let pii = match pii {
        1 => Some(json!({"pii_cleared": false})),
        2 => Some(json!({"pending_review": true})),
        3 => Some(json!({"pii_cleared": true, "pii_redacted": true})),
        _ => None,
    };
    ((!scope.is_empty()).then_some(Value::Object(scope)), pii)
}

fn spec() -> impl Strategy<Value = ScopeSpec> {
    // Most records are open; a third carry some scope.
    prop_oneof![
        2 => Just((vec![], vec![], vec![], 0, false)),
        1 => (
            prop::collection::vec(0usize..5, 0..2),
            prop::collection::vec(0usize..5, 0..2),
            prop::collection::vec(0usize..5, 0..2),
            0usize..4,
            any::<bool>(),
        ),
    ]
}

/// Sessions of the random stores: `s0` and `s1` on one day, `s2` and `s3` on the next, so
/// that each day summary sums up two session summaries.
const SESSIONS: usize = 4;
/// Entities the random events name (besides their agent and tool), one each.
const THINGS: usize = 6;

/// The words only event `i` says: a hidden event's text must never come back.
fn marker(i: usize) -> String {
    format!("ref{i}q")
}

fn build(
    events: &[(ScopeSpec, usize, usize)],
    memories: &[ScopeSpec],
) -> (tempfile::TempDir, Engine) {
    build_kept(events, memories, &[], &|_| true)
}

/// The store of [`build`] with only the records whose id `keep` accepts (`e{i}`, `m{i}`): the
/// graph a principal would have if the store held only what it may see. A kept memory that
/// superseded a dropped one supersedes nothing (a memory may name only existing ones).
fn build_kept(
    events: &[(ScopeSpec, usize, usize)],
    memories: &[ScopeSpec],
    receipts: &[(usize, usize)],
    keep: &dyn Fn(&str) -> bool,
) -> (tempfile::TempDir, Engine) {
    build_with(events, memories, receipts, keep, false)
}

/// The store of [`build`] as a server's tenant holds it while being written: the engine shares
/// its index caches (so its writes feed the deltas of newer texts and vectors, `text_delta` and
/// `vector_delta`) and nothing is consolidated, so every text lies above the lexical index's
/// build and every vector outside the vector index, and searches rank them from the deltas.
fn build_live(
    events: &[(ScopeSpec, usize, usize)],
    memories: &[ScopeSpec],
) -> (tempfile::TempDir, Engine) {
    build_with(events, memories, &[], &|_| true, true)
}

fn build_with(
    events: &[(ScopeSpec, usize, usize)],
    memories: &[ScopeSpec],
    receipts: &[(usize, usize)],
    keep: &dyn Fn(&str) -> bool,
    live: bool,
) -> (tempfile::TempDir, Engine) {
    let (dir, mut e) = engine();
    if live {
        let caches = e.index_caches();
        e.set_index_caches(caches);
    }
    let mut lines = String::new();
    let mut accepted = 0;
    for (i, (spec, parent, word)) in events.iter().enumerate() {
        if !keep(&format!("e{i}")) {
            continue;
        }
        accepted += 1;
        let (scope, pii) = scope_json(spec);
        let session = i % SESSIONS;
        let mut ev = json!({"event_id": format!("e{i}"), "event_type": "tool.execute",
            "occurred_at": format!("2026-11-{}T10:{:02}:{:02}Z", 20 + session / 2, i / 60, i % 60),
            "session_id": format!("s{session}"), "agent_id": "a", "trace_id": "t",
            "tool_name": "deploy", "status": if i % 4 == 0 { "failed" } else { "completed" },
            "entities": [{"name": format!("thing{}", (word + i) % THINGS), "entity_type": "concept"}],
            "payload": {"text": format!("{} {} {}", WORDS[*word], WORDS[(word + 3) % 8], marker(i))}});
        if i > 0 && *parent < i {
            ev["parent_event_id"] = json!(format!("e{parent}"));
        }
        if let Some(s) = scope {
            ev["scope"] = s;
        }
        if let Some(p) = pii {
            ev["pii"] = p;
        }
        lines.push_str(&format!("{ev}\n"));
    }
    let report = e.ingest_jsonl(lines.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(report.accepted as usize, accepted, "{:?}", report.rejections);
    let mut records = Vec::new();
    for (i, spec) in memories.iter().enumerate() {
        if !keep(&format!("m{i}")) {
            continue;
        }
        let (scope, pii) = scope_json(spec);
        let mut m = json!({"record_type": "memory", "memory_id": format!("m{i}"),
            "kind": "decision", "topic": "auth", "content": format!("use {} for auth", WORDS[i % 8]),
            "session_id": "ms", "created_at": format!("2026-11-20T11:{i:02}:00Z")});
        if i > 0 && keep(&format!("m{}", i - 1)) {
            m["supersedes"] = json!(format!("m{}", i - 1));
        }
        if let Some(s) = scope {
            m["scope"] = s;
        }
        if let Some(p) = pii {
            m["pii"] = p;
        }
        records.push(e.validate(&m.to_string()).unwrap());
    }
    for r in e.save_memories(&records).unwrap() {
        r.unwrap();
    }
    // Decision receipts citing two events each; a receipt citing a dropped event is dropped
    // (a receipt may cite only events that exist).
    let mut valid = Vec::new();
    for (j, (a, b)) in receipts.iter().enumerate() {
        let cited = [format!("e{}", a % events.len()), format!("e{}", b % events.len())];
        if !cited.iter().all(|id| keep(id)) {
            continue;
        }
        let receipt = json!({"record_type": "receipt", "receipt_id": format!("r{j}"),
            "task": format!("task{}", j % 2), "actor": format!("user/a{}", j % 2),
            "referenced_inputs": {"events": cited},
            "policies_checked": [{"id": format!("policy/p{}", j % 3), "result": "allow"}],
            "action": "approve", "outcome": {"status": "success"},
            "timestamps": {"requested": "2026-11-20T12:00:00Z", "committed": format!("2026-11-20T12:{j:02}:00Z")}});
        valid.push(e.validate(&receipt.to_string()).unwrap());
    }
    if !valid.is_empty() {
        for r in e.add_receipts(&valid).unwrap() {
            r.unwrap();
        }
    }
    e.enrich(&mut |_, _| {}).unwrap();
    if !live {
        e.consolidate().unwrap();
    }
    (dir, e)
}

/// What a principal may see of a store, by brute force over the whole graph: the policy on
/// events and memories; a summary when every event below it is visible; an entity when an event
/// naming it is, with its counts and times only when every event naming it is.
struct Oracle {
    /// Hidden events, memories, summaries and entities.
    hidden: BTreeSet<NodeKey>,
    /// The words only hidden events say.
    markers: Vec<String>,
    /// Visible entities that a hidden event names.
    counts_hidden: BTreeSet<NodeKey>,
    /// Visible events and memories.
    visible: (u64, u64),
}

/// The events below a summary, at any depth.
fn events_below(snap: &ctxgraph::Reader<'_>, key: &NodeKey, out: &mut Vec<NodeKey>) {
    for edge in snap.edges(key, Some("SUMMARIZES"), Direction::Out).unwrap() {
        if edge.key.to.label == "Summary" {
            events_below(snap, &edge.key.to, out);
        } else {
            out.push(edge.key.to);
        }
    }
}

impl Oracle {
    fn new(snap: &ctxgraph::Reader<'_>, who: &Principal) -> Oracle {
        let mut o = Oracle {
            hidden: BTreeSet::new(),
            markers: Vec::new(),
            counts_hidden: BTreeSet::new(),
            visible: (0, 0),
        };
        for n in snap.nodes("Event", None, 10_000).unwrap() {
            if who.allows(&n).is_ok() {
                o.visible.0 += 1;
            } else {
                o.markers.push(marker(n.key.id[1..].parse().unwrap()));
                o.hidden.insert(n.key.clone());
            }
        }
        for n in snap.nodes("Memory", None, 10_000).unwrap() {
            if who.allows(&n).is_ok() {
                o.visible.1 += 1
            } else {
                o.hidden.insert(n.key.clone());
            }
        }
        for n in snap.nodes("Summary", None, 10_000).unwrap() {
            let mut below = Vec::new();
            events_below(snap, &n.key, &mut below);
            assert!(!below.is_empty(), "{} summarises nothing", n.key);
            if below.iter().any(|k| o.hidden.contains(k)) {
                o.hidden.insert(n.key.clone());
            }
        }
        // Topics and memory sessions group memories: hidden when every memory in them is.
        for (label, edge) in [("Topic", "ABOUT"), ("MemorySession", "IN_SESSION")] {
            for n in snap.nodes(label, None, 10_000).unwrap() {
                let members = snap.edges(&n.key, Some(edge), Direction::In).unwrap();
                if members.iter().all(|e| o.hidden.contains(&e.key.from)) {
                    o.hidden.insert(n.key.clone());
                }
            }
        }
        // A receipt is hidden when an event it cites is; its task, actors, policies and
        // exceptions when every receipt naming them is.
        for n in snap.nodes("DecisionReceipt", None, 10_000).unwrap() {
            let cited = snap.edges(&n.key, Some("USED_INPUT"), Direction::Out).unwrap();
            if cited.iter().any(|e| o.hidden.contains(&e.key.to)) {
                o.hidden.insert(n.key.clone());
            }
        }
        for label in ["Task", "Actor", "Policy", "PolicyException"] {
            for n in snap.nodes(label, None, 10_000).unwrap() {
                let naming = snap.edges(&n.key, None, Direction::In).unwrap();
                if naming.iter().all(|e| o.hidden.contains(&e.key.from)) {
                    o.hidden.insert(n.key.clone());
                }
            }
        }
        for n in snap.nodes("Entity", None, 10_000).unwrap() {
            let naming = snap.edges(&n.key, Some("REFERENCES"), Direction::In).unwrap();
            let hidden = naming.iter().filter(|e| o.hidden.contains(&e.key.from)).count();
            if hidden == naming.len() {
                o.hidden.insert(n.key.clone());
            } else if hidden > 0 {
                o.counts_hidden.insert(n.key.clone());
            }
        }
        o
    }

    /// Why returning `n` to the principal leaks, if it does.
    fn leak(&self, n: &ctxgraph::Node) -> Option<String> {
        if self.hidden.contains(&n.key) {
            return Some(format!("returned hidden {}", n.key));
        }
        let text = said(n);
        if let Some(m) = self.markers.iter().find(|m| text.contains(m.as_str())) {
            return Some(format!("{} quotes a hidden event ({m}): {text}", n.key));
        }
        let counts = ["mention_count", "first_seen", "last_seen"];
        if self.counts_hidden.contains(&n.key) && counts.iter().any(|p| n.props.contains_key(*p)) {
            return Some(format!("{} counts a hidden event: {text}", n.key));
        }
        None
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn no_read_of_the_choke_point_leaks(
        events in prop::collection::vec((spec(), 0usize..40, 0usize..8), 10..40),
        memories in prop::collection::vec(spec(), 1..6),
        roles in prop::collection::btree_set(0usize..5, 0..3),
        question in prop::sample::select(vec!["why did the deploy fail", "database timeout",
            "when was the cache rolled back", "what happened with the invoice email",
            "overview of the day", "thing1 thing2 thing3"]),
    ) {
        let (dir, e) = build(&events, &memories);
        let who = Principal::new("p1", "default", roles.iter().map(|i| ROLES[*i].to_owned())).unwrap();
        no_leak(&e, &who, events.len(), memories.len(), question)?;
        // The same reads on a remote store (the scale-out backend's read path: every query its
        // own read through `StoreRead`), here over the same file.
        let remote = super::remote::remote_engine(&dir.path().join("t.ctxg"));
        no_leak(&remote, &who, events.len(), memories.len(), question)?;
        // A store being written, its newer texts ranked from the shared delta.
        let (_live_dir, live) = build_live(&events, &memories);
        no_leak(&live, &who, events.len(), memories.len(), question)?;
    }
}

/// Every read of the choke point as `who` over `e`, a store [`build`] made of `events` events and
/// `memories` memories, checked against the oracle: nothing hidden returned, counted or walked.
fn no_leak(
    e: &Engine,
    who: &Principal,
    events: usize,
    memories: usize,
    question: &str,
) -> Result<(), TestCaseError> {
    {
        let snap = e.owner_reader().unwrap();
        let oracle = Oracle::new(&snap, who);
        let scoped = snap.as_principal(who);
        let leak = |k: &NodeKey| oracle.hidden.contains(k);

        // Counts.
        let stats = scoped.stats().unwrap();
        prop_assert_eq!((stats.events, stats.memories), oracle.visible);

        // Point reads of every node, derived ones included: shown exactly when the oracle says,
        // and then as stored, but for the counts of an entity a hidden event names.
        for label in ["Event", "Memory", "Summary", "Entity"] {
            for n in snap.nodes(label, None, 10_000).unwrap() {
                let got = scoped.node(&n.key).unwrap();
                prop_assert_eq!(got.is_some(), !leak(&n.key), "get {}", n.key);
                if let Some(got) = got {
                    prop_assert!(oracle.leak(&got).is_none(), "{:?}", oracle.leak(&got));
                    if !oracle.counts_hidden.contains(&n.key) && label != "Event" {
                        prop_assert_eq!(&got, &n, "shown otherwise than stored");
                    }
                }
            }
        }

        // Search: the question, each entity's name, and words every event says.
        let queries = [
            question.to_owned(),
            "deploy timeout database".to_owned(),
            (0..THINGS).map(|t| format!("thing{t}")).collect::<Vec<_>>().join(" "),
        ];
        for q in &queries {
            for (n, _) in scoped.search(q, 100).unwrap() {
                prop_assert!(oracle.leak(&n).is_none(), "search {:?}: {:?}", q, oracle.leak(&n));
            }
        }

        // Recall: items, seeds, paths, edges, unknowns, named entities.
        let mut q = RecallQuery::new(question);
        q.k = 30;
        let vector = e.embedder().unwrap().embed(&[question]).unwrap().remove(0);
        let pack = scoped.recall(&q, &vector, e.options().search).unwrap();
        for item in &pack.items {
            prop_assert!(
                oracle.leak(&item.node).is_none(),
                "recall: {:?}",
                oracle.leak(&item.node)
            );
            prop_assert!(!leak(&item.seed), "seeded from {}", item.seed);
            for step in &item.path {
                prop_assert!(!leak(&step.to), "walked through {}", step.to);
            }
        }
        for edge in &pack.edges {
            prop_assert!(!leak(&edge.edge.key.from) && !leak(&edge.edge.key.to));
        }
        for u in &pack.unknowns {
            prop_assert!(!leak(&u.item) && !leak(&u.missing));
        }
        for k in &pack.state.named {
            prop_assert!(!leak(k), "named {}", k);
        }

        // Point reads, timelines and causal chains.
        for i in 0..events {
            let key = NodeKey::new("Event", format!("e{i}"));
            prop_assert_eq!(scoped.event(&key.id).unwrap().is_some(), !leak(&key));
            let (chain, _) = scoped.causes(&key.id).unwrap();
            for n in &chain {
                prop_assert!(!leak(&n.key), "chain through {}", n.key);
            }
        }
        for s in 0..SESSIONS {
            let tl = scoped.timeline(&format!("s{s}"), 1000).unwrap();
            let expected = (0..events)
                .filter(|i| i % SESSIONS == s)
                .filter(|i| !leak(&NodeKey::new("Event", format!("e{i}"))))
                .count();
            prop_assert_eq!(tl.len(), expected);
            for entry in &tl {
                prop_assert!(!leak(&entry.event.key));
                for c in &entry.caused_by {
                    prop_assert!(!leak(&NodeKey::new("Event", c.clone())));
                }
            }
        }

        // Memories: lists, chains (over the visible ones, newest first), impact (not through
        // hidden).
        let listed: BTreeSet<String> =
            scoped.memories().unwrap().into_iter().map(|m| m.id).collect();
        let expected: BTreeSet<String> = (0..memories)
            .map(|i| format!("m{i}"))
            .filter(|id| !leak(&NodeKey::new("Memory", id.clone())))
            .collect();
        prop_assert_eq!(listed, expected);
        let t = TraversalOptions::default();
        let visible: Vec<String> = (0..memories)
            .rev()
            .map(|i| format!("m{i}"))
            .filter(|id| !leak(&NodeKey::new("Memory", id.clone())))
            .collect();
        let steps: Vec<String> = scoped
            .evolution("auth", &t)
            .unwrap()
            .map(|evo| evo.steps.into_iter().map(|s| s.memory.id).collect())
            .unwrap_or_default();
        prop_assert_eq!(steps, visible, "the chain is every visible decision, newest first");
        for i in 0..memories {
            let id = format!("m{i}");
            // A memory read by id (the server's `GET /v1/memories/{id}`).
            let hidden = leak(&NodeKey::new("Memory", id.clone()));
            prop_assert_eq!(scoped.memory(&id).unwrap().is_some(), !hidden, "memory {}", id);
            if let Some(imp) = scoped.impact(&id, &t).unwrap() {
                let mut reached = BTreeSet::from([id.clone()]);
                for item in &imp.items {
                    prop_assert!(!leak(&NodeKey::new("Memory", item.memory.id.clone())));
                    prop_assert!(reached.contains(&item.from), "walked through {}", item.from);
                    reached.insert(item.memory.id.clone());
                }
                for m in &imp.superseded_by {
                    prop_assert!(!leak(&NodeKey::new("Memory", m.id.clone())));
                }
            } else {
                prop_assert!(leak(&NodeKey::new("Memory", id)));
            }
        }
    }
    Ok(())
}

/// Event ids with depth, as an effects walk returns them.
fn walked(list: Vec<(usize, ctxgraph::Node)>) -> BTreeSet<(usize, String)> {
    list.into_iter().map(|(d, n)| (d, n.key.id)).collect()
}

/// A node's properties but its log position, which counts the records before it in its own
/// store (provenance: where the record is, not what the graph holds).
fn own_props(n: &ctxgraph::Node) -> ctxgraph::Properties {
    let mut props = n.props.clone();
    props.remove("global_position");
    props
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Every read of a principal's `Reader` equals the same read of the graph filtered to what
    /// it may see. Two references: for what records define (events and their order and causes,
    /// memories and their chains, the text found by search, counts), a second store holding
    /// only the visible records, read by its owner; for what the store derives from all of its
    /// records together (summaries, entities, edges and views), the owner's answer on the whole
    /// store, filtered by the oracle.
    #[test]
    fn every_read_equals_the_read_of_the_filtered_graph(
        events in prop::collection::vec((spec(), 0usize..30, 0usize..8), 6..30),
        memories in prop::collection::vec(spec(), 1..5),
        receipts in prop::collection::vec((0usize..30, 0usize..30), 0..4),
        roles in prop::collection::btree_set(0usize..5, 0..3),
    ) {
        let (_dir, e) = build_kept(&events, &memories, &receipts, &|_| true);
        let who = Principal::new("p1", "default", roles.iter().map(|i| ROLES[*i].to_owned())).unwrap();
        let owner = e.owner_reader().unwrap();
        let oracle = Oracle::new(&owner, &who);
        let hidden = |k: &NodeKey| oracle.hidden.contains(k);
        let (_fdir, f) = build_kept(&events, &memories, &receipts, &|id: &str| {
            let label = if id.starts_with('e') { "Event" } else { "Memory" };
            !hidden(&NodeKey::new(label, id))
        });
        let filtered = f.owner_reader().unwrap();
        let reader = owner.as_principal(&who);

        // Counts.
        let stats = reader.stats().unwrap();
        let fstats = filtered.store_stats().unwrap();
        let count = |label: &str| fstats.nodes.iter().find(|(l, _)| l == label).map_or(0, |(_, n)| *n);
        prop_assert_eq!((stats.events, stats.memories), (count("Event"), count("Memory")));

        // Events: each one, its session's timeline, its causes and its effects, as the
        // filtered store has them.
        for i in 0..events.len() {
            let id = format!("e{i}");
            let got = reader.event(&id).unwrap();
            let want = filtered.event(&id).unwrap();
            prop_assert_eq!(got.as_ref().map(own_props), want.as_ref().map(own_props), "event {}", id);
            prop_assert_eq!(reader.causes(&id).unwrap().1, filtered.causes(&id).unwrap().1, "causes of {}", id);
            let ids = |c: Vec<ctxgraph::Node>| c.into_iter().map(|n| n.key.id).collect::<Vec<_>>();
            prop_assert_eq!(ids(reader.causes(&id).unwrap().0), ids(filtered.causes(&id).unwrap().0));
            prop_assert_eq!(walked(reader.effects(&id, 1000).unwrap()), walked(filtered.effects(&id, 1000).unwrap()));
        }
        for s in 0..SESSIONS {
            let line = |t: Vec<ctxgraph::TimelineEntry>| t.into_iter()
                .map(|t| (t.event.key.id, t.caused_by, t.missing_parent)).collect::<Vec<_>>();
            let session = format!("s{s}");
            prop_assert_eq!(line(reader.timeline(&session, 1000).unwrap()), line(filtered.timeline(&session, 1000).unwrap()));
        }
        prop_assert_eq!(
            reader.events(None, 1000).unwrap().into_iter().map(|n| n.key.id).collect::<Vec<_>>(),
            filtered.events(None, 1000).unwrap().into_iter().map(|n| n.key.id).collect::<Vec<_>>()
        );

        // Search finds what the owner's search finds, less what is hidden (ranked by the
        // whole store's term statistics, so the filtered store is no reference here), each
        // node as a point read shows it.
        for q in ["deploy timeout database", "invoice email cache", "thing1 thing2 thing3 thing4", "auth"] {
            let got: Vec<ctxgraph::Node> = reader.search(q, 1000).unwrap().into_iter().map(|(n, _)| n).collect();
            let want: Vec<NodeKey> = owner.search(q, 1000).unwrap().into_iter()
                .map(|(n, _)| n.key).filter(|k| !hidden(k)).collect();
            prop_assert_eq!(got.iter().map(|n| n.key.clone()).collect::<Vec<_>>(), want, "search {:?}", q);
            for n in &got {
                let point = reader.node(&n.key).unwrap();
                prop_assert_eq!(Some(n), point.as_ref());
            }
        }

        // Memories: the list, each one, its outcomes; the topic's chain when its latest
        // decision is visible (withheld otherwise).
        let mids = |l: Vec<ctxgraph::MemoryView>| l.into_iter().map(|m| m.id).collect::<Vec<_>>();
        prop_assert_eq!(mids(reader.memories().unwrap()), mids(filtered.memories().unwrap()));
        let t = TraversalOptions::default();
        for i in 0..memories.len() {
            let id = format!("m{i}");
            prop_assert_eq!(reader.memory(&id).unwrap().map(|m| m.content), filtered.memory(&id).unwrap().map(|m| m.content));
            prop_assert_eq!(reader.outcomes_of(&id).unwrap(), filtered.outcomes_of(&id).unwrap());
        }
        let chain = |evo: Option<ctxgraph::Evolution>| evo.map(|e| e.steps.into_iter().map(|s| s.memory.id).collect::<Vec<_>>());
        prop_assert_eq!(chain(reader.evolution("auth", &t).unwrap()), chain(filtered.evolution("auth", &t).unwrap()));

        // Receipts: those whose cited events are all visible, as the filtered store lists them.
        let rids = |l: Vec<ctxgraph::ReceiptView>| l.into_iter().map(|r| r.record.receipt_id).collect::<Vec<_>>();
        let all = ctxgraph::ReceiptQuery::default();
        prop_assert_eq!(rids(reader.receipts(&all).unwrap()), rids(filtered.receipts(&all).unwrap()));

        // Contextual memory search and the decision context: the same memories found (their
        // order depends on the whole store's term statistics), the same chain.
        let vector = e.embedder().unwrap().embed(&["use deploy for auth"]).unwrap().remove(0);
        let options = ctxgraph::MemorySearchOptions { limit: 100, ..Default::default() };
        let hit_ids = |h: Vec<ctxgraph::MemoryHit>| h.into_iter().map(|h| h.memory.id).collect::<BTreeSet<_>>();
        prop_assert_eq!(
            hit_ids(reader.search_memories("use deploy for auth", &vector, &options).unwrap()),
            hit_ids(filtered.search_memories("use deploy for auth", &vector, &options).unwrap())
        );
        let got = reader.memory_context("use deploy for auth", &vector, &options).unwrap();
        let want = filtered.memory_context("use deploy for auth", &vector, &options).unwrap();
        prop_assert_eq!(hit_ids(got.hits), hit_ids(want.hits));
        for o in &got.outcomes {
            prop_assert!(!hidden(&NodeKey::new("Memory", o.memory_id.clone())));
        }
        for imp in &got.evidence {
            prop_assert!(!hidden(&NodeKey::new("Memory", imp.start.id.clone())));
            for item in &imp.items {
                prop_assert!(!hidden(&NodeKey::new("Memory", item.memory.id.clone())));
            }
        }

        // Impact from each visible memory walks what the filtered store's walk reaches.
        for i in 0..memories.len() {
            let id = format!("m{i}");
            let reach = |imp: Option<ctxgraph::Impact>| imp.map(|i| {
                let items: BTreeSet<(String, String)> = i.items.into_iter().map(|x| (x.memory.id, x.from)).collect();
                let later: BTreeSet<String> = i.superseded_by.into_iter().map(|m| m.id).collect();
                (items, later)
            });
            prop_assert_eq!(reach(reader.impact(&id, &t).unwrap()), reach(filtered.impact(&id, &t).unwrap()), "impact of {}", id);
            let links = |r: &ctxgraph::Reader<'_>| r.memory_links(&id, &t).unwrap().into_iter().map(|(e, _)| e.key).collect::<BTreeSet<_>>();
            let want: BTreeSet<_> = if hidden(&NodeKey::new("Memory", id.clone())) { BTreeSet::new() } else {
                links(&owner).into_iter().filter(|k| !hidden(&k.from) && !hidden(&k.to)).collect()
            };
            prop_assert_eq!(links(&reader), want, "links of {}", id);
        }

        // The weekly rollup: the decisions and open ones of the filtered store.
        let week = reader.rollup(0, i64::MAX, &ctxgraph::RollupOptions::default()).unwrap();
        let fweek = filtered.rollup(0, i64::MAX, &ctxgraph::RollupOptions::default()).unwrap();
        prop_assert_eq!(mids(week.decisions), mids(fweek.decisions));
        prop_assert_eq!(mids(week.open), mids(fweek.open));

        // Nearest neighbours: the owner's, less what is hidden, refilled to k.
        let near = |r: &ctxgraph::Reader<'_>, k| r.nearest(&vector, k, e.options().search).unwrap()
            .into_iter().map(|(n, _)| n.key).collect::<Vec<_>>();
        let mut want: Vec<NodeKey> = near(&owner, 10_000).into_iter().filter(|k| !hidden(k)).collect();
        want.truncate(10);
        prop_assert_eq!(near(&reader, 10), want);

        // What the store derives from all its records: every node of every kind, every edge of
        // a node, and every edge of every type, as the owner sees them less what is hidden.
        for label in ["Event", "Memory", "Summary", "Entity", "Topic", "MemorySession", "Outcome",
            "DecisionReceipt", "Task", "Actor", "Policy", "PolicyException"] {
            let all = owner.nodes(label, None, 10_000).unwrap();
            let want: Vec<NodeKey> = all.iter().map(|n| n.key.clone()).filter(|k| !hidden(k)).collect();
            let got: Vec<NodeKey> = reader.nodes(label, None, 10_000).unwrap().into_iter().map(|n| n.key).collect();
            prop_assert_eq!(&got, &want, "nodes {}", label);
            // A short page is refilled, never short because something was hidden.
            let page: Vec<NodeKey> = reader.nodes(label, None, 3).unwrap().into_iter().map(|n| n.key).collect();
            prop_assert_eq!(&page[..], &want[..want.len().min(3)]);
            for n in &all {
                let found: Vec<NodeKey> = reader.find(&n.key.id).unwrap().into_iter().map(|n| n.key).collect();
                prop_assert_eq!(found.contains(&n.key), !hidden(&n.key), "find {}", n.key);
                let edges = |r: &ctxgraph::Reader<'_>| r.edges(&n.key, None, Direction::Both).unwrap()
                    .into_iter().map(|e| e.key).collect::<BTreeSet<_>>();
                let want: BTreeSet<_> = if hidden(&n.key) { BTreeSet::new() } else {
                    edges(&owner).into_iter().filter(|k| !hidden(&k.from) && !hidden(&k.to)).collect()
                };
                prop_assert_eq!(edges(&reader), want.clone(), "edges of {}", n.key);
                // The neighbourhood, by group and by page, holds those same edges, each with
                // a visible node at its other end; pages join up, refilled past hidden ones.
                prop_assert_eq!(reader.provenance(&n.key).unwrap().is_some(), !hidden(&n.key));
                let mut grouped = BTreeSet::new();
                for g in reader.edge_groups(&n.key, 10_000).unwrap() {
                    let page = |offset, limit| reader.neighbors(&n.key, &g.edge_type, g.out, offset, limit).unwrap()
                        .into_iter().map(|x| {
                            assert!(!hidden(&x.node.key), "{} shows {}", n.key, x.node.key);
                            x.edge.key
                        }).collect::<Vec<_>>();
                    let all = page(0, 10_000);
                    prop_assert_eq!(all.len(), g.count, "group {} of {}", g.edge_type, n.key);
                    let mut joined = page(0, 2);
                    joined.extend(page(2, 10_000));
                    prop_assert_eq!(&joined, &all);
                    grouped.extend(all);
                }
                prop_assert_eq!(grouped, want, "neighbourhood of {}", n.key);
            }
        }
        for edge_type in ["FOLLOWS", "CAUSED_BY", "REFERENCES", "SIMILAR_TO", "SUMMARIZES", "SUPERSEDES",
            "ABOUT", "RELATES_TO", "TEMPORAL", "USED_INPUT", "FOR_TASK", "ACTED_BY", "CHECKED_POLICY"] {
            let keys = |r: &ctxgraph::Reader<'_>| r.edges_of_type(edge_type, None, 10_000).unwrap()
                .into_iter().map(|e| e.key).collect::<Vec<_>>();
            let want: Vec<_> = keys(&owner).into_iter().filter(|k| !hidden(&k.from) && !hidden(&k.to)).collect();
            prop_assert_eq!(keys(&reader), want, "edges of type {}", edge_type);
        }

        // An export holds what the reads show: the same nodes (as a point read shows each) and
        // the edges whose two ends are visible.
        let export = |r: &ctxgraph::Reader<'_>| {
            let (mut nodes, mut edges) = (Vec::new(), BTreeSet::new());
            r.export_each(&ctxgraph::access::ExportFilter::default(), &mut |item| -> Result<(), ctxgraph::Error> {
                match item {
                    ctxgraph::access::ExportItem::Node(n) => nodes.push(n),
                    ctxgraph::access::ExportItem::Edge(e) => { edges.insert(e.key); }
                }
                Ok(())
            }).unwrap();
            (nodes, edges)
        };
        let (got_nodes, got_edges) = export(&reader);
        let (all_nodes, all_edges) = export(&owner);
        let want: BTreeSet<NodeKey> = all_nodes.iter().map(|n| n.key.clone()).filter(|k| !hidden(k)).collect();
        prop_assert_eq!(got_nodes.iter().map(|n| n.key.clone()).collect::<BTreeSet<_>>(), want);
        for n in &got_nodes {
            let point = reader.node(&n.key).unwrap();
            prop_assert_eq!(Some(n), point.as_ref(), "exported {}", n.key);
        }
        let want: BTreeSet<_> = all_edges.into_iter().filter(|k| !hidden(&k.from) && !hidden(&k.to)).collect();
        prop_assert_eq!(got_edges, want);

        // The owner's reads refuse a principal.
        if !who.is_admin() {
            prop_assert!(reader.forgotten().is_err());
        }
        prop_assert!(reader.log(1, 10).is_err() && reader.store_stats().is_err());
        prop_assert!(reader.pending_edges().is_err() && reader.checkpoints().is_err());
    }
}

#[test]
fn scope_and_pii_are_validated_and_kept_in_the_canonical_record() {
    let (_dir, e) = engine();
    let ok = json!({"event_id": "e1", "event_type": "tool.execute", "occurred_at": "2026-11-20T10:00:00Z",
        "session_id": "s", "agent_id": "a", "trace_id": "t",
        "scope": {"audience": ["role:operator", "role:operator"], "deny_roles": ["visitor"],
                  "time_range": ["2026-11-20T10:00:00Z", "2026-11-20T11:00:00Z"], "location": "lab/a"},
        "pii": {"pii_cleared": true}});
    let r = e.validate(&ok.to_string()).unwrap();
    let canonical: Value = serde_json::from_str(r.canonical()).unwrap();
    assert_eq!(canonical["scope"]["audience"], json!(["role:operator"]), "sorted, deduplicated");
    assert_eq!(canonical["pii"], json!({"pii_cleared": true}));
    for (field, value, code) in [
        ("scope", json!({"audience": ["operator"]}), "scope.audience_format"),
        (
            "scope",
            json!({"time_range": ["2026-11-21T00:00:00Z", "2026-11-20T00:00:00Z"]}),
            "scope.time_range_order",
        ),
        ("scope", json!({"deny_roles": ["has space"]}), "scope.name_format"),
        ("scope", json!({"colour": "red"}), "envelope.unknown_field"),
        ("pii", json!({"pii_cleared": "yes"}), "envelope.type"),
        ("scope", json!("everyone"), "envelope.type"),
    ] {
        let mut bad = ok.clone();
        bad[field] = value.clone();
        let err = e.validate(&bad.to_string()).unwrap_err();
        assert!(err.violations.iter().any(|v| v.rule == code), "{value}: {err}");
    }
}

/// A secret only a PII reviewer may read, in an event's error.
const SECRET: &str = "078-05-1120";

/// One day of three sessions: an open one, one holding PII not cleared (the secret, and the only
/// mention of `vault-prod`), one for operators only (the only mention of `ledger-x`); and an
/// open session on the next day. Enriched and consolidated: session and day summaries exist.
fn derived_store() -> (tempfile::TempDir, Engine) {
    let (dir, mut e) = engine();
    let ev = |id: &str, session: &str, at: &str, error: String, names: &[&str], extra: Value| {
        let entities: Vec<Value> =
            names.iter().map(|n| json!({"name": n, "entity_type": "service"})).collect();
        let mut ev = json!({"event_id": id, "event_type": "tool.execute", "occurred_at": at,
            "session_id": session, "agent_id": "a", "trace_id": "t", "tool_name": "deploy",
            "status": "failed", "payload": {"error": error}, "entities": entities});
        for (k, v) in extra.as_object().unwrap() {
            ev[k] = v.clone();
        }
        format!("{ev}\n")
    };
    let lines = ev(
        "e1",
        "s1",
        "2026-11-20T09:00:00Z",
        "timeout of the orders database".into(),
        &["orders-db"],
        json!({}),
    ) + &ev(
        "e2",
        "s2",
        "2026-11-20T10:00:00Z",
        format!("customer SSN {SECRET} rejected"),
        &["orders-db", "vault-prod"],
        json!({"pii": {"pii_cleared": false}}),
    ) + &ev(
        "e3",
        "s3",
        "2026-11-20T11:00:00Z",
        "reconciliation of ledger-x failed".into(),
        &["ledger-x"],
        json!({"scope": {"allow_roles": ["operator"]}}),
    ) + &ev(
        "e4",
        "s4",
        "2026-11-21T09:00:00Z",
        "cache warmup of the orders database".into(),
        &["orders-db"],
        json!({}),
    );
    let report = e.ingest_jsonl(lines.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(report.accepted, 4, "{:?}", report.rejections);
    e.enrich(&mut |_, _| {}).unwrap();
    e.consolidate().unwrap();
    (dir, e)
}

/// Recall through the choke point, on the snapshot `scoped` reads.
fn recall(e: &Engine, scoped: &ctxgraph::Reader<'_>, question: &str) -> ctxgraph::ContextPack {
    let mut q = RecallQuery::new(question);
    q.k = 30;
    let vector = e.embedder().unwrap().embed(&[question]).unwrap().remove(0);
    scoped.recall(&q, &vector, e.options().search).unwrap()
}

fn viewer() -> Principal {
    Principal::new("v1", "default", ["viewer".to_owned()]).unwrap()
}

/// Everything a node says, as one string (its id and properties).
fn said(n: &ctxgraph::Node) -> String {
    format!("{} {}", n.key, serde_json::to_string(&n.props).unwrap())
}

#[test]
fn a_day_summary_over_a_hidden_event_is_hidden_from_every_read() {
    let (_dir, e) = derived_store();
    let snap = e.owner_reader().unwrap();
    let day = NodeKey::new("Summary", "day:2026-11-20");
    let owner_day = snap.node(&day).unwrap().expect("the day summary exists");
    assert!(said(&owner_day).contains(SECRET), "the day summary quotes e2: {}", said(&owner_day));

    let who = viewer();
    let scoped = snap.as_principal(&who);
    assert_eq!(scoped.node(&day).unwrap(), None, "get day:… quotes a hidden event");
    assert_eq!(scoped.node(&NodeKey::new("Summary", "session:s2")).unwrap(), None);
    // Summaries over visible events only stay visible.
    assert!(scoped.node(&NodeKey::new("Summary", "session:s1")).unwrap().is_some());
    assert!(scoped.node(&NodeKey::new("Summary", "day:2026-11-21")).unwrap().is_some());
    for (n, _) in scoped.search("customer SSN rejected", 50).unwrap() {
        assert!(!said(&n).contains(SECRET), "search returned {}", said(&n));
    }
    let pack = recall(&e, &scoped, "customer SSN rejected");
    for item in &pack.items {
        assert!(!said(&item.node).contains(SECRET), "recall returned {}", said(&item.node));
        assert_ne!(item.node.key, day);
    }
    // A reviewer may read the event, so the summaries too.
    let reviewer = Principal::new("r1", "default", ["pii_reviewer".to_owned()]).unwrap();
    assert!(
        snap.as_principal(&reviewer)
            .node(&NodeKey::new("Summary", "session:s2"))
            .unwrap()
            .is_some()
    );
    // The day also holds e3 (operators only): a reviewer who is no operator does not see it.
    assert_eq!(snap.as_principal(&reviewer).node(&day).unwrap(), None);
    let both = Principal::new("r2", "default", ["pii_reviewer".into(), "operator".into()]).unwrap();
    assert_eq!(
        snap.as_principal(&both).node(&day).unwrap().as_ref().map(said),
        Some(said(&owner_day))
    );
}

#[test]
fn an_entity_named_only_by_hidden_events_is_hidden_and_counts_reveal_none() {
    let (_dir, mut e) = derived_store();
    let who = viewer();
    let operator = Principal::new("o1", "default", ["operator".to_owned()]).unwrap();
    let vault = NodeKey::new("Entity", "service:vault-prod");
    let ledger = NodeKey::new("Entity", "service:ledger-x");
    let orders = NodeKey::new("Entity", "service:orders-db");
    {
        let snap = e.owner_reader().unwrap();
        let scoped = snap.as_principal(&who);
        assert_eq!(scoped.node(&vault).unwrap(), None, "named only by e2 (PII not cleared)");
        assert_eq!(scoped.node(&ledger).unwrap(), None, "named only by e3 (operators)");
        let ledger_seen =
            snap.as_principal(&operator).node(&ledger).unwrap().expect("an operator sees it");
        assert_eq!(ledger_seen.props["mention_count"], json!(1), "{ledger_seen:?}");
        // orders-db is named by e1, e2 and e4: visible, but its count and times would reveal e2.
        let orders_seen = scoped.node(&orders).unwrap().expect("named by visible events");
        assert_eq!(snap.node(&orders).unwrap().unwrap().props["mention_count"], json!(3));
        for p in ["mention_count", "first_seen", "last_seen"] {
            assert!(!orders_seen.props.contains_key(p), "{p} shown: {orders_seen:?}");
        }
        assert_eq!(orders_seen.props["name"], json!("orders-db"));
        for question in ["vault-prod", "ledger-x reconciliation", "orders-db"] {
            for (n, _) in scoped.search(question, 50).unwrap() {
                assert!(n.key != vault && n.key != ledger, "search returned {}", n.key);
            }
            let pack = recall(&e, &scoped, question);
            for item in &pack.items {
                assert!(item.node.key != vault && item.node.key != ledger, "{}", item.node.key);
                if item.node.key == orders {
                    assert!(!item.node.props.contains_key("mention_count"), "{:?}", item.node);
                }
            }
            assert!(!pack.state.named.contains(&vault) && !pack.state.named.contains(&ledger));
        }
    }
    // A visible fact naming vault-prod makes it visible, still without counts (e2 is hidden).
    let fact = ctxgraph::FactInput::new(
        ctxgraph::EntityInput::typed("vault-prod", "service"),
        "depends_on",
        ctxgraph::ObjectInput::Entity(ctxgraph::EntityInput::typed("orders-db", "service")),
    );
    e.record_fact(&fact).unwrap();
    let seen = e.reader(&who).unwrap().node(&vault).unwrap().expect("a visible fact names it");
    assert!(!seen.props.contains_key("mention_count"), "{seen:?}");
}

#[test]
fn deciding_an_entity_reads_a_bounded_number_of_records() {
    let (_dir, mut e) = engine();
    // 1,010 events by agent `a`; the first 20 (hidden from a viewer) and the 21st (visible) name
    // `late-thing`, so the first records read decide nothing.
    let mut lines = String::new();
    for i in 0..1010 {
        let mut ev = json!({"event_id": format!("e{i}"), "event_type": "tool.execute",
            "occurred_at": format!("2026-11-20T{:02}:{:02}:{:02}Z", i / 3600, i / 60 % 60, i % 60),
            "session_id": "s", "agent_id": "a", "trace_id": "t"});
        if i <= 20 {
            ev["entities"] = json!([{"name": "late-thing", "entity_type": "concept"}]);
        }
        if i < 20 {
            ev["scope"] = json!({"allow_roles": ["operator"]});
        }
        lines.push_str(&format!("{ev}\n"));
    }
    let report = e.ingest_jsonl(lines.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(report.accepted, 1010, "{:?}", report.rejections);
    let who = viewer();
    let scoped = e.reader(&who).unwrap();
    let late = scoped.node(&NodeKey::new("Entity", "concept:late-thing")).unwrap();
    let late = late.expect("the 21st record naming it is visible");
    assert!(!late.props.contains_key("mention_count"), "20 hidden events name it: {late:?}");
    // Every event naming `a` is visible, but there are more than the bound reads: its count is
    // not vouched for, so it is left out; the owner sees it.
    let agent = NodeKey::new("Entity", "agent:a");
    let a = scoped.node(&agent).unwrap().expect("visible events name it");
    assert!(!a.props.contains_key("mention_count"), "{a:?}");
    let owner = Principal::local();
    let a = scoped.as_principal(&owner).node(&agent).unwrap().unwrap();
    assert_eq!(a.props["mention_count"], json!(1010));
}

#[test]
fn reads_that_name_entities_keep_to_the_visible_ones() {
    let (_dir, mut e) = engine();
    // `ReadFile` is named only by an event the viewer may not see; `read_file` by an open one.
    let ev = |id: &str, tool: &str, scope: Value| {
        let mut ev = json!({"event_id": id, "event_type": "tool.execute", "occurred_at": "2026-11-20T09:00:00Z",
            "session_id": id, "agent_id": "a", "trace_id": "t",
            "entities": [{"name": tool, "entity_type": "tool"}]});
        if !scope.is_null() {
            ev["scope"] = scope;
        }
        format!("{ev}\n")
    };
    let lines = ev("e1", "read_file", Value::Null)
        + &ev("e2", "ReadFile", json!({"allow_roles": ["operator"]}));
    e.ingest_jsonl(lines.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    e.resolve_entities(&ctxgraph::ResolveConfig::default()).unwrap();
    let owner = e.owner_reader().unwrap();
    let pairs = owner.entity_candidates(None, 10).unwrap();
    assert_eq!(pairs.len(), 1, "the two spellings are a candidate pair: {pairs:?}");
    let hidden = &ctxgraph::entity_id("tool", "ReadFile");
    let visible = &ctxgraph::entity_id("tool", "read_file");
    assert!([&pairs[0].a.id, &pairs[0].b.id].contains(&hidden));
    let who = viewer();
    let reader = owner.as_principal(&who);
    assert!(reader.node(&NodeKey::new("Entity", hidden.as_str())).unwrap().is_none());
    assert!(reader.entity_candidates(None, 10).unwrap().is_empty(), "a pair names a hidden entity");
    assert_eq!(reader.slots_of(hidden).unwrap(), None, "a hidden entity reads as unknown");
    assert!(reader.types_of(hidden).unwrap().is_empty());
    assert!(reader.slots_of(visible).unwrap().is_some());
}
