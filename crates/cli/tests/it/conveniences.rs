//! Conveniences: shell completions, and `ctxgraph.toml` for `serve`.

use std::process::{Child, Command, Stdio};

use super::Dir;
use super::server::add_principal;

#[test]
fn completions_are_printed_for_each_shell() {
    let d = Dir::new();
    for (shell, marker) in
        [("bash", "_ctxgraph()"), ("zsh", "#compdef ctxgraph"), ("fish", "complete -c ctxgraph")]
    {
        let out = d.cmd(&["completions", shell]).assert().success();
        let script = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        assert!(script.contains(marker), "{shell}: {}", &script[..script.len().min(200)]);
        assert!(script.contains("recall"), "{shell} completes the commands");
    }
    d.cmd(&["completions", "tcsh"]).assert().code(2);
}

/// `ctxgraph serve` in `dir` with `args`; its first line, and the child to stop.
fn serve_in(dir: &std::path::Path, args: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .current_dir(dir)
        .env_remove("CTXGRAPH_DATA")
        .env_remove("CTXGRAPH_CONFIG")
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = crate::first_line(&mut child);
    (child, line)
}

fn recall_status(base: &str, key: &str, question: &str) -> u16 {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let body = serde_json::json!({ "question": question }).to_string();
    agent
        .post(&format!("{base}/v1/recall"))
        .header("Authorization", &format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .send(body.as_bytes())
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn serve_reads_ctxgraph_toml_under_its_flags() {
    let d = Dir::new();
    let key = add_principal(&d.tmp.path().join("d"), "alice", "acme", &["writer"]);
    d.write(
        "ctxgraph.toml",
        "[serve]\ndata = \"d\"\naddr = \"127.0.0.1:0\"\nmax_question_words = 2\n",
    );
    let (mut child, line) = serve_in(d.tmp.path(), &[]);
    let base =
        line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line}")).to_owned();
    // The data directory and the question limit came from the file.
    assert_eq!(recall_status(&base, &key, "why fail"), 200);
    assert_eq!(recall_status(&base, &key, "why did it fail"), 413);
    child.kill().unwrap();
    child.wait().unwrap();

    // A flag wins over the file.
    let (mut child, line) = serve_in(d.tmp.path(), &["--max-question-words", "10"]);
    let base = line.trim().strip_prefix("listening on ").unwrap().to_owned();
    assert_eq!(recall_status(&base, &key, "why did it fail"), 200);
    child.kill().unwrap();
    child.wait().unwrap();

    // A misspelt key is refused before anything starts.
    d.write("bad.toml", "[serve]\nadress = \"127.0.0.1:0\"\n");
    let out = d.cmd(&["serve", "--config", "bad.toml"]).assert().code(2);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("unknown field `adress`"), "{err}");
}
