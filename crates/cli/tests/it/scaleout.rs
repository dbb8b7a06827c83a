//! `--db redis://…` is recognised and refused clearly: no command runs on the scale-out
//! backend yet, and the URL must not be taken for a file path.

use assert_cmd::Command;
use tempfile::TempDir;

fn ctxgraph(dir: &TempDir, db: &str, args: &[&str]) -> (i32, String) {
    let out = Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("CTXGRAPH_DB")
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn a_scale_out_url_is_refused_naming_the_command_and_nothing_is_created() {
    let dir = TempDir::new().unwrap();
    for args in [&["stats"][..], &["init"], &["ingest", "-"], &["serve"], &["mcp"]] {
        let (code, err) = ctxgraph(&dir, "redis://127.0.0.1:6379/team-a", args);
        assert_eq!(code, 2, "{args:?}: {err}");
        let expected = format!("backend redis:// is not yet supported by command `{}`", args[0]);
        assert!(err.contains(&expected), "{args:?}: {err}");
        assert!(err.contains("db.backend_unsupported"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file was made of the URL");
}

#[test]
fn a_malformed_scale_out_url_names_its_field_value_and_rule() {
    let dir = TempDir::new().unwrap();
    let (code, err) = ctxgraph(&dir, "redis://127.0.0.1:0/team", &["stats"]);
    assert_eq!(code, 2);
    assert!(err.contains("port `0`") && err.contains("url.port"), "{err}");
    let (_, err) = ctxgraph(&dir, "redis://127.0.0.1:6379/a/b", &["stats"]);
    assert!(err.contains("name `a/b`") && err.contains("url.store_name"), "{err}");
}

#[test]
fn completions_need_no_store() {
    let dir = TempDir::new().unwrap();
    let out = Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .args(["--db", "redis://127.0.0.1:6379/team", "completions", "bash"])
        .output()
        .unwrap();
    assert!(out.status.success());
}
