//! Placeholder crate root replaced during bring-up.
