//! Exact-match entity resolution (tier 1 of seed 000): name normalisation and deterministic ids.

use unicode_normalization::UnicodeNormalization;

/// The normalised form of an entity name: NFKC, lower-cased, trimmed, inner whitespace collapsed
/// to one space. Two names with the same normalised form and entity type are the same entity.
pub fn normalize_name(name: &str) -> String {
    if name.is_ascii() {
        return normalize_ascii(name);
    }
    let folded: String = name.nfkc().flat_map(char::to_lowercase).collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`normalize_name`] of an ASCII name, without the Unicode machinery: ASCII is its own NFKC
/// form, lower-casing stays in ASCII, and its white space (what `char::is_whitespace` calls
/// white space) is tab, line feed, vertical tab, form feed, carriage return and space.
fn normalize_ascii(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut gap = false;
    for b in name.bytes() {
        if matches!(b, b'\t'..=b'\r' | b' ') {
            gap = !out.is_empty();
        } else {
            if gap {
                out.push(' ');
                gap = false;
            }
            out.push(char::from(b.to_ascii_lowercase()));
        }
    }
    out
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
    fn ascii_names_normalise_as_the_unicode_rule_does() {
        let slow = |name: &str| -> String {
            let folded: String = name.nfkc().flat_map(char::to_lowercase).collect();
            folded.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        // Every ASCII byte, alone, between letters and around white space.
        let mut names: Vec<String> = (0u8..128)
            .map(|b| char::from(b).to_string())
            .flat_map(|c| [c.clone(), format!("Ab{c}Cd"), format!(" {c} x\t{c}\u{b}"), c.repeat(3)])
            .collect();
        names.extend(
            ["", "  ", "Orders  DB", "\tBilling\r\nAPI\x0c", "a\x1cb", "GPT-4o mini ", "x\u{b}y"]
                .map(str::to_owned),
        );
        for name in &names {
            assert_eq!(normalize_name(name), slow(name), "{name:?}");
        }
    }

    #[test]
    fn different_types_are_different_entities() {
        assert_ne!(entity_id("tool", "search"), entity_id("service", "search"));
    }
}
