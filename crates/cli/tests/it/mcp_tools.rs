//! The knowledge tools over MCP (the official SDK's client on `ctxgraph mcp --store`) and their
//! HTTP routes: each tool once with its summary, one bad call each that is a tool error with a
//! stable code, and the fixes of decision memory's interface bugs (an outcome without a reason,
//! `created_by` of an agent, an unlink of a link that does not exist).

use serde_json::{Value, json};

use crate::mcp::{Client, err, ok, runtime, stdio_client};
use crate::server::Server;

/// The summary of an answer: present and readable.
fn summary(v: &Value) -> &str {
    let s = v["summary"].as_str().unwrap_or_default();
    assert!(s.len() > 10, "a readable summary: {v}");
    s
}

async fn memories(c: &Client) {
    ok(c, "save_memory", json!({"id": "m1", "topic": "auth", "content": "Use JWT tokens"})).await;
    ok(
        c,
        "save_memory",
        json!({"id": "m2", "topic": "auth", "content": "Use server sessions", "supersedes": "m1",
               "created_by": "llm"}),
    )
    .await;
    // An outcome without a reason is recorded; one about an unknown memory says so.
    let o = ok(c, "evolve_outcome", json!({"memory_id": "m1", "outcome": "failed"})).await;
    assert_eq!(o["status"], "accepted", "{o}");
    let e = err(c, "evolve_outcome", json!({"memory_id": "nope", "outcome": "failed"})).await;
    assert_eq!(e["code"], "memory.unknown_memory", "{e}");
    // The agent's supersedes is stored as the agent's.
    let evo = ok(c, "evolution", json!({"topic": "auth"})).await;
    assert_eq!(evo["steps"][0]["memory"]["created_by"], "llm", "{evo}");
    assert!(summary(&evo).contains("Use server sessions"), "{evo}");

    let i = ok(c, "memory_impact", json!({"memory_id": "m1"})).await;
    assert_eq!(i["superseded_by"][0]["id"], "m2", "{i}");
    assert!(summary(&i).contains("superseded by m2"), "{i}");
    let e = err(c, "memory_impact", json!({"memory_id": "nope"})).await;
    assert_eq!(e["code"], "memory.not_found", "{e}");

    let found = ok(c, "search_memories", json!({"query": "why did we drop JWT tokens"})).await;
    assert!(!found["hits"].as_array().unwrap().is_empty(), "{found}");
    assert!(summary(&found).starts_with("best match"), "{found}");
    let e = err(c, "search_memories", json!({"context": "m1"})).await;
    assert_eq!(e["code"], "mcp.invalid_arguments", "{e}");

    ok(c, "link_memories", json!({"from": "m2", "to": "m1", "link_type": "implements"})).await;
    let v = ok(
        c,
        "unlink_memories",
        json!({"from": "m2", "to": "m1", "link_type": "implements", "vote": "downvote"}),
    )
    .await;
    assert_eq!(v["status"], "accepted", "{v}");
    ok(c, "unlink_memories", json!({"from": "m2", "to": "m1", "link_type": "implements"})).await;
    // Deleted, it is no longer there to unlink; the reverse direction is named when it exists.
    let e = err(c, "unlink_memories", json!({"from": "m2", "to": "m1", "link_type": "implements"}))
        .await;
    assert_eq!(e["code"], "memory.unknown_link", "{e}");
    let e = err(c, "unlink_memories", json!({"from": "m1", "to": "m2", "link_type": "supersedes"}))
        .await;
    assert_eq!(e["code"], "memory.unknown_link", "{e}");
    assert!(e["message"].as_str().unwrap().contains("swap"), "{e}");

    let roll = ok(c, "weekly_rollup", json!({"since": "2020-01-01"})).await;
    summary(&roll);
}

async fn documents(c: &Client) {
    let d = ok(
        c,
        "add_document",
        json!({"url": "notes/auth.md", "text": "# Auth\n\nWe chose JWT for the API. It was fast to build.\n"}),
    )
    .await;
    assert_eq!(d["status"], "accepted", "{d}");
    summary(&d);
    let id = d["document_id"].as_str().unwrap().to_owned();
    let shown = ok(c, "show_document", json!({"id": "notes/auth.md"})).await;
    assert_eq!(shown["document_id"], id.as_str(), "{shown}");
    let sentence = shown["sections"][0]["paragraphs"][0][0]["sentence_id"].as_str().unwrap();
    assert!(summary(&shown).contains("sentences"), "{shown}");
    // Cite: a fact read from the sentence cites it.
    let f = ok(
        c,
        "record_fact",
        json!({"subject": "API", "subject_type": "project", "predicate": "depends_on",
               "object": "JWT", "object_type": "concept", "cites": sentence}),
    )
    .await;
    assert_eq!(f["fact"]["citations"][0]["sentence_id"], sentence, "{f}");
    let e = err(c, "show_document", json!({"id": "nowhere"})).await;
    assert_eq!(e["code"], "document.not_found", "{e}");
    let e = err(c, "add_document", json!({"url": "x", "text": "y", "format": "pdf"})).await;
    assert_eq!(e["code"], "request.document_format", "{e}");
}

async fn types_slots_checklists(c: &Client, store: &std::path::Path) {
    ok(c, "define_type", json!({"name": "Film", "description": "A motion picture"})).await;
    for (film, genre) in [("Alien", "science fiction"), ("Heat", "crime")] {
        let r = ok(
            c,
            "add_instance",
            json!({"entity": film, "entity_type": "concept", "type": "Film"}),
        )
        .await;
        assert_eq!(r["status"], "accepted", "{r}");
        ok(
            c,
            "set_slot",
            json!({"entity": film, "slot": "genre", "value": genre, "source": "imdb"}),
        )
        .await;
    }
    let types = ok(c, "list_types", json!({})).await;
    assert_eq!(types["types"][0]["instances"].as_array().unwrap().len(), 2, "{types}");
    summary(&types);
    let slots = ok(c, "entity_slots", json!({"entity": "alien"})).await;
    assert_eq!(slots["slots"][0]["value"], "science fiction", "{slots}");
    assert_eq!(slots["types"], json!(["Film"]), "{slots}");
    summary(&slots);

    ok(
        c,
        "define_checklist",
        json!({"name": "IdentifyFilm", "slots": [
            {"name": "film", "expect_labels": ["Film"], "relation": "INSTANCE_OF"},
            {"name": "genre"},
            {"name": "year", "required": false}]}),
    )
    .await;
    let list = ok(c, "list_checklists", json!({})).await;
    assert_eq!(list["checklists"][0]["slots"].as_array().unwrap().len(), 3, "{list}");
    let check =
        ok(c, "check_checklist", json!({"checklist": "IdentifyFilm", "entity": "alien"})).await;
    assert_eq!(check["complete"], true, "{check}");
    // A fact whose object is a slot value, and one whose object is a type.
    let fact = ok(
        c,
        "record_fact",
        json!({"subject": "heat", "predicate": "tagged",
               "object": {"slot": "genre", "value": "Heist"}}),
    )
    .await;
    assert_eq!(fact["fact"]["object_slot"], json!({"slot": "genre", "value": "Heist"}), "{fact}");
    let fact = ok(
        c,
        "record_fact",
        json!({"subject": "heat", "predicate": "tagged", "object": {"type": "Film"}}),
    )
    .await;
    assert_eq!(fact["fact"]["object_type"], "film", "{fact}");
    let e = err(
        c,
        "record_fact",
        json!({"subject": "heat", "predicate": "tagged", "object": {"type": "Novel"}}),
    )
    .await;
    assert_eq!(e["code"], "slots.unknown_type", "{e}");
    let e = err(
        c,
        "record_fact",
        json!({"subject": "heat", "predicate": "tagged", "object": {"slot": "genre"}}),
    )
    .await;
    assert_eq!(e["code"], "request.object_type", "{e}");
    assert!(summary(&check).contains("optional and missing: year"), "{check}");
    let next = ok(
        c,
        "next_question",
        json!({"checklist": "IdentifyFilm", "candidates": ["alien", "concept:heat"]}),
    )
    .await;
    assert_eq!(next["ask"], "genre", "{next}");
    assert_eq!(next["ranking"][0]["gain"], 1.0, "{next}");
    assert!(summary(&next).starts_with("ask about genre"), "{next}");
    // A known answer rules candidates out first.
    let next = ok(
        c,
        "next_question",
        json!({"checklist": "IdentifyFilm", "candidates": ["alien", "heat"],
               "known": {"genre": "crime"}}),
    )
    .await;
    assert_eq!(next["candidates"], json!(["concept:heat"]), "{next}");
    assert_eq!(next["ruled_out"][0]["candidate"], "concept:alien", "{next}");
    assert!(summary(&next).starts_with("1 candidate ruled out"), "{next}");

    ok(
        c,
        "add_goal",
        json!({"name": "watch the classics", "user": "ann", "create_user": true,
               "influences": ["IdentifyFilm"], "prefers": [{"slot": "genre", "value": "Crime"}]}),
    )
    .await;
    let goals = ok(c, "list_goals", json!({"user": "ann"})).await;
    assert_eq!(goals["goals"][0]["influences"], json!(["identifyfilm"]), "{goals}");
    assert_eq!(goals["goals"][0]["prefers"], json!([{"slot": "genre", "value": "Crime"}]));
    summary(&goals);
    // Ann's goal favours crime: Heat is twice as likely, so genre tells H(1/3, 2/3) bits.
    let args = json!({"checklist": "IdentifyFilm", "candidates": ["alien", "heat"], "user": "ann"});
    let next = ok(c, "next_question", args).await;
    assert_eq!(next["goals"][0]["favoured"], json!(["concept:heat"]), "{next}");
    let h = -(1.0 / 3.0 * (1.0f64 / 3.0).log2() + 2.0 / 3.0 * (2.0f64 / 3.0).log2());
    assert!((next["ranking"][0]["gain"].as_f64().unwrap() - h).abs() < 1e-12, "{next}");
    assert_eq!(next["recommendation"]["action"], "ask", "{next}");
    assert!(summary(&next).contains("the prior is biased"), "{next}");
    // The command line gives the same answer.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .arg("--db")
        .arg(store)
        .args(["--json", "checklist", "next", "IdentifyFilm", "--candidates", "alien,heat"])
        .args(["--user", "ann"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), next);

    // One bad call each.
    let e = err(c, "define_type", json!({"name": " "})).await;
    assert_eq!(e["code"], "slots.label_format", "{e}");
    let e = err(c, "add_instance", json!({"entity": "alien", "type": "Novel"})).await;
    assert_eq!(e["code"], "slots.unknown_type", "{e}");
    let e = err(
        c,
        "set_slot",
        json!({"entity": "alien", "slot": "genre", "value": "x", "confidence": 2}),
    )
    .await;
    assert_eq!(e["code"], "slots.confidence_range", "{e}");
    let e = err(c, "entity_slots", json!({"entity": "nobody"})).await;
    assert_eq!(e["code"], "entity.not_found", "{e}");
    let e = err(c, "list_types", json!({"limit": 0})).await;
    assert_eq!(e["code"], "request.limit_range", "{e}");
    let e = err(c, "list_checklists", json!({"colour": "red"})).await;
    assert_eq!(e["code"], "request.unknown_field", "{e}");
    // A checklist with two problems reports both.
    let e = err(
        c,
        "define_checklist",
        json!({"name": "Bad", "slots": [{"name": "a", "cardinality": "TWO"}, {"name": "A"}]}),
    )
    .await;
    assert_eq!(e["violations"].as_array().unwrap().len(), 2, "{e}");
    let e = err(c, "check_checklist", json!({"checklist": "Nope", "entity": "alien"})).await;
    assert_eq!(e["code"], "checklist.unknown", "{e}");
    let e = err(
        c,
        "next_question",
        json!({"checklist": "IdentifyFilm", "candidates": ["alien", "nobody"]}),
    )
    .await;
    assert_eq!(e["code"], "entity.not_found", "{e}");
    let e = err(c, "add_goal", json!({"name": "g", "user": "ann", "influences": ["Nope"]})).await;
    assert_eq!(e["code"], "goal.unknown_checklist", "{e}");
    let e = err(
        c,
        "add_goal",
        json!({"name": "g", "user": "ann", "prefers": [{"slot": " ", "value": "crime"}]}),
    )
    .await;
    assert_eq!(e["code"], "slots.label_format", "{e}");
    let e = err(
        c,
        "next_question",
        json!({"checklist": "IdentifyFilm", "candidates": ["alien", "heat"], "search_cost": 0}),
    )
    .await;
    assert_eq!(e["code"], "checklist.search_cost", "{e}");
    let e = err(c, "list_goals", json!({"user": "nobody"})).await;
    assert_eq!(e["code"], "entity.not_found", "{e}");
}

async fn entities(c: &Client, store: &std::path::Path) {
    for name in ["Alice Smith", "Alice Smyth"] {
        ok(
            c,
            "set_slot",
            json!({"entity": name, "entity_type": "person", "slot": "team", "value": "auth"}),
        )
        .await;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .arg("--db")
        .arg(store)
        .args(["entities", "resolve"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pairs = ok(c, "entity_candidates", json!({})).await;
    let pair = &pairs["pairs"][0];
    assert_eq!(
        (pair["a"]["id"].as_str(), pair["b"]["id"].as_str()),
        (Some("user:alice smith"), Some("user:alice smyth")),
        "{pairs}"
    );
    summary(&pairs);
    let r = ok(
        c,
        "reject_entities",
        json!({"a": "Alice Smith", "b": "user:alice smyth",
        "reason": "two people"}),
    )
    .await;
    assert_eq!(r["status"], "accepted", "{r}");
    let rejected = ok(c, "entity_candidates", json!({"status": "rejected"})).await;
    assert_eq!(rejected["pairs"][0]["status"], "rejected", "{rejected}");
    let m = ok(c, "merge_entities", json!({"a": "Alice Smith", "b": "Alice Smyth"})).await;
    assert!(summary(&m).contains("merged"), "{m}");
    let e = err(c, "entity_candidates", json!({"status": "maybe"})).await;
    assert_eq!(e["code"], "request.candidate_status", "{e}");
    let e = err(c, "merge_entities", json!({"a": "nobody", "b": "Alice Smith"})).await;
    assert_eq!(e["code"], "entity.not_found", "{e}");
    let e = err(c, "reject_entities", json!({"a": "Alice Smith"})).await;
    assert_eq!(e["code"], "mcp.invalid_arguments", "{e}");
}

#[test]
fn knowledge_tools_over_stdio() {
    let dir = tempfile::TempDir::new().unwrap();
    let store = dir.path().join("g.ctxg");
    runtime().block_on(async {
        let client = stdio_client(&["--store".as_ref(), store.as_os_str()]).await;
        memories(&client).await;
        documents(&client).await;
        types_slots_checklists(&client, &store).await;
        entities(&client, &store).await;
        client.cancel().await.unwrap();
    });
}

#[test]
fn knowledge_routes_over_http_with_roles_and_tenants() {
    let s = Server::start();
    let w = &s.keys.writer;
    let (status, d) = s.post(
        "/v1/documents",
        w,
        &json!({"url": "https://example.org/a.txt", "text": "Alpha is ready. Beta is not."}),
    );
    assert_eq!(status, 200, "{d}");
    assert_eq!(d["sentences"], 2, "{d}");
    let (status, shown) =
        s.post("/v1/documents/show", w, &json!({"id": "https://example.org/a.txt"}));
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["format"], "text", "{shown}");
    let (status, _) = s.post("/v1/types", w, &json!({"name": "Film"}));
    assert_eq!(status, 200);
    let (status, r) = s.post(
        "/v1/slots",
        w,
        &json!({"entity": "Alien", "entity_type": "concept", "slot": "genre", "value": "sf"}),
    );
    assert_eq!(status, 200, "{r}");
    let (status, c) =
        s.post("/v1/checklists", w, &json!({"name": "Films", "slots": [{"name": "genre"}]}));
    assert_eq!(status, 200, "{c}");
    let (status, check) =
        s.post("/v1/checklists/check", w, &json!({"checklist": "Films", "entity": "alien"}));
    assert_eq!((status, check["complete"].as_bool()), (200, Some(true)), "{check}");
    let (status, next) =
        s.post("/v1/checklists/next", w, &json!({"checklist": "Films", "candidates": ["alien"]}));
    assert_eq!(status, 200, "{next}");
    assert!(next.get("ask").is_none(), "one candidate: nothing to ask: {next}");
    let (status, types) = s.get("/v1/types", w);
    assert_eq!((status, types["types"][0]["name"].as_str()), (200, Some("Film")), "{types}");
    let (status, lists) = s.get("/v1/checklists?limit=5", w);
    assert_eq!(status, 200, "{lists}");
    let (status, pairs) = s.get("/v1/entities/candidates?status=all", w);
    assert_eq!((status, pairs["pairs"].as_array().map(Vec::len)), (200, Some(0)), "{pairs}");
    let (status, goals) = s.get("/v1/goals", w);
    assert_eq!(status, 200, "{goals}");
    let (status, e) = s.post(
        "/v1/memories/links/vote",
        w,
        &json!({"from": "a", "to": "b", "link_type": "temporal"}),
    );
    assert_eq!((status, e["error"]["code"].as_str()), (404, Some("memory.not_found")), "{e}");

    // A reader reads but may not write; another tenant sees none of it.
    let r = &s.keys.reader;
    let (status, _) = s.post("/v1/slots/of", r, &json!({"entity": "alien"}));
    assert_eq!(status, 200);
    let (status, e) = s.post("/v1/types", r, &json!({"name": "Book"}));
    assert_eq!((status, e["error"]["code"].as_str()), (403, Some("access.forbidden")), "{e}");
    let o = &s.keys.other;
    let (status, e) = s.post("/v1/documents/show", o, &json!({"id": "https://example.org/a.txt"}));
    assert_eq!((status, e["error"]["code"].as_str()), (404, Some("document.not_found")), "{e}");
    let (status, e) = s.post("/v1/slots/of", o, &json!({"entity": "alien"}));
    assert_eq!((status, e["error"]["code"].as_str()), (404, Some("entity.not_found")), "{e}");
}

/// The README's tool table lists every MCP tool, each with an example call.
#[test]
fn the_readme_tool_table_lists_every_tool() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    for tool in crate::mcp::TOOLS {
        let row = readme.lines().find(|l| l.starts_with(&format!("| `{tool}` |")));
        let row = row.unwrap_or_else(|| panic!("README: no row for the tool {tool}"));
        assert!(
            row.trim_end().ends_with("}` |"),
            "README: {tool}'s row has an example call: {row}"
        );
    }
}
