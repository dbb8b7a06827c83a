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

#[test]
fn oversized_questions_are_refused_before_any_work() {
    let s = crate::server::Server::start();
    let k = &s.keys.reader;
    // A 7.9 MB question, as in the report that pinned a core for minutes.
    let huge =
        serde_json::json!({"question": "why did the orders database time out ".repeat(210_000)});
    let (status, body) = s.post_raw("/v1/recall", k, huge.to_string().into_bytes());
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("limit.question_chars")),
        "{body}"
    );
    let wordy = "why ".repeat(300);
    for (path, field) in
        [("/v1/recall", "question"), ("/v1/search", "query"), ("/v1/memories/search", "query")]
    {
        let (status, body) = s.post(path, k, &serde_json::json!({field: wordy}));
        assert_eq!(status, 413, "{path}: {body}");
        assert_eq!(body["error"]["code"], "limit.question_words", "{path}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains(field), "{body}");
    }
    // At the limit, the question is answered.
    let (status, body) =
        s.post("/v1/recall", k, &serde_json::json!({"question": "why ".repeat(256)}));
    assert_eq!(status, 200, "{body}");

    // The CLI refuses with the same code.
    let tmp = tempfile::tempdir().unwrap();
    let out = ctxgraph()
        .arg("--db")
        .arg(tmp.path().join("none.ctxg"))
        .args(["recall", &wordy])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("limit.question_words"), "{out:?}");
    for args in [["search", wordy.as_str()], ["memory", "search"]] {
        let mut c = ctxgraph();
        c.arg("--db").arg(tmp.path().join("none.ctxg")).args(args);
        if args[0] == "memory" {
            c.arg(&wordy);
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("limit.question_words"), "{args:?}: {stderr}");
    }
}

#[test]
fn question_limits_are_configurable_on_serve() {
    let s = crate::server::Server::start_with(&[
        "--max-question-words",
        "3",
        "--max-question-chars",
        "40",
    ]);
    let k = &s.keys.reader;
    let (status, body) = s.post("/v1/search", k, &serde_json::json!({"query": "a b c d"}));
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("limit.question_words")),
        "{body}"
    );
    let (status, body) = s.post("/v1/recall", k, &serde_json::json!({"question": "x".repeat(41)}));
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("limit.question_chars")),
        "{body}"
    );
    assert_eq!(s.post("/v1/search", k, &serde_json::json!({"query": "a b c"})).0, 200);
}

/// SIGTERM while a client holds a request open (its body never finishes): the server stops
/// within its request deadline instead of waiting for the client, and what it acknowledged
/// before is still there after a restart.
#[test]
fn sigterm_is_honoured_while_a_request_stalls() {
    use std::io::Write;
    let mut s = crate::server::Server::start_with(&["--request-timeout", "1"]);
    let k = s.keys.writer.clone();
    let (status, _) =
        s.post("/v1/events", &k, &serde_json::json!({"events": [crate::server::event("e1", "s1", 0, serde_json::json!({}))]}));
    assert_eq!(status, 200);
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut stalled = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stalled,
        "POST /v1/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {k}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"events\": ["
    )
    .unwrap();
    stalled.flush().unwrap();
    // The server has the request once it answers another one on a later connection.
    assert_eq!(s.get("/v1/stats", &k).0, 200);
    let pid = s.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    // Without the cut-off the server would wait for the stalled body forever: give up (and
    // fail) after a minute, sixty times the deadline.
    let mut exited = None;
    for _ in 0..600 {
        if let Some(st) = s.child.try_wait().unwrap() {
            exited = Some(st);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let status = exited.expect("the server did not stop after SIGTERM while a request stalled");
    assert!(status.success(), "{status:?}");
    drop(stalled);
    s.restart();
    assert_eq!(s.get("/v1/events/e1", &k).0, 200, "the acknowledged write survived");
}

#[test]
fn a_fully_rejected_ingest_creates_no_store() {
    let d = crate::Dir::new();
    let f = d.write("in.jsonl", "{bad\n{\"event_id\": \"x\"}\n");
    for args in [vec!["ingest", "--strict"], vec!["ingest"]] {
        let mut args = args.clone();
        args.push(f.to_str().unwrap());
        d.cmd(&args).assert().code(2);
        assert!(d.store_files().is_empty(), "{args:?} left a store: {:?}", d.store_files().len());
    }
    // A store that existed before is kept, even when nothing new goes in.
    d.cmd(&["init"]).assert().success();
    d.cmd(&["ingest", "--strict", f.to_str().unwrap()]).assert().code(2);
    assert!(d.db().exists());
}

/// `ctxgraph serve --addr ADDR` in `data`: its first line, read once it answers `/healthz` on
/// loopback, then SIGTERM: what it wrote on stderr, after it exited cleanly.
fn serve_and_stop(addr: &str, data: &std::path::Path) -> (String, String) {
    use std::io::Read;
    let mut child = ctxgraph()
        .args(["serve", "--addr", addr, "--data"])
        .arg(data)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line = crate::first_line(&mut child);
    // Once it answers, it handles SIGTERM.
    let port = line.trim().rsplit(':').next().unwrap().to_owned();
    ureq::get(&format!("http://127.0.0.1:{port}/healthz")).call().unwrap();
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(child.wait().unwrap().success());
    (line, stderr)
}

#[test]
fn serving_plain_http_beyond_loopback_warns() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (line, stderr) = serve_and_stop("0.0.0.0:0", &data);
    assert!(line.starts_with("listening on http://0.0.0.0:"), "{line}");
    assert!(stderr.contains("warning: serving plain HTTP"), "{stderr}");
    // Loopback gets no warning.
    let (_, stderr) = serve_and_stop("127.0.0.1:0", &data);
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// Store files of a tenant, the registry and its lock are readable by the owner only.
#[cfg(unix)]
#[test]
fn tenant_stores_and_the_registry_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let s = crate::server::Server::start();
    let (status, _) = s.post(
        "/v1/events",
        &s.keys.writer,
        &serde_json::json!({"events": [crate::server::event("e1", "s1", 0, serde_json::json!({}))]}),
    );
    assert_eq!(status, 200);
    for name in
        ["tenants/acme.ctxg", "tenants/acme.ctxg-wal", "principals.json", "principals.json.lock"]
    {
        let mode = std::fs::metadata(s.data().join(name)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
}

#[test]
fn gzip_otlp_bodies_are_accepted() {
    use std::io::Write;
    const PB: &[u8] = include_bytes!("../../../otlp/tests/fixtures/fake_agent.pb");
    let s = crate::server::Server::start();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(PB).unwrap();
    let body = gz.finish().unwrap();
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let post = |encoding: &str, body: &[u8]| {
        let mut resp = agent
            .post(&s.url("/v1/traces"))
            .header("Authorization", &format!("Bearer {}", s.keys.writer))
            .header("Content-Type", "application/x-protobuf")
            .header("Content-Encoding", encoding)
            .send(body)
            .unwrap();
        (resp.status().as_u16(), resp.body_mut().read_to_vec().unwrap())
    };
    let (status, out) = post("gzip", &body);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&out));
    let (_, stats) = s.get("/v1/stats", &s.keys.writer);
    assert!(stats["events"].as_u64().unwrap() > 0, "{stats}");
    let (status, out) = post("br", &body);
    assert_eq!(status, 415, "{}", String::from_utf8_lossy(&out));
    let (status, out) = post("gzip", PB);
    assert_eq!(status, 400, "not gzip: {}", String::from_utf8_lossy(&out));
}

/// A line that is not JSON on `ctxgraph mcp`'s stdin gets a JSON-RPC parse error, and the
/// session goes on: the next request is answered.
#[test]
fn garbage_on_mcp_stdio_gets_a_parse_error() {
    use std::io::{BufRead, Write};
    let tmp = tempfile::tempdir().unwrap();
    let mut child = ctxgraph()
        .args(["mcp", "--store"])
        .arg(tmp.path().join("m.ctxg"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut next = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or(Value::Null)
    };
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}});
    // Both at once: the parse error is answered before the request after it.
    stdin.write_all(format!("this is not json\n{init}\n").as_bytes()).unwrap();
    stdin.flush().unwrap();
    let error = next();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert!(error["id"].is_null(), "{error}");
    let answer = next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
