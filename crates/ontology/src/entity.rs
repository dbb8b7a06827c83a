//! Exact-match entity resolution (tier 1 of seed 000): name normalisation and deterministic ids.

use unicode_normalization::UnicodeNormalization;

/// The normalised form of an entity name: NFKC, lower-cased, trimmed, inner whitespace collapsed
/// to one space. Two names with the same normalised form and entity type are the same entity.
pub fn normalize_name(name: &str) -> String {
    let folded: String = name.nfkc().flat_map(char::to_lowercase).collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The id of the entity named `name` of type `entity_type`: `{entity_type}:{normalized name}`.
///
/// Readable on purpose, so an explicit edge record can name an entity without a lookup.
pub fn entity_id(entity_type: &str, name: &str) -> String {
    format!("{entity_type}:{}", normalize_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_folds_case_width_and_whitespace() {
        assert_eq!(normalize_name("  Orders   DB "), "orders db");
        assert_eq!(normalize_name("ＯＲＤＥＲＳ"), "orders");
        assert_eq!(entity_id("service", "Billing API"), "service:billing api");
    }

    #[test]
    fn different_types_are_different_entities() {
        assert_ne!(entity_id("tool", "search"), entity_id("service", "search"));
    }
}
