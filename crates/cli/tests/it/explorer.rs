//! The web explorer as the binary serves it: `/` and every file the page loads come with their
//! content type and a Content-Security-Policy that keeps the page on the server's own origin,
//! the page's own files name no other origin, and `ctxgraph ui` serves it on a store with a
//! key of its own that reads as the store's owner.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::Dir;
use crate::server::Server;

/// GET `url`: status, content type, Content-Security-Policy and body.
fn fetch(url: &str, key: Option<&str>) -> (u16, String, String, String) {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut req = agent.get(url);
    if let Some(k) = key {
        req = req.header("Authorization", &format!("Bearer {k}"));
    }
    let mut resp = req.call().unwrap();
    let header = |name: &str| {
        resp.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned()
    };
    let (ct, csp) = (header("content-type"), header("content-security-policy"));
    let status = resp.status().as_u16();
    let body = resp.body_mut().with_config().limit(8 << 20).read_to_string().unwrap();
    (status, ct, csp, body)
}

/// The `/ui/...` files a text loads: quoted `/ui/FILE` (attributes) and `./FILE` (module
/// imports).
fn references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (prefix, quote) in [("\"/ui/", '"'), ("'./", '\''), ("\"./", '"')] {
        for (at, _) in text.match_indices(prefix) {
            let rest = &text[at + prefix.len()..];
            let file = &rest[..rest.find(quote).unwrap_or(0)];
            if !file.is_empty() && !file.contains(char::is_whitespace) {
                out.push(format!("/ui/{file}"));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn the_explorer_and_its_files_are_served_with_their_types_and_a_same_origin_policy() {
    let s = Server::start();
    let (status, ct, csp, index) = fetch(&s.url("/"), None);
    assert_eq!(status, 200);
    assert!(ct.starts_with("text/html"), "{ct}");
    for directive in ["default-src 'self'", "script-src 'self'", "connect-src 'self'"] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{csp}");

    // Every file the page and its scripts load, transitively.
    let mut todo = references(&index);
    let mut seen = Vec::new();
    while let Some(path) = todo.pop() {
        if seen.contains(&path) {
            continue;
        }
        let (status, ct, csp, body) = fetch(&s.url(&path), None);
        assert_eq!(status, 200, "{path}");
        let want = if path.ends_with(".js") {
            "text/javascript"
        } else if path.ends_with(".css") {
            "text/css"
        } else {
            "text/plain"
        };
        assert!(ct.starts_with(want), "{path}: {ct}");
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        // The page's own files name no other origin (the library's license text does, in a
        // comment, and it loads nothing).
        if !path.contains("cytoscape") {
            for scheme in ["http://", "https://", "//cdn", "//fonts"] {
                assert!(!body.contains(scheme), "{path} names {scheme}");
            }
            todo.extend(references(&body));
        }
        seen.push(path);
    }
    for file in
        ["/ui/app.js", "/ui/views.js", "/ui/graph.js", "/ui/style.css", "/ui/cytoscape.min.js"]
    {
        assert!(seen.iter().any(|p| p == file), "{file} is not loaded by the page: {seen:?}");
    }
    assert!(!index.contains("http://") && !index.contains("https://"));
    assert_eq!(fetch(&s.url("/ui/nothing.js"), None).0, 404);
    // The files need no key; the API still does.
    assert_eq!(fetch(&s.url("/v1/stats"), None).0, 401);
}

/// `ctxgraph --db <store> GLOBAL... ui`: the process, the base URL and the key it printed.
fn start_ui(d: &Dir, global: &[&str]) -> (std::process::Child, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .env_remove("CTXGRAPH_AS")
        .arg("--db")
        .arg(d.db())
        .args(global)
        .arg("ui")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let line = crate::first_line(&mut child);
    let url = line.trim().strip_prefix("explorer at ").unwrap_or_else(|| panic!("{line:?}"));
    let (base, key) = url.split_once("/#key=").unwrap_or_else(|| panic!("{url}"));
    (child, base.to_owned(), key.to_owned())
}

#[test]
fn ctxgraph_ui_serves_the_explorer_with_a_key_of_the_stores_owner() {
    let d = Dir::new();
    d.cmd(&["demo"]).assert().success();
    let (mut child, base, key) = start_ui(&d, &[]);
    let (base, key) = (base.as_str(), key.as_str());
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    assert!(key.starts_with("cgk_") && key.len() > 40, "{key}");

    let (status, ct, _, _) = fetch(&format!("{base}/"), None);
    assert_eq!((status, ct.starts_with("text/html")), (200, true));
    let (status, _, _, stats) = fetch(&format!("{base}/v1/stats"), Some(key));
    assert_eq!(status, 200, "{stats}");
    let stats: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["events"], 400, "{stats}");
    let (status, _, _, me) = fetch(&format!("{base}/v1/whoami"), Some(key));
    assert_eq!(status, 200, "{me}");
    assert_eq!(serde_json::from_str::<Value>(&me).unwrap()["owner"], true, "{me}");
    let (status, _, _, store) = fetch(&format!("{base}/v1/stats/store"), Some(key));
    assert_eq!(status, 200, "{store}");
    let store: Value = serde_json::from_str(&store).unwrap();
    assert_eq!(store["log_length"], 400, "the owner sees the store's figures: {store}");
    let (status, _, _, tiers) = fetch(&format!("{base}/v1/stats/retention"), Some(key));
    assert_eq!(status, 200, "{tiers}");
    let tiers: Value = serde_json::from_str(&tiers).unwrap();
    let sum: u64 =
        ["hot", "warm", "cold", "archive"].iter().map(|t| tiers[t].as_u64().unwrap()).sum();
    assert_eq!((sum, tiers["archived"].as_u64()), (400, Some(0)), "{tiers}");
    assert!(tiers["hot"].as_u64().unwrap() > 0, "the newest events are hot: {tiers}");
    // A node with its edge groups, and a page of a hub's neighbours with a cursor.
    let (status, _, _, node) = fetch(&format!("{base}/v1/nodes/service:ci-runner"), Some(key));
    assert_eq!(status, 200, "{node}");
    let node: Value = serde_json::from_str(&node).unwrap();
    let entity = &node["nodes"][0];
    let id = entity["node"]["id"].as_str().unwrap();
    let refs = entity["edges"].as_array().unwrap().iter().find(|g| g["type"] == "REFERENCES");
    assert_eq!(refs.unwrap()["direction"], "in", "{node}");
    let page = |cursor: &str| {
        let (status, _, _, body) = fetch(
            &format!(
                "{base}/v1/nodes/{}/neighbors?label=Entity&edge_type=REFERENCES&direction=in&limit=3{cursor}",
                id.replace(':', "%3A")
            ),
            Some(key),
        );
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };
    let first = page("");
    assert_eq!(first["neighbors"].as_array().unwrap().len(), 3, "{first}");
    let next = first["next_cursor"].as_str().unwrap();
    let second = page(&format!("&cursor={next}"));
    let ids = |v: &Value| -> Vec<String> {
        v["neighbors"].as_array().unwrap().iter().map(|n| n["node"]["id"].to_string()).collect()
    };
    assert!(ids(&second).iter().all(|i| !ids(&first).contains(i)), "{first} {second}");
    // Any other key is refused.
    assert_eq!(fetch(&format!("{base}/v1/stats"), Some("cgk_0000")).0, 401);
    let _ = child.kill();
    let _ = child.wait();

    // With --as, the page reads as that principal of the registry beside the store.
    crate::server::add_principal(d.tmp.path(), "viewer", "default", &["visitor"]);
    let (mut child, base, key) = start_ui(&d, &["--as", "viewer"]);
    let (status, _, _, me) = fetch(&format!("{base}/v1/whoami"), Some(&key));
    assert_eq!(status, 200, "{me}");
    let me: Value = serde_json::from_str(&me).unwrap();
    assert_eq!((&me["name"], &me["owner"]), (&Value::from("viewer"), &Value::from(false)), "{me}");
    assert_eq!(fetch(&format!("{base}/v1/stats/store"), Some(&key)).0, 403);
    let _ = child.kill();
    let _ = child.wait();

    // No store: a clear error, nothing created.
    let missing = d.tmp.path().join("none.ctxg");
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .arg("--db")
        .arg(&missing)
        .arg("ui")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no store at"));
    assert!(!missing.exists());
}
