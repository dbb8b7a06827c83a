//! Placeholder crate root replaced during bring-up.
/// x
pub fn f(a: u64, s: &str) -> serde_json::Value {
    serde_json::json!({"a": a, "s": s, "n": {"x": [a, a]}})
}
