//! `--as`: the CLI acting as a principal sees only what the policy lets it see, may write only
//! with a writing role, and is refused commands that read without the policy.

use serde_json::{Value, json};

use super::Dir;

fn setup() -> (Dir, String) {
    let d = Dir::new();
    let ev = |id: &str, extra: Value| {
        let mut e = json!({"event_id": id, "event_type": "tool.execute", "tool_name": "deploy",
            "occurred_at": format!("2026-11-20T10:00:0{}Z", &id[1..]), "session_id": "s",
            "agent_id": "a", "trace_id": "t", "status": "failed",
            "payload": {"message": format!("deploy of the billing service failed ({id})")}});
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        format!("{e}\n")
    };
    let text = ev("e1", json!({}))
        + &ev("e2", json!({"scope": {"allow_roles": ["operator"]}, "parent_event_id": "e1"}))
        + &ev("e3", json!({"pii": {"pending_review": true}}));
    let file = d.write("in.jsonl", &text);
    d.cmd(&["ingest", file.to_str().unwrap()]).assert().success();
    d.cmd(&["enrich"]).assert().success();
    let mut reg = ctxgraph::Principals::open(&d.tmp.path().join("principals.json")).unwrap();
    reg.add("viewer", "default", &["viewer".into()]).unwrap();
    reg.add("op", "default", &["operator".into(), "writer".into()]).unwrap();
    let file = file.to_str().unwrap().to_owned();
    (d, file)
}

fn json_out(d: &Dir, args: &[&str]) -> Value {
    let out = d.cmd(args).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn a_principal_sees_only_what_its_roles_allow() {
    let (d, _) = setup();
    let ids = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["node"]["id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let owner = json_out(&d, &["recall", "deploy of the billing service", "--json"]);
    for id in ["e1", "e2", "e3"] {
        assert!(ids(&owner).contains(&id.to_owned()), "the owner sees {id}: {owner}");
    }
    let viewer =
        json_out(&d, &["--as", "viewer", "recall", "deploy of the billing service", "--json"]);
    assert!(ids(&viewer).contains(&"e1".to_owned()), "{viewer}");
    for hidden in ["e2", "e3"] {
        assert!(!ids(&viewer).contains(&hidden.to_owned()), "viewer sees {hidden}: {viewer}");
        assert!(!viewer.to_string().contains(&format!("({hidden})")), "{viewer}");
    }
    let op = json_out(&d, &["--as", "op", "recall", "deploy of the billing service", "--json"]);
    assert!(ids(&op).contains(&"e2".to_owned()) && !ids(&op).contains(&"e3".to_owned()), "{op}");

    d.cmd(&["--as", "viewer", "get", "e2"]).assert().code(1);
    d.cmd(&["--as", "op", "get", "e2"]).assert().success();
    let session = json_out(&d, &["--as", "viewer", "session", "s", "--json"]);
    assert_eq!(session["events"].as_array().unwrap().len(), 1, "{session}");
    let stats = json_out(&d, &["--as", "viewer", "stats", "--json"]);
    assert_eq!(stats["events"], json!(1), "{stats}");
    let search = json_out(&d, &["--as", "viewer", "search", "billing", "--json"]);
    assert_eq!(search.as_array().unwrap().len(), 1, "{search}");
}

#[test]
fn writes_need_a_writing_role_and_the_owners_reads_are_refused() {
    let (d, file) = setup();
    let before = d.store_files();
    let out = d.cmd(&["--as", "viewer", "ingest", &file]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("access.forbidden"), "{out:?}");
    assert_eq!(d.store_files(), before, "a refused write changes nothing");
    d.cmd(&["--as", "op", "ingest", &file]).assert().success();
    // Graph reads go through the principal's reader: no edge to what it may not see.
    let edges = |who: &str| -> String {
        let out = d.cmd(&["--as", who, "neighbors", "e1", "--json"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(edges("op").contains("\"e2\""), "{}", edges("op"));
    assert!(!edges("viewer").contains("\"e2\""), "{}", edges("viewer"));
    let view = d.cmd(&["--as", "viewer", "view", "temporal", "--json"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&view.stdout).contains("\"e2\""), "{view:?}");
    // The log and rebuilding derived data are the owner's.
    for args in [&["log"][..], &["reproject"][..]] {
        let out = d.cmd(&[&["--as", "op"][..], args].concat()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("access.owner_only"), "{out:?}");
    }
    let out = d.cmd(&["--as", "nobody", "stats"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("access.unknown_principal"), "{out:?}");
}
