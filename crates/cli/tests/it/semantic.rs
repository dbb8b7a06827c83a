//! The semantic layer through the real binary: consolidate, semantic search, retention and
//! reprojection with and without the archive.

use serde_json::Value;

use super::Dir;

fn json(d: &Dir, args: &[&str]) -> Value {
    let out = d.cmd(args).assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn consolidate_search_retention_and_archive() {
    let d = Dir::new();
    d.cmd(&["demo"]).assert().success();
    let c = json(&d, &["--json", "consolidate", "--similar-k", "3"]);
    assert_eq!(c["indexed_vectors"], 400);
    assert!(c["index_lists"].as_u64().unwrap() >= 1);
    let similar = c["similar_edges"].as_u64().unwrap();
    assert!(similar > 0 && similar <= 400 * 3, "{c}");
    let again = json(&d, &["--json", "consolidate", "--similar-k", "3"]);
    assert_eq!(again["similar_edges"], similar, "idempotent");
    d.cmd(&["consolidate", "--similar-threshold", "1.5"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--similar-threshold 1.5 is out of range"));

    let hits =
        json(&d, &["--json", "search", "--semantic", "could not send the email", "--limit", "3"]);
    let hits = hits.as_array().unwrap();
    assert_eq!(hits.len(), 3);
    assert!(hits.iter().all(|h| h["score"].as_f64().unwrap() <= 1.0001));

    // The demo trace spans days: as of a month after its newest event everything is archived.
    let plan = json(&d, &["--json", "retention", "--as-of", "2027-06-01T00:00:00Z"]);
    assert_eq!(plan["applied"], false);
    assert_eq!(plan["archive"], 400);
    d.cmd(&["retention", "--as-of", "yesterday"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--as-of `yesterday` is not an RFC 3339 time"));
    // As of the newest event, the default: the two-day trace is hot and warm, nothing archived.
    let plan = json(&d, &["--json", "retention"]);
    assert_eq!(plan["archived"], 0);
    assert_eq!(plan["hot"].as_u64().unwrap() + plan["warm"].as_u64().unwrap(), 400);
    let applied = json(&d, &["--json", "retention", "--apply", "--as-of", "2027-06-01T00:00:00Z"]);
    assert_eq!(applied["applied"], true);
    assert_eq!(applied["archived"], 400);
    let events = |s: &Value| s["nodes"]["Event"].as_u64().unwrap_or(0);
    assert_eq!(events(&json(&d, &["--json", "stats"])), 0);
    let archived = 400;
    d.cmd(&["reproject"]).assert().success();
    assert_eq!(events(&json(&d, &["--json", "stats"])), 400 - archived, "archived stay out");
    d.cmd(&["reproject", "--include-archive"]).assert().success();
    assert_eq!(events(&json(&d, &["--json", "stats"])), 400, "and come back when asked");
}

#[test]
fn recall_explains_each_item_and_checks_its_flags() {
    let d = Dir::new();
    d.cmd(&["demo"]).assert().success();
    let out = d.cmd(&["recall", "why did send_email fail", "--k", "8"]).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("intent why, classified"), "{text}");
    assert!(
        text.contains("relevance ") && text.contains(" × salience ") && text.contains(" × focus "),
        "{text}"
    );
    let pack =
        json(&d, &["--json", "recall", "what touched mail-relay", "--intent", "who", "--k", "5"]);
    assert_eq!(pack["intent"], "who_what");
    assert_eq!(pack["intent_classified"], false);
    let items = pack["items"].as_array().unwrap();
    assert_eq!(items.len(), 5);
    for item in items {
        let f = &item["factors"];
        let product = ["relevance", "path_weight", "confidence", "salience", "focus", "matched"]
            .iter()
            .map(|k| f[*k].as_f64().unwrap())
            .product::<f64>();
        assert!((item["score"].as_f64().unwrap() - product).abs() < 1e-9);
    }
    let budget = json(&d, &["--json", "recall", "timeout", "--k", "30", "--budget-tokens", "120"]);
    let used: u64 =
        budget["items"].as_array().unwrap().iter().map(|i| i["tokens"].as_u64().unwrap()).sum();
    assert!(used <= 120);
    d.cmd(&["recall", "x", "--intent", "because"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--intent `because` is not an intent"));
    d.cmd(&["recall", "x", "--since", "monday"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--since `monday` is not an RFC 3339 time"));
}
