//! `ctxgraph eval traces` through the real binary: the JSON report's shape, every family asked,
//! the rankings file rescored independently, and a kept store reused as it is.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Dir;

const FAMILIES: [&str; 10] = [
    "session_failure",
    "request_failure",
    "user_request",
    "after_failure",
    "who_involved",
    "outage",
    "when_did",
    "agent_activity",
    "decision",
    "fact",
];

fn eval(d: &Dir, store: &str) -> Value {
    let out = d
        .cmd(&[
            "--json",
            "eval",
            "traces",
            "--events",
            "1500",
            "--per-family",
            "3",
            "--store",
            store,
            "--rankings",
            "rankings.jsonl",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn eval_traces_reports_every_family_and_rankings_that_rescore_alike() {
    let d = Dir::new();
    let report = eval(&d, "runs.ctxg");
    assert_eq!(report["events"], 1500);
    assert_eq!(report["k"], 10);
    assert_eq!(report["ingest"]["accepted"], 1500, "{report}");
    assert!(report["ingest"]["duplicates"].as_u64().unwrap() > 0, "some lines are sent twice");
    assert!(report["decisions"].as_u64().unwrap() >= 3);
    assert!(report["facts"].as_u64().unwrap() >= 3);
    assert_eq!(report["questions"], 3 * FAMILIES.len());
    for system in ["recall", "bm25"] {
        let per = &report["systems"][system];
        assert_eq!(per["overall"]["n"], 3 * FAMILIES.len());
        for family in FAMILIES {
            let t = &per[family];
            assert_eq!(t["n"], 3, "{system} {family}: {t}");
            for metric in
                ["recall_any@1", "recall_all@5", "recall_all@10", "recall_any@10", "ndcg@10"]
            {
                let v = t[metric].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&v), "{system} {family} {metric} = {v}");
            }
            assert!(t.get("recall_all@20").is_none(), "k is 10: {t}");
        }
    }

    // Rescore recall_all@10 from the rankings file alone.
    let text = std::fs::read_to_string(d.tmp.path().join("rankings.jsonl")).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3 * FAMILIES.len());
    let mut found: BTreeMap<(String, &str), (f64, f64)> = BTreeMap::new();
    for line in &lines {
        let family = line["family"].as_str().unwrap().to_owned();
        assert!(FAMILIES.contains(&family.as_str()), "{line}");
        assert!(!line["question"].as_str().unwrap().is_empty());
        for (slot, value) in line["anchors"].as_object().unwrap() {
            assert!(line["question"].as_str().unwrap().contains(value.as_str().unwrap()), "{slot}");
        }
        let evidence: Vec<&str> =
            line["evidence"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
        assert!(!evidence.is_empty());
        assert!(
            evidence
                .iter()
                .all(|k| k.split_once('/').is_some_and(|(l, id)| !l.is_empty() && !id.is_empty()))
        );
        for system in ["ranked", "bm25"] {
            let ranked: Vec<&str> =
                line[system].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
            assert!(ranked.len() <= 10);
            let all = evidence.iter().all(|e| ranked.contains(e));
            let entry = found.entry((family.clone(), system)).or_default();
            entry.0 += f64::from(u8::from(all));
            entry.1 += 1.0;
        }
    }
    for ((family, system), (hits, n)) in found {
        let name = if system == "ranked" { "recall" } else { "bm25" };
        let reported = report["systems"][name][&family]["recall_all@10"].as_f64().unwrap();
        assert!((reported - hits / n).abs() < 1e-9, "{name} {family}: {reported} vs {hits}/{n}");
    }

    // The kept store is reused: nothing new is written, and the same questions score the same.
    let again = eval(&d, "runs.ctxg");
    assert_eq!(again["ingest"]["accepted"], 0, "{again}");
    assert_eq!(again["systems"], report["systems"]);
}
