//! The BERT normaliser and pre-tokeniser, one character at a time, exactly as the reference
//! tokenizer (Hugging Face `tokenizers`, `BertNormalizer` + `BertPreTokenizer`) does them.
//!
//! The normaliser cleans the text (drops control, format, private-use and unassigned
//! characters, turns whitespace into spaces), surrounds CJK ideographs with spaces, strips
//! accents (canonical decomposition, then drops non-spacing marks) and lowercases. Each step
//! works character by character, so the whole is a function from one input character to a
//! string. That function comes from [`crate::unicode_tables`], read off the reference for every
//! code point by `models/distill.py`; precomposed Hangul syllables (their jamo) and CJK
//! ideographs (a word each) are computed here instead of listed.
//!
//! The pre-tokeniser then splits the normalised text on spaces and isolates every punctuation
//! character as a word of its own.

use std::sync::LazyLock;

use crate::unicode_tables::{MAPPED, PUNCTUATION, REMOVED, SPACES};

/// What the normaliser makes of one input character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Normalized {
    /// Deleted.
    Removed,
    /// A space: a word boundary.
    Space,
    /// This character.
    Char(char),
    /// This string (lowercased, accent-stripped or decomposed).
    Str(&'static str),
    /// A precomposed Hangul syllable's jamo: leading consonant, vowel, optional trailing
    /// consonant.
    Jamo(char, char, Option<char>),
    /// A CJK ideograph, which the normaliser surrounds with spaces: a word of its own.
    Cjk(char),
}

/// The normalisation of one character.
pub(crate) fn normalize_char(c: char) -> Normalized {
    let cp = u32::from(c);
    if in_ranges(REMOVED, cp) {
        Normalized::Removed
    } else if SPACES.binary_search(&cp).is_ok() {
        Normalized::Space
    } else if let Ok(i) = MAPPED.binary_search_by_key(&cp, |&(k, _)| k) {
        MAPPED.get(i).map_or(Normalized::Char(c), |&(_, s)| Normalized::Str(s))
    } else if let Some(jamo) = hangul_jamo(cp) {
        jamo
    } else if is_cjk(cp) {
        Normalized::Cjk(c)
    } else {
        Normalized::Char(c)
    }
}

/// Whether the pre-tokeniser isolates this (normalised) character as punctuation.
pub(crate) fn is_punctuation(c: char) -> bool {
    in_ranges(PUNCTUATION, u32::from(c))
}

/// What an ASCII input character becomes, precomputed from the same tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ascii {
    /// Deleted.
    Skip,
    /// A word boundary.
    Space,
    /// A punctuation character: a word of its own.
    Punct(u8),
    /// A character of a word (already lowercased).
    Letter(u8),
    /// Anything else: take the general path.
    Other,
}

/// The ASCII fast path: one lookup instead of a few binary searches.
pub(crate) static ASCII: LazyLock<[Ascii; 128]> = LazyLock::new(|| {
    let mut table = [Ascii::Other; 128];
    for (b, slot) in (0u8..128).zip(table.iter_mut()) {
        *slot = match normalize_char(char::from(b)) {
            Normalized::Removed => Ascii::Skip,
            Normalized::Space => Ascii::Space,
            Normalized::Char(c) => ascii_char(c),
            Normalized::Str(s) => {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => ascii_char(c),
                    _ => Ascii::Other,
                }
            }
            Normalized::Jamo(..) | Normalized::Cjk(_) => Ascii::Other,
        };
    }
    table
});

fn ascii_char(c: char) -> Ascii {
    match u8::try_from(c) {
        Ok(b) if b.is_ascii() && c == ' ' => Ascii::Space,
        Ok(b) if b.is_ascii() && is_punctuation(c) => Ascii::Punct(b),
        Ok(b) if b.is_ascii() => Ascii::Letter(b),
        _ => Ascii::Other,
    }
}

fn in_ranges(ranges: &[(u32, u32)], cp: u32) -> bool {
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The canonical decomposition of a precomposed Hangul syllable (Unicode, chapter 3.12).
fn hangul_jamo(cp: u32) -> Option<Normalized> {
    const S_BASE: u32 = 0xAC00;
    const S_COUNT: u32 = 11_172;
    const N_COUNT: u32 = 588;
    const T_COUNT: u32 = 28;
    let s = cp.checked_sub(S_BASE).filter(|&s| s < S_COUNT)?;
    let lead = char::from_u32(0x1100 + s / N_COUNT)?;
    let vowel = char::from_u32(0x1161 + (s % N_COUNT) / T_COUNT)?;
    let trail = match s % T_COUNT {
        0 => None,
        t => Some(char::from_u32(0x11A7 + t)?),
    };
    Some(Normalized::Jamo(lead, vowel, trail))
}

/// The CJK ranges of the BERT normaliser's `handle_chinese_chars`.
fn is_cjk(cp: u32) -> bool {
    matches!(
        cp,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// The normalised form of `text` (as the reference normaliser returns it), for tests.
#[cfg(test)]
pub(crate) fn normalize_str(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match normalize_char(c) {
            Normalized::Removed => {}
            Normalized::Space => out.push(' '),
            Normalized::Char(n) => out.push(n),
            Normalized::Str(s) => out.push_str(s),
            Normalized::Jamo(l, v, t) => {
                out.push(l);
                out.push(v);
                out.extend(t);
            }
            Normalized::Cjk(n) => {
                out.push(' ');
                out.push(n);
                out.push(' ');
            }
        }
    }
    out
}
