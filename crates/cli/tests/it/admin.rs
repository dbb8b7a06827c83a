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
