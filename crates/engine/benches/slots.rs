//! Criterion benches of checklists over 1,000 films with four slots each: `next_slot` over every
//! film as a candidate, `check_checklist` of one film, and one `set_slot` write (append, stage-1
//! projection and fsync).

#![allow(clippy::unwrap_used, missing_docs, reason = "a bench fails loudly on the first surprise")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxgraph::{Engine, EngineOptions, EntityArg, NextOptions, OpenMode, Projection, ValidRecord};
use serde_json::json;

const FILMS: usize = 1000;

/// Deterministic pseudo-random numbers (an LCG), so every run benches the same store.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A store with the Film type, `FILMS` films with genre, decade, and (some) country and studio,
/// and the IdentifyFilm checklist.
fn store(dir: &tempfile::TempDir) -> Engine {
    let mut engine = Engine::open(
        &dir.path().join("b.ctxg"),
        OpenMode::CreateIfMissing,
        EngineOptions::default(),
    )
    .unwrap();
    let mut rng = Lcg(7);
    let mut lines = vec![json!({"record_type": "type", "name": "Film"})];
    for i in 0..FILMS {
        let entity = format!("concept:film {i}");
        lines.push(json!({"record_type": "instance_of", "type": "Film",
            "entity": {"name": format!("film {i}"), "entity_type": "concept", "at": "2026-11-20T09:00:00Z"}}));
        lines.push(json!({"record_type": "slot", "entity": entity, "slot": "genre",
            "value": format!("genre {}", rng.below(8)), "confidence": 0.8, "source": "catalogue"}));
        lines.push(json!({"record_type": "slot", "entity": entity, "slot": "decade",
            "value": format!("{}0s", 193 + rng.below(10))}));
        if rng.below(10) < 7 {
            lines.push(json!({"record_type": "slot", "entity": entity, "slot": "country",
                "value": format!("country {}", rng.below(10))}));
        }
        if rng.below(2) == 0 {
            lines.push(json!({"record_type": "slot", "entity": entity, "slot": "studio",
                "value": format!("studio {}", rng.below(40))}));
        }
    }
    lines.push(json!({"record_type": "checklist", "name": "IdentifyFilm", "slots": [
        {"name": "film", "expect_labels": ["Film"], "relation": "INSTANCE_OF"},
        {"name": "genre"}, {"name": "era", "expect_labels": ["decade"]},
        {"name": "country", "required": false}, {"name": "studio", "required": false}]}));
    let records: Vec<ValidRecord> =
        lines.iter().map(|l| engine.validate(&l.to_string()).unwrap()).collect();
    for r in engine.ingest_batch(&records, Projection::Inline, true).unwrap() {
        r.unwrap();
    }
    engine
}

fn checklists(c: &mut Criterion) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut engine = store(&dir);
    let candidates: Vec<String> = (0..FILMS).map(|i| format!("concept:film {i}")).collect();

    let mut g = c.benchmark_group("checklist");
    g.throughput(Throughput::Elements(FILMS as u64));
    g.bench_function("next_slot, 1000 candidates x 5 specs", |b| {
        b.iter(|| {
            let snap = engine.owner_reader().unwrap();
            snap.next_slot("IdentifyFilm", &candidates, &NextOptions::default())
                .unwrap()
                .unwrap()
                .ranking
                .len()
        });
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("check_checklist, one entity", |b| {
        b.iter(|| {
            let snap = engine.owner_reader().unwrap();
            snap.check_checklist("IdentifyFilm", "concept:film 7").unwrap().unwrap().complete()
        });
    });
    g.sample_size(20);
    let mut n = 0u64;
    g.bench_function("set_slot, one record with fsync", |b| {
        b.iter(|| {
            n += 1;
            let entity = EntityArg::Id(format!("concept:film {}", n % FILMS as u64));
            let value = format!("v{n}");
            engine.set_slot(&entity, "note", &value, Some(0.5), Some("bench")).unwrap()
        });
    });
    g.finish();
}

criterion_group!(benches, checklists);
criterion_main!(benches);
