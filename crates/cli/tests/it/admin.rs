//! Administration and tenancy: the principal registry under concurrent `principal add|remove`
//! processes, tenant-scoped principal listing, and `--as` confined to its tenant's store.

use std::process::Command;

use serde_json::Value;

fn ctxgraph() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ctxgraph"));
    c.env_remove("CTXGRAPH_DB").env_remove("CTXGRAPH_DATA").env_remove("CTXGRAPH_AS");
    c
}

/// The principals `principal list --json` prints.
fn listed(data: &std::path::Path) -> Vec<String> {
    let out =
        ctxgraph().args(["--json", "principal", "list", "--data"]).arg(data).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Array(Vec::new()));
    v.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn concurrent_principal_processes_lose_no_change() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for i in 0..8 {
        crate::server::add_principal(&data, &format!("old{i}"), "acme", &["admin"]);
    }
    // Adds and removes as separate processes, all at once.
    let children: Vec<_> = (0..24)
        .map(|i| {
            let mut c = ctxgraph();
            if i % 3 == 0 {
                c.args(["principal", "remove", &format!("old{}", i / 3), "--data"]);
            } else {
                c.args([
                    "--json",
                    "principal",
                    "add",
                    &format!("new{i}"),
                    "--tenant",
                    "acme",
                    "--data",
                ]);
            }
            c.arg(&data).stdout(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    let mut keys = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        if let Ok(v) = serde_json::from_slice::<Value>(&out.stdout)
            && let Some(k) = v["key"].as_str()
        {
            keys.push((v["name"].as_str().unwrap().to_owned(), k.to_owned()));
        }
    }
    assert_eq!(keys.len(), 16, "every add printed a key");
    let mut names = listed(&data);
    names.sort();
    let mut expected: Vec<String> = keys.iter().map(|(n, _)| n.clone()).collect();
    expected.sort();
    assert_eq!(names, expected, "every printed key is stored and every removed admin is gone");
    let reg = ctxgraph::Principals::open(&data.join("principals.json")).unwrap();
    for (name, key) in &keys {
        assert_eq!(reg.authenticate(key).unwrap().name(), name);
    }
}

#[test]
fn an_admin_lists_only_its_own_tenants_principals() {
    let s = crate::server::Server::start();
    let (status, list) = s.get("/v1/principals", &s.keys.admin);
    assert_eq!(status, 200, "{list}");
    let mut names: Vec<&str> = list["principals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["alice", "bob", "root"], "globex's carol is not acme's to see: {list}");
    assert!(!list.to_string().contains("globex"), "{list}");
}

#[test]
fn as_a_principal_of_another_tenant_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    crate::server::add_principal(&data, "alice", "acme", &["writer"]);
    crate::server::add_principal(&data, "carol", "globex", &["admin"]);
    crate::server::add_principal(&data, "dora", "default", &["reader"]);
    let events = tmp.path().join("in.jsonl");
    let line = serde_json::json!({"event_id": "e1", "event_type": "tool.execute",
        "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s", "agent_id": "a",
        "trace_id": "t", "tool_name": "deploy", "status": "failed",
        "payload": {"error": "acme's secret deploy failure"}});
    std::fs::write(&events, format!("{line}\n")).unwrap();
    std::fs::create_dir_all(data.join("tenants")).unwrap();
    let acme = data.join("tenants/acme.ctxg");
    let run = |db: &std::path::Path, args: &[&str]| {
        ctxgraph().arg("--db").arg(db).args(args).output().unwrap()
    };
    let out = run(&acme, &["--as", "alice", "ingest", events.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    // The tenant's own principal reads its store, with the data directory's registry.
    let out = run(&acme, &["--as", "alice", "--json", "stats"]);
    assert!(out.status.success(), "{out:?}");
    // Another tenant's admin is refused before anything is read.
    let out = run(&acme, &["--as", "carol", "search", "deploy", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("access.wrong_tenant") && stderr.contains("globex"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("secret"), "{out:?}");
    // A store outside a data directory holds the default tenant.
    let plain = tmp.path().join("plain.ctxg");
    let registry = data.join("principals.json");
    let reg = registry.to_str().unwrap();
    let out = run(&plain, &["ingest", events.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let out = run(&plain, &["--principals", reg, "--as", "alice", "recall", "deploy failure"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("access.wrong_tenant"), "{out:?}");
    let out = run(&plain, &["--principals", reg, "--as", "dora", "--json", "stats"]);
    assert!(out.status.success(), "{out:?}");
}
