//! The crash, soak and serve harnesses, short: correctness only (nothing lost, reprojection
//! equal, no failed request, the figures present), never timings.

use serde_json::Value;

use super::Dir;

fn run_json(d: &Dir, args: &[&str]) -> Value {
    let out = d.cmd(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn bench_crash_loses_no_acknowledged_record_and_reprojects_to_the_same_graph() {
    let d = Dir::new();
    let dir = d.tmp.path().to_str().unwrap().to_owned();
    let r = run_json(
        &d,
        &["--json", "bench", "crash", "--kills", "6", "--events-per-run", "200", "--dir", &dir],
    );
    assert_eq!(r["kills"], 6);
    assert_eq!(r["lost"], 0, "{r}");
    assert_eq!(r["graph_behind_log"], 0, "{r}");
    assert_eq!(r["reproject_equal"], true, "{r}");
    // Both writers were killed, in turn.
    let writers: Vec<&str> =
        r["writers"].as_array().unwrap().iter().map(|w| w["writer"].as_str().unwrap()).collect();
    assert_eq!(writers, ["ingest", "serve"]);
    let per_writer: u64 =
        r["writers"].as_array().unwrap().iter().map(|w| w["acknowledged"].as_u64().unwrap()).sum();
    assert_eq!(r["acknowledged"].as_u64(), Some(per_writer));
}

#[test]
fn bench_soak_mixes_every_kind_without_errors_and_samples_the_server() {
    let d = Dir::new();
    let dir = d.tmp.path().to_str().unwrap().to_owned();
    let r = run_json(
        &d,
        &[
            "--json",
            "bench",
            "soak",
            "--clients",
            "2",
            "--seconds",
            "3",
            "--warmup",
            "2",
            "--preload",
            "300",
            "--sample-every",
            "1",
            "--dir",
            &dir,
        ],
    );
    assert_eq!(r["errors"], 0, "{r}");
    let kinds: Vec<&str> =
        r["kinds"].as_array().unwrap().iter().map(|k| k["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ingest", "recall", "search", "get", "timeline"]);
    assert!(r["requests"].as_u64().unwrap() > 0, "{r}");
    // The started server's memory: samples from before the warm-up (negative times), the warm
    // one at its end (time 0) and the measured part's.
    let curve = r["memory"].as_array().unwrap();
    let at: Vec<f64> = curve.iter().map(|s| s["seconds"].as_f64().unwrap()).collect();
    assert!(at[0] < 0.0 && at.contains(&0.0) && at.iter().any(|&t| t > 0.0), "{r}");
    assert!(curve.iter().all(|s| s["rss_bytes"].as_u64().unwrap() > 0), "{r}");
    assert!(r["max_over_warm"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["warm_rss_bytes"].as_u64().unwrap() > 0, "{r}");
    // The store the load wrote to is the started server's, in the directory given.
    assert!(d.tmp.path().join("tenants").join("bench.ctxg").exists());
}

#[test]
fn bench_serve_reports_the_started_servers_cpu_per_request() {
    let d = Dir::new();
    let dir = d.tmp.path().to_str().unwrap().to_owned();
    let r = run_json(
        &d,
        &[
            "--json",
            "bench",
            "serve",
            "--clients",
            "1,2",
            "--seconds",
            "1",
            "--preload",
            "200",
            "--dir",
            &dir,
        ],
    );
    let rounds = r["rounds"].as_array().unwrap();
    let clients: Vec<u64> = rounds.iter().map(|x| x["clients"].as_u64().unwrap()).collect();
    assert_eq!(clients, [1, 2]);
    for round in rounds {
        assert_eq!(round["errors"], 0, "{r}");
        // Every request costs the server some CPU time: a figure above zero, for each round.
        assert!(round["server_cpu_ms_per_request"].as_f64().unwrap() > 0.0, "{r}");
        assert!(round["server_peak_rss_bytes"].as_u64().unwrap() > 0, "{r}");
        // The engine's own recall time, read from the started server's metrics, is part of
        // what each client waited for.
        let engine = round["engine_recall_ms_mean"].as_f64().unwrap();
        let client = round["recall_ms_mean"].as_f64().unwrap();
        assert!(engine > 0.0 && engine <= client, "{r}");
        // The writer's index upkeep during the round, read from the same metrics.
        let upkeep = &round["index_upkeep"];
        assert!(upkeep["steps"].is_u64() && upkeep["writer_ms"].as_f64().unwrap() >= 0.0, "{r}");
    }
}
