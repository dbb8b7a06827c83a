//! Name analysis for entity resolution tiers 2 and 3: words, skeletons, version families and
//! single edits. Everything here is a pure function of the names (and, for tier 2, of the cosine
//! of their embeddings, computed by the caller).
//!
//! # Words
//! A name splits into words at anything that is not a letter or a digit, between letters and
//! digits, and at camel-case humps (`ReadFile` → read, file; `HTTPServer` → http, server). A `.`
//! between digits stays inside a number (`3.11`). Words are NFKC-normalised and lower-cased. The
//! **skeleton** is the letters and digits of the words, concatenated: `read_file`, `read-file`,
//! `ReadFile` and `readfile` all have the skeleton `readfile`.
//!
//! # Families (tier 3)
//! A word is a **variant** word when it is a version or a variant suffix:
//! - a number with a dot (`3.11`), glued to the letters before it (`python3`), with up to two
//!   letters written right after it (`4o`, `70b`), or of at most two digits (`gpt-4`);
//! - `v` written right before a number (`v2`);
//! - one of [`VARIANT_WORDS`] (`mini`, `turbo`, `preview`, `pro`, …).
//!
//! A plain number of three or more digits written apart (`tck-2045`, `report 2027`) is an
//! identifier, not a version: it stays in the base, so numbered tickets are no family.
//!
//! The other words, in order, are the **base**. Two names with the same base (of at least two
//! letters or digits) and different variant words are one family: `gpt-4`, `GPT-4o` and
//! `gpt-4-turbo` (base `gpt`), `python3.11` and `python3.12` (base `python`), `v1 api` and
//! `v2 api` (base `api`). The caller drops families too large to be versions of one thing.

use ctxgraph_ontology::normalize_name;

/// Words that name a variant of a thing rather than another thing, stripped with version numbers
/// to find a family's base.
pub(crate) const VARIANT_WORDS: &[&str] = &[
    "o", "mini", "nano", "turbo", "preview", "pro", "plus", "max", "lite", "ultra", "flash",
    "instruct", "chat", "latest", "beta", "alpha", "rc", "dev", "stable", "lts", "small", "medium",
    "large", "xl",
];

/// Confidence of a SAME_AS candidate whose names have the same skeleton.
pub(crate) const SKELETON_CONFIDENCE: f64 = 0.97;
/// Confidence of a SAME_AS candidate whose names have the same words in another order.
pub(crate) const WORD_ORDER_CONFIDENCE: f64 = 0.93;
/// Confidence of a SAME_AS candidate whose skeletons are one letter edit apart.
pub(crate) const ONE_EDIT_CONFIDENCE: f64 = 0.91;
/// Added per further rule that fired, up to [`MAX_CANDIDATE_CONFIDENCE`].
const CORROBORATION: f64 = 0.01;
/// A candidate is never certain: only a person's merge is.
const MAX_CANDIDATE_CONFIDENCE: f64 = 0.99;
/// The single-edit rule needs skeletons of at least this many characters…
pub(crate) const MIN_EDIT_SKELETON: usize = 6;
/// …and the edit inside a word of at least this many characters (so `get` / `set` is no typo).
const MIN_EDIT_WORD: usize = 5;
/// Longest skeleton the single-edit rule considers (it is blocked by deletion variants).
pub(crate) const MAX_EDIT_SKELETON: usize = 64;

/// One word of a name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    number: bool,
    /// Written right before the next word, with no separator.
    glued: bool,
}

/// The forms of a name the rules compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NameForms {
    /// Letters and digits of the words, lower case.
    pub(crate) skeleton: Vec<char>,
    /// Skeleton length of each word, in order (words without letters or digits omitted).
    spans: Vec<usize>,
    /// The words, in order.
    pub(crate) words: Vec<String>,
    /// The words sorted and joined by spaces (the word-order rule's key).
    pub(crate) word_set: String,
    /// The version family, when the name has a base of two or more characters.
    pub(crate) family: Option<Family>,
}

/// A name's place in a version family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Family {
    /// The base words joined by spaces, e.g. `gpt`.
    pub(crate) base: String,
    /// Skeleton length of the base.
    base_len: usize,
    /// The variant words' skeleton, e.g. `4o`; empty for the family's root.
    variant: String,
    /// The variant words as written, joined by spaces, for justifications.
    versions: String,
}

impl NameForms {
    /// Analyse a display name.
    pub(crate) fn new(name: &str) -> NameForms {
        let words = words(name);
        let mut skeleton = Vec::new();
        let mut spans = Vec::new();
        for w in &words {
            let before = skeleton.len();
            skeleton.extend(w.text.chars().filter(|c| c.is_alphanumeric()));
            if skeleton.len() > before {
                spans.push(skeleton.len() - before);
            }
        }
        let mut sorted: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        sorted.sort_unstable();
        let word_set = sorted.join(" ");
        let family = family(&words);
        NameForms {
            skeleton,
            spans,
            words: words.into_iter().map(|w| w.text).collect(),
            word_set,
            family,
        }
    }

    /// The skeleton as a string.
    pub(crate) fn skeleton_str(&self) -> String {
        self.skeleton.iter().collect()
    }

    /// Skeleton length of the word holding skeleton position `pos` (the last word past the end).
    fn word_len_at(&self, pos: usize) -> usize {
        let mut end = 0;
        for &len in &self.spans {
            end += len;
            if pos < end {
                return len;
            }
        }
        self.spans.last().copied().unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
}

/// Split a name into words (see the module docs).
fn words(name: &str) -> Vec<Word> {
    let cs: Vec<char> = name.chars().collect();
    let mut out: Vec<Word> = Vec::new();
    let mut cur = String::new();
    let mut class: Option<Class> = None;
    let flush = |cur: &mut String, class: Option<Class>, glued: bool, out: &mut Vec<Word>| {
        if !cur.is_empty() {
            let text = normalize_name(cur);
            out.push(Word { text, number: class == Some(Class::Digit), glued });
            cur.clear();
        }
    };
    for (i, &c) in cs.iter().enumerate() {
        let next = cs.get(i + 1).copied();
        let this = if c.is_numeric() {
            Some(Class::Digit)
        } else if c.is_alphabetic() {
            Some(Class::Letter)
        } else if c == '.' && class == Some(Class::Digit) && next.is_some_and(char::is_numeric) {
            Some(Class::Digit)
        } else {
            None
        };
        let Some(this) = this else {
            flush(&mut cur, class, false, &mut out);
            class = None;
            continue;
        };
        let boundary = match (class, this) {
            (Some(Class::Letter), Class::Digit) | (Some(Class::Digit), Class::Letter) => true,
            (Some(Class::Letter), Class::Letter) => {
                let prev = cs[i - 1];
                (prev.is_lowercase() && c.is_uppercase())
                    || (prev.is_uppercase()
                        && c.is_uppercase()
                        && next.is_some_and(char::is_lowercase))
            }
            _ => false,
        };
        if boundary {
            flush(&mut cur, class, true, &mut out);
        }
        cur.push(c);
        class = Some(this);
    }
    flush(&mut cur, class, false, &mut out);
    glue_versions(out)
}

/// `v` + number → one version word (`v2`); number + up to two letters ending the run → one
/// version word (`4o`, `70b`).
fn glue_versions(words: Vec<Word>) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::with_capacity(words.len());
    let mut it = words.into_iter().peekable();
    while let Some(mut w) = it.next() {
        if w.text == "v"
            && w.glued
            && it.peek().is_some_and(|n| n.number)
            && let Some(n) = it.next()
        {
            w = Word { text: format!("v{}", n.text), number: true, glued: n.glued };
        }
        if w.number
            && w.glued
            && it.peek().is_some_and(|n| !n.number && !n.glued && n.text.chars().count() <= 2)
            && let Some(n) = it.next()
        {
            w = Word { text: format!("{}{}", w.text, n.text), number: true, glued: false };
        }
        out.push(w);
    }
    out
}

/// Whether `words[i]` is a version or variant word (see the module docs).
fn is_variant(words: &[Word], i: usize) -> bool {
    let w = &words[i];
    if !w.number {
        return VARIANT_WORDS.contains(&w.text.as_str());
    }
    let glued_before = i > 0 && words[i - 1].glued;
    let digits = w.text.chars().filter(char::is_ascii_digit).count();
    let plain = w.text.chars().all(|c| c.is_ascii_digit());
    glued_before || !plain || digits <= 2
}

fn family(words: &[Word]) -> Option<Family> {
    let (variants, base): (Vec<&Word>, Vec<&Word>) = (0..words.len())
        .map(|i| (is_variant(words, i), &words[i]))
        .fold((Vec::new(), Vec::new()), |(mut v, mut b), (variant, w)| {
            if variant {
                v.push(w)
            } else {
                b.push(w)
            }
            (v, b)
        });
    let skeleton = |ws: &[&Word]| -> String {
        ws.iter().flat_map(|w| w.text.chars()).filter(|c| c.is_alphanumeric()).collect()
    };
    let base_len = skeleton(&base).chars().count();
    if base_len < 2 {
        return None;
    }
    Some(Family {
        base: base.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "),
        base_len,
        variant: skeleton(&variants),
        versions: variants.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "),
    })
}

/// Where two skeletons differ by one edit (substitution, insertion or adjacent transposition):
/// the position and the characters edited. `None` when they are equal or further apart.
fn one_edit(a: &[char], b: &[char]) -> Option<(usize, Vec<char>)> {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let p = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    match long.len() - short.len() {
        0 => {
            if p == short.len() {
                return None;
            }
            if short[p + 1..] == long[p + 1..] {
                return Some((p, vec![short[p], long[p]]));
            }
            let swapped = p + 1 < short.len()
                && short[p] == long[p + 1]
                && short[p + 1] == long[p]
                && short[p + 2..] == long[p + 2..];
            swapped.then(|| (p, vec![short[p], short[p + 1]]))
        }
        1 => (short[p..] == long[p + 1..]).then(|| (p, vec![long[p]])),
        _ => None,
    }
}

/// What the rules found about a pair.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Match {
    /// Tier 2: a SAME_AS candidate.
    SameAs {
        /// See [`compare`].
        confidence: f64,
        /// Which rules fired, with their values.
        justification: String,
    },
    /// Tier 3: a RELATED_TO edge between members of a version family.
    Related {
        /// See [`compare`].
        confidence: f64,
        /// The shared base and the versions.
        justification: String,
    },
}

/// Compare two names (of the same entity type) whose embeddings have cosine `cosine`.
///
/// - Tier 3 first: names of one family with different variant words are related, never the same
///   (`gpt-4` / `gpt-4o`, whatever their cosine). Confidence `0.5 + 0.4 × base / longer
///   skeleton` (in characters), so a family named by a long base and short versions ranks higher.
/// - Names whose digits differ (`tck-2045` / `tck-2093`) are neither: numbers identify.
/// - Tier 2, any of: the same skeleton ([`SKELETON_CONFIDENCE`]); the same words in another order
///   ([`WORD_ORDER_CONFIDENCE`]); skeletons of at least [`MIN_EDIT_SKELETON`] characters one
///   letter edit apart inside a word of at least five characters ([`ONE_EDIT_CONFIDENCE`]); name
///   cosine ≥ `min_cosine` (the cosine itself). Confidence: the strongest rule's value, plus 0.01
///   per further rule that fired, at most 0.99.
///
/// Confidences are rounded to three decimals.
pub(crate) fn compare(a: &NameForms, b: &NameForms, cosine: f32, min_cosine: f32) -> Option<Match> {
    let cosine_text = format!("name cosine {cosine:.2}");
    if let (Some(fa), Some(fb)) = (&a.family, &b.family)
        && fa.base == fb.base
        && fa.variant != fb.variant
    {
        let longer = a.skeleton.len().max(b.skeleton.len()).max(1);
        let confidence = round(0.5 + 0.4 * fa.base_len as f64 / longer as f64);
        let shown = |v: &str| if v.is_empty() { "none".to_owned() } else { v.to_owned() };
        let justification = format!(
            "same base `{}`, versions {} / {}; {cosine_text}",
            fa.base,
            shown(&fa.versions),
            shown(&fb.versions)
        );
        return Some(Match::Related { confidence, justification });
    }
    // Numbers identify: tck-2045 and tck-2093, or report-w47 and report-w48, are different
    // things however close their names.
    let digits = |f: &NameForms| {
        f.skeleton.iter().copied().filter(|c| c.is_numeric()).collect::<Vec<char>>()
    };
    if digits(a) != digits(b) {
        return None;
    }
    let mut fired: Vec<(f64, String)> = Vec::new();
    if !a.skeleton.is_empty() && a.skeleton == b.skeleton {
        fired.push((
            SKELETON_CONFIDENCE,
            format!("same name ignoring case and punctuation (`{}`)", a.skeleton_str()),
        ));
    } else if a.words.len() >= 2 && a.word_set == b.word_set {
        fired.push((
            WORD_ORDER_CONFIDENCE,
            format!("same words in another order ({})", a.word_set.replace(' ', ", ")),
        ));
    }
    if let Some(phrase) = one_letter_apart(a, b) {
        fired.push((ONE_EDIT_CONFIDENCE, phrase));
    }
    if cosine >= min_cosine {
        fired.push((f64::from(cosine), format!("{cosine_text} ≥ {min_cosine:.2}")));
    } else {
        fired.push((0.0, cosine_text));
    }
    let rules = fired.iter().filter(|(c, _)| *c > 0.0).count();
    let strongest = fired.iter().map(|(c, _)| *c).fold(0.0, f64::max);
    if rules == 0 {
        return None;
    }
    let confidence =
        round((strongest + CORROBORATION * (rules - 1) as f64).min(MAX_CANDIDATE_CONFIDENCE));
    let justification = fired.into_iter().map(|(_, p)| p).collect::<Vec<_>>().join("; ");
    Some(Match::SameAs { confidence, justification })
}

fn one_letter_apart(a: &NameForms, b: &NameForms) -> Option<String> {
    let shortest = a.skeleton.len().min(b.skeleton.len());
    if !(MIN_EDIT_SKELETON..=MAX_EDIT_SKELETON).contains(&shortest) {
        return None;
    }
    let (pos, edited) = one_edit(&a.skeleton, &b.skeleton)?;
    let word = a.word_len_at(pos).max(b.word_len_at(pos));
    (edited.iter().all(|c| c.is_alphabetic()) && word >= MIN_EDIT_WORD)
        .then(|| format!("one letter apart (`{}` / `{}`)", a.skeleton_str(), b.skeleton_str()))
}

/// Every skeleton one deletion away, plus the skeleton itself: two skeletons one edit apart share
/// at least one (the blocking key of the single-edit rule).
pub(crate) fn deletion_variants(skeleton: &[char]) -> Vec<String> {
    if !(MIN_EDIT_SKELETON..=MAX_EDIT_SKELETON + 1).contains(&skeleton.len()) {
        return Vec::new();
    }
    let mut out: Vec<String> = (0..skeleton.len())
        .map(|i| skeleton[..i].iter().chain(&skeleton[i + 1..]).collect())
        .collect();
    out.push(skeleton.iter().collect());
    out.sort_unstable();
    out.dedup();
    out
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_of(name: &str) -> Vec<String> {
        NameForms::new(name).words
    }

    /// Compare two names by their string rules alone (a cosine below every threshold).
    fn lexical(a: &str, b: &str) -> Option<Match> {
        compare(&NameForms::new(a), &NameForms::new(b), 0.0, 0.9)
    }

    fn same_as(a: &str, b: &str) -> bool {
        matches!(lexical(a, b), Some(Match::SameAs { .. }))
    }

    fn related(a: &str, b: &str) -> Option<String> {
        match lexical(a, b) {
            Some(Match::Related { justification, .. }) => Some(justification),
            _ => None,
        }
    }

    #[test]
    fn names_split_at_separators_digits_and_camel_humps() {
        assert_eq!(words_of("read_file"), ["read", "file"]);
        assert_eq!(words_of("ReadFile"), ["read", "file"]);
        assert_eq!(words_of("HTTPServer"), ["http", "server"]);
        assert_eq!(words_of("python3.11"), ["python", "3.11"]);
        assert_eq!(words_of("GPT-4o"), ["gpt", "4o"]);
        assert_eq!(words_of("gpt-4-turbo"), ["gpt", "4", "turbo"]);
        assert_eq!(words_of("v1 api"), ["v1", "api"]);
        assert_eq!(words_of("llama-2-70b-chat"), ["llama", "2", "70b", "chat"]);
        assert_eq!(words_of("file.txt"), ["file", "txt"]);
        assert_eq!(words_of("ＯＲＤＥＲＳ db"), ["orders", "db"]);
        assert_eq!(NameForms::new("Read-File").skeleton_str(), "readfile");
    }

    #[test]
    fn spelling_variants_of_one_name_are_the_same() {
        for (a, b) in [
            ("read_file", "read-file"),
            ("read_file", "ReadFile"),
            ("read_file", "readfile"),
            ("read_file", "Read File"),
            ("orders-db", "orders db"),
        ] {
            let Some(Match::SameAs { confidence, justification }) = lexical(a, b) else {
                panic!("{a} / {b} should be a candidate")
            };
            assert_eq!(confidence, SKELETON_CONFIDENCE, "{a} / {b}");
            assert!(justification.starts_with("same name ignoring case"), "{justification}");
        }
        let Some(Match::SameAs { justification, .. }) = lexical("search_web", "web_search") else {
            panic!()
        };
        assert_eq!(justification, "same words in another order (search, web); name cosine 0.00");
    }

    #[test]
    fn one_letter_typos_and_plurals_are_candidates_in_long_words_only() {
        assert!(same_as("planner", "planer"));
        assert!(same_as("read_file", "read_files"));
        assert!(same_as("payment gateway", "payments gateway"));
        assert!(same_as("kubernetes", "kuberentes"), "transposition");
        // Different words that happen to be one letter apart.
        assert!(!same_as("http_get", "http_set"));
        assert!(!same_as("read_file", "read_fils_x"));
        // Too short to tell a typo from another name.
        assert!(!same_as("cache", "cachy"));
    }

    #[test]
    fn different_names_are_not_the_same() {
        for (a, b) in [
            ("read_file", "write_file"),
            ("delete_file", "read_file"),
            ("http_get", "http_post"),
            ("orders-db", "users-db"),
            ("planner", "executor"),
            ("list_files", "list_dir"),
        ] {
            assert_eq!(lexical(a, b), None, "{a} / {b}");
        }
    }

    #[test]
    fn versions_of_one_family_are_related_never_the_same() {
        assert_eq!(
            related("GPT-4", "GPT-4o").unwrap(),
            "same base `gpt`, versions 4 / 4o; name cosine 0.00"
        );
        assert!(related("gpt-4", "gpt-4-turbo").is_some());
        assert!(related("gpt-4o", "gpt-4-turbo").is_some());
        assert!(related("python3.11", "python3.12").unwrap().starts_with("same base `python`"));
        assert!(
            related("v1 api", "v2 api").unwrap().starts_with("same base `api`, versions v1 / v2")
        );
        assert!(related("gpt", "gpt-4").unwrap().contains("versions none / 4"));
        // A high name cosine does not make two versions the same thing.
        let m = compare(&NameForms::new("gpt-4"), &NameForms::new("gpt-4o"), 0.94, 0.9);
        assert!(matches!(m, Some(Match::Related { .. })), "{m:?}");
        // The same version written two ways is one thing.
        assert!(same_as("gpt-4", "GPT4"));
        assert!(related("gpt-4", "GPT4").is_none());
        // Different bases, or a base too short to mean anything, are no family.
        assert!(related("claude-3-opus", "claude-3-sonnet").is_none());
        assert!(related("v1", "v2").is_none());
        assert!(related("read_file", "write_file").is_none());
    }

    #[test]
    fn numbered_identifiers_are_no_family_and_never_the_same() {
        assert!(related("tck-2045", "tck-2093").is_none());
        let m = compare(&NameForms::new("tck-8278"), &NameForms::new("tck-8376"), 0.95, 0.9);
        assert_eq!(m, None);
        assert!(same_as("python3.11", "python311"), "the same digits written two ways");
        assert!(related("report 2026", "report 2027").is_none());
        assert!(related("python3", "python2").is_some(), "a number glued to its name is a version");
        assert!(related("ubuntu 22.04", "ubuntu 24.04").is_some());
        assert!(related("claude-2", "claude-3").is_some());
    }

    #[test]
    fn family_confidence_grows_with_the_share_of_the_base() {
        let conf = |a, b| match lexical(a, b) {
            Some(Match::Related { confidence, .. }) => confidence,
            other => panic!("{other:?}"),
        };
        assert_eq!(conf("gpt-4", "gpt-4o"), 0.74); // 0.5 + 0.4 × 3/5
        assert!(conf("python3.11", "python3.12") > conf("gpt-4", "gpt-4o"));
    }

    #[test]
    fn the_embedding_rule_fires_alone_and_corroborates() {
        let (a, b) = (NameForms::new("postgres"), NameForms::new("postgresql"));
        let Some(Match::SameAs { confidence, justification }) = compare(&a, &b, 0.9002, 0.9) else {
            panic!()
        };
        assert_eq!(confidence, 0.9);
        assert_eq!(justification, "name cosine 0.90 ≥ 0.90");
        assert_eq!(compare(&a, &b, 0.85, 0.9), None);
        let (a, b) = (NameForms::new("orders-db"), NameForms::new("order-db"));
        let Some(Match::SameAs { confidence, justification }) = compare(&a, &b, 0.95, 0.9) else {
            panic!()
        };
        assert_eq!(confidence, 0.96, "0.95 + 0.01 for the one-letter rule");
        assert_eq!(
            justification,
            "one letter apart (`ordersdb` / `orderdb`); name cosine 0.95 ≥ 0.90"
        );
    }

    #[test]
    fn skeletons_one_edit_apart_share_a_deletion_variant() {
        let key = |s: &str| deletion_variants(&NameForms::new(s).skeleton);
        for (a, b) in
            [("planner", "planer"), ("kubernetes", "kuberentes"), ("read_file", "read_fibe")]
        {
            let (ka, kb) = (key(a), key(b));
            assert!(ka.iter().any(|k| kb.contains(k)), "{a} / {b}");
        }
        assert!(key("short").is_empty());
        assert_eq!(one_edit(&['a', 'b'], &['a', 'b']), None);
    }
}
