//! A running `ctxgraph serve` in a temporary data directory on a free port, with principals of two
//! tenants, and a small JSON client over it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

/// Keys of the principals every server fixture has.
pub(crate) struct Keys {
    /// Tenant acme, roles writer and operator.
    pub(crate) writer: String,
    /// Tenant acme, role reader (may not write, not an operator).
    pub(crate) reader: String,
    /// Tenant acme, admin.
    pub(crate) admin: String,
    /// Tenant globex, writer.
    pub(crate) other: String,
}

pub(crate) struct Server {
    pub(crate) dir: TempDir,
    pub(crate) child: Child,
    pub(crate) base: String,
    pub(crate) keys: Keys,
    /// Options given to `serve` besides the data directory and the address.
    options: Vec<String>,
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ctxgraph"))
}

pub(crate) fn add_principal(data: &Path, name: &str, tenant: &str, roles: &[&str]) -> String {
    let mut cmd = Command::new(bin());
    cmd.args(["--json", "principal", "add", name, "--tenant", tenant, "--data"]).arg(data);
    for r in roles {
        cmd.args(["--role", r]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["key"].as_str().unwrap().to_owned()
}

impl Server {
    pub(crate) fn start() -> Server {
        Server::start_with(&[])
    }

    /// A server started with `options` added to `serve`'s command line.
    pub(crate) fn start_with(options: &[&str]) -> Server {
        let options: Vec<String> = options.iter().map(|o| (*o).to_owned()).collect();
        let dir = TempDir::new().unwrap();
        let data = dir.path().join("data");
        let keys = Keys {
            writer: add_principal(&data, "alice", "acme", &["writer", "operator"]),
            reader: add_principal(&data, "bob", "acme", &["reader"]),
            admin: add_principal(&data, "root", "acme", &["admin"]),
            other: add_principal(&data, "carol", "globex", &["writer"]),
        };
        let (child, base) = spawn(&data, &options);
        Server { dir, child, base, keys, options }
    }

    pub(crate) fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Stop with SIGTERM and wait; true when it exited successfully.
    pub(crate) fn terminate(&mut self) -> bool {
        let pid = self.child.id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(killed.success());
        self.child.wait().unwrap().success()
    }

    pub(crate) fn restart(&mut self) {
        let (child, base) = spawn(&self.data(), &self.options);
        self.child = child;
        self.base = base;
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A request with an optional key; returns the status and the JSON body (or the text as a
    /// JSON string).
    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
    ) -> (u16, Value) {
        let agent: ureq::Agent =
            ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let url = self.url(path);
        let auth = key.map(|k| format!("Bearer {k}"));
        let resp = match (method, body) {
            ("GET", _) => {
                let mut r = agent.get(&url);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            (_, b) => {
                let mut r = agent.post(&url).header("Content-Type", "application/json");
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.send(b.unwrap_or("{}"))
            }
        };
        let mut resp = resp.unwrap();
        let status = resp.status().as_u16();
        let text = resp.body_mut().with_config().limit(64 << 20).read_to_string().unwrap();
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, v)
    }

    /// POST a body over a raw connection, writing on one thread and reading the response on
    /// this one: a server that answers before reading all of a too-large body (and then closes
    /// the connection) is still heard. Returns the status and the JSON body.
    pub(crate) fn post_raw(&self, path: &str, key: &str, body: Vec<u8>) -> (u16, Value) {
        use std::io::{Read, Write};
        let addr = self.base.trim_start_matches("http://").to_owned();
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        let mut writer = stream.try_clone().unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let sending = std::thread::spawn(move || {
            // The server may close before taking everything: a failed write is expected.
            let _ = writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(&body));
        });
        let mut response = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => response.extend_from_slice(&chunk[..n]),
            }
        }
        let _ = sending.join();
        let text = String::from_utf8_lossy(&response).into_owned();
        let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let json = text.split("\r\n\r\n").nth(1).unwrap_or("");
        // A chunked body: the JSON object sits between the chunk-size lines.
        let start = json.find('{').unwrap_or(0);
        let end = json.rfind('}').map_or(json.len(), |e| e + 1);
        (status, serde_json::from_str(&json[start..end]).unwrap_or(Value::Null))
    }

    pub(crate) fn get(&self, path: &str, key: &str) -> (u16, Value) {
        self.call("GET", path, Some(key), None)
    }

    pub(crate) fn post(&self, path: &str, key: &str, body: &Value) -> (u16, Value) {
        self.call("POST", path, Some(key), Some(&body.to_string()))
    }
}

fn spawn(data: &Path, options: &[String]) -> (Child, String) {
    spawn_serve(&[], data, options, Stdio::null())
}

/// `ctxgraph [global…] serve --addr 127.0.0.1:0 --data DATA [options…]` with its stderr to
/// `stderr`; the child and the base URL its first line gives.
pub(crate) fn spawn_serve(
    global: &[&str],
    data: &Path,
    options: &[String],
    stderr: Stdio,
) -> (Child, String) {
    let mut child = Command::new(bin())
        .args(global)
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(data)
        .args(options)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let line = crate::first_line(&mut child);
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .to_owned();
    (child, base)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An event record of session `session`.
pub(crate) fn event(id: &str, session: &str, minute: u32, extra: Value) -> Value {
    let mut e = json!({
        "event_id": id, "event_type": "tool.execute",
        "occurred_at": format!("2026-11-20T09:{minute:02}:00Z"),
        "session_id": session, "agent_id": "planner", "trace_id": "t1",
        "tool_name": "sql_query", "status": "failed",
        "payload": {"error": format!("timeout of the orders database in {id}")},
        "entities": [{"name": "orders-db", "entity_type": "service", "role": "target"}],
    });
    if let (Some(o), Some(x)) = (e.as_object_mut(), extra.as_object()) {
        for (k, v) in x {
            o.insert(k.clone(), v.clone());
        }
    }
    e
}
