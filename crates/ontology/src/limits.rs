//! Size bounds on incoming records, so one writer cannot exhaust memory or disk.

/// Configurable size limits checked by validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted record, in bytes of JSON text.
    pub max_record_bytes: usize,
    /// Longest id (event, session, agent, trace, edge), in bytes.
    pub max_id_bytes: usize,
    /// Longest entity name, in bytes.
    pub max_name_bytes: usize,
    /// Most entity references on one event.
    pub max_entities: usize,
    /// Deepest nesting of the payload object.
    pub max_payload_depth: usize,
}

impl Limits {
    /// No limits: for records read back from the log, which were checked on the way in.
    pub const fn unlimited() -> Limits {
        Limits {
            max_record_bytes: usize::MAX,
            max_id_bytes: usize::MAX,
            max_name_bytes: usize::MAX,
            max_entities: usize::MAX,
            max_payload_depth: usize::MAX,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_record_bytes: 1 << 20,
            max_id_bytes: 256,
            max_name_bytes: 512,
            max_entities: 256,
            max_payload_depth: 32,
        }
    }
}
