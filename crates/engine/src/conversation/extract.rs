//! LLM-free entity extraction from a conversation turn: capitalised names, acronyms, speakers.
//!
//! A pure, deterministic function of the text and the conversation's speakers, so the records it
//! shapes are the same on every import. It favours precision over recall: a name missed is found
//! again by full-text search, while a spurious entity becomes a hub that links unrelated turns.
//!
//! # Rules
//! - **Words** are letters and digits with inner apostrophes and hyphens (`O'Brien`, `Jean-Luc`).
//!   A possessive `'s` (or a trailing `'` after an `s`) is stripped and ends the name
//!   (`Caroline's mom` → `Caroline`); other contractions (`I'm`, `don't`, `we'll`) are never names.
//! - **Names** are maximal runs of capitalised words (first letter upper case) separated by single
//!   spaces or tabs only: punctuation, line breaks and emoji end a run. The lower-case connectors
//!   `of`, `the`, `de`, `van`, `von`, … join two capitalised words (`Bank of America`,
//!   `Ludwig van Beethoven`) and never start or end a name. Runs longer than six words are title
//!   case noise, not names, and are dropped.
//! - **Never names**, wherever they stand: the pronoun `I` and the other personal pronouns,
//!   kinship words used as names (`Mom`, `Dad`), titles (`Mr`, `Dr`), chat words (`OK`, `LOL`),
//!   single letters (the initials of `J.K. Rowling`), words with a letter three times in a row
//!   (`Awww`, `Sooo`), and **dates**: month and weekday names and their abbreviations (`Feb`,
//!   `Fri`; not `Jan` or `Jun`, which are names too) split a run and become nothing, and numbers
//!   are not capitalised words, so `7 May`, `May 2023`, `2022` and `last week` yield no entity.
//!   The event's `occurred_at` already carries the time, and a month name alone cannot tell a
//!   date from a person (`May`, `June`): a concept `May` would join every turn naming the month.
//! - **Common words** (a list of function words, greetings, chat words and frequent verbs,
//!   adverbs and adjectives): a name that is one common word is dropped wherever it stands
//!   (`Thanks, See you`), so `Hope` and `Will` alone are never names (`Will Smith` is).
//! - **Sentence starts** capitalise any word. At the start of the text, after `.`, `!`, `?`, `…`
//!   or a line break (the period of a title such as `Dr.` or of an initial ends no sentence), and
//!   after an opening quote or bracket, the leading common words of a run are dropped
//!   (`Hey Mel` → `Mel`). At a sentence start (not a quote) so are a leading `-ing` word of five
//!   letters or more (`Visiting Paris` → `Paris`) and a leading `-ly` word of six or more
//!   (`Thankfully`; `Emily` stays). Leading determiners (`The`, `My`, `This`) are dropped anywhere
//!   (`The Beatles` → `Beatles`), so a thing has one name wherever it is mentioned.
//! - **Acronyms**: an all-capitals word of 2–6 letters (digits allowed: `LGBTQ`, `NASA`,
//!   `COVID-19`) is a name unless it is a common word (`SO`, `OMG`). Shouting is not: a sentence of
//!   two or more words without a lower-case letter yields nothing, and neither do all-capitals
//!   words in a row (`SO MUCH FUN`) nor longer all-capitals words (`AMAZING`).
//! - **Types**: a name equal to a known speaker's (after [`normalize_name`]) is that speaker, an
//!   entity of type `agent` under the speaker's spelling; every other name is a `concept`.
//! - At most [`MAX_EXTRACTED`] distinct entities per text, first mention first; names longer than
//!   128 bytes are dropped. Scripts without letter case (Chinese, Japanese, …) yield no names.

use ctxgraph_ontology::normalize_name;

/// Most entities extracted from one text.
pub const MAX_EXTRACTED: usize = 16;
/// Longest run of words taken as a name.
const MAX_RUN_WORDS: usize = 6;
/// Longest extracted name, in bytes.
const MAX_NAME_BYTES: usize = 128;
/// Letters of the longest acronym; longer all-capitals words are shouting.
const MAX_ACRONYM_LETTERS: usize = 6;

/// An entity named in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The name as written (possessive stripped), or the speaker's spelling for a speaker.
    pub name: String,
    /// `agent` for a known speaker, `concept` otherwise.
    pub entity_type: &'static str,
}

/// Extract the entities a text names: capitalised names, acronyms and speakers (see the module
/// docs for the rules).
pub fn extract_entities(text: &str, known_speakers: &[&str]) -> Vec<Extracted> {
    let words = tokenize(text);
    let speakers: Vec<(String, &str)> =
        known_speakers.iter().map(|s| (normalize_name(s), *s)).collect();
    let mut out: Vec<Extracted> = Vec::new();
    let mut seen: Vec<(&'static str, String)> = Vec::new();
    for run in runs(&words) {
        let Some(name) = name_of(&words, &run) else { continue };
        let normal = normalize_name(&name);
        let (name, entity_type) = match speakers.iter().find(|(n, _)| *n == normal) {
            Some((_, speaker)) => ((*speaker).to_owned(), "agent"),
            None => (name, "concept"),
        };
        if seen.iter().any(|(t, n)| *t == entity_type && *n == normal) {
            continue;
        }
        seen.push((entity_type, normal));
        out.push(Extracted { name, entity_type });
        if out.len() == MAX_EXTRACTED {
            break;
        }
    }
    out
}

/// How a word is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// Starts with a lower-case letter, a digit, or a letter without case.
    Lower,
    /// Starts with an upper-case letter.
    Capitalised,
    /// Two or more letters, all upper case.
    AllCaps,
}

#[derive(Debug)]
struct Word<'a> {
    /// The word, possessive stripped.
    text: &'a str,
    case: Case,
    /// A contraction such as `I'm` or `don't`: never part of a name.
    contraction: bool,
    /// Ended by a possessive `'s`: the name ends here.
    possessive: bool,
    /// Only spaces or tabs since the previous word (a run may continue).
    joined: bool,
    /// First word of a sentence.
    sentence_start: bool,
    /// First word after an opening quote or bracket.
    quote_start: bool,
    /// In a sentence written in capitals only.
    shouted: bool,
}

impl Word<'_> {
    fn lower(&self) -> String {
        self.text.to_lowercase()
    }

    fn letters(&self) -> usize {
        self.text.chars().filter(|c| c.is_alphabetic()).count()
    }
}

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// Split a text into words, with what stands between them.
fn tokenize(text: &str) -> Vec<Word<'_>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut words = Vec::new();
    // `gap_clean`: only spaces and tabs since the previous word.
    let (mut sentence_start, mut quote_start, mut gap_clean) = (true, false, true);
    let mut sentence = 0usize;
    let mut sentences: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if !is_word_char(c) {
            if matches!(c, '.' | '!' | '?' | '…' | '\n' | '\r') {
                // The period of a title (`Dr.`) or an initial (`J.K.`) ends no sentence.
                let title = c == '.'
                    && joined_to_previous(&chars, i)
                    && words.last().is_some_and(|w: &Word<'_>| {
                        w.text.chars().count() == 1 || TITLES.contains(&w.lower().as_str())
                    });
                if !title {
                    if !sentence_start {
                        sentence += 1;
                    }
                    sentence_start = true;
                }
            }
            quote_start = matches!(c, '"' | '“' | '‘' | '\'' | '(' | '[' | '«' | '„');
            gap_clean &= c == ' ' || c == '\t';
            i += 1;
            continue;
        }
        // A word: letters and digits, with apostrophes and hyphens inside.
        let mut j = i + 1;
        while j < chars.len() {
            let d = chars[j].1;
            let inner = (is_apostrophe(d) || d == '-')
                && chars.get(j + 1).is_some_and(|&(_, n)| is_word_char(n));
            if is_word_char(d) || inner {
                j += 1;
            } else {
                break;
            }
        }
        let end = chars.get(j).map_or(text.len(), |&(e, _)| e);
        let raw = &text[start..end];
        let mut word = classify(raw);
        // A trailing apostrophe after an `s` is a plural possessive (`the Joneses'`).
        if !word.possessive
            && raw.ends_with(['s', 'S'])
            && chars.get(j).is_some_and(|&(_, d)| is_apostrophe(d))
            && chars.get(j + 1).is_none_or(|&(_, n)| !is_word_char(n))
        {
            word.possessive = true;
            j += 1;
        }
        word.joined = gap_clean && !words.is_empty();
        word.sentence_start = sentence_start;
        word.quote_start = quote_start && !sentence_start;
        words.push(word);
        sentences.push(sentence);
        sentence_start = false;
        quote_start = false;
        gap_clean = true;
        i = j;
    }
    mark_shouting(&mut words, &sentences);
    words
}

/// Whether only spaces and tabs stand between the previous word and position `i`.
fn joined_to_previous(chars: &[(usize, char)], i: usize) -> bool {
    i > 0 && chars.get(i - 1).is_some_and(|&(_, c)| is_word_char(c))
}

/// A word with its possessive or contraction suffix understood.
fn classify(raw: &str) -> Word<'_> {
    let (mut text, mut possessive, mut contraction) = (raw, false, false);
    if let Some((at, apostrophe)) = raw.char_indices().rev().find(|&(_, c)| is_apostrophe(c)) {
        let suffix = raw[at + apostrophe.len_utf8()..].to_lowercase();
        match suffix.as_str() {
            "s" => {
                text = &raw[..at];
                possessive = true;
            }
            "m" | "ve" | "ll" | "d" | "re" | "t" => contraction = true,
            _ => {}
        }
    }
    let letters: Vec<char> = text.chars().filter(|c| c.is_alphabetic()).collect();
    let case = match text.chars().next() {
        Some(c) if c.is_uppercase() => {
            if letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase()) {
                Case::AllCaps
            } else {
                Case::Capitalised
            }
        }
        _ => Case::Lower,
    };
    Word {
        text,
        case,
        contraction,
        possessive,
        joined: false,
        sentence_start: false,
        quote_start: false,
        shouted: false,
    }
}

/// Mark the words of sentences written in capitals only (two or more words, no lower case).
fn mark_shouting(words: &mut [Word<'_>], sentences: &[usize]) {
    let mut start = 0;
    while start < words.len() {
        let end =
            (start..words.len()).find(|&k| sentences[k] != sentences[start]).unwrap_or(words.len());
        let shouted = end - start >= 2
            && words[start..end].iter().all(|w| !w.text.chars().any(char::is_lowercase))
            && words[start..end].iter().any(|w| w.letters() > 0);
        if shouted {
            words[start..end].iter_mut().for_each(|w| w.shouted = true);
        }
        start = end;
    }
}

/// Whether a word may be part of a name.
fn name_like(words: &[Word<'_>], k: usize) -> bool {
    let w = &words[k];
    if w.contraction || w.shouted || w.case == Case::Lower {
        return false;
    }
    let lower = w.lower();
    // A lone letter is an initial (`J.K.`), a letter held three times an interjection (`Awww`).
    if w.text.chars().count() < 2 || is_listed(NEVER, &lower) || has_triple_letter(&lower) {
        return false;
    }
    if w.case == Case::AllCaps {
        // An acronym stands alone; all-capitals words in a row are shouting.
        let caps = |j: usize| words.get(j).is_some_and(|n: &Word<'_>| n.case == Case::AllCaps);
        let next_joined = words.get(k + 1).is_some_and(|n| n.joined);
        let neighbour = (w.joined && k > 0 && caps(k - 1)) || (next_joined && caps(k + 1));
        return !neighbour && w.letters() <= MAX_ACRONYM_LETTERS && !is_listed(COMMON, &lower);
    }
    true
}

/// Word indices of each candidate run, connectors included.
fn runs(words: &[Word<'_>]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < words.len() {
        if !name_like(words, k) {
            k += 1;
            continue;
        }
        let mut run = vec![k];
        let mut last = k;
        while !words[last].possessive {
            // The next name word, possibly after connectors, all joined by spaces.
            let mut j = last + 1;
            while j < words.len()
                && words[j].joined
                && words[j].case == Case::Lower
                && CONNECTORS.contains(&words[j].text)
            {
                j += 1;
            }
            if j < words.len() && words[j].joined && name_like(words, j) {
                run.extend(last + 1..=j);
                last = j;
            } else {
                break;
            }
        }
        out.push(run);
        k = last + 1;
    }
    out
}

/// The name a run stands for, once leading common words are dropped; `None` when nothing is left.
fn name_of(words: &[Word<'_>], run: &[usize]) -> Option<String> {
    let mut first = 0;
    let at_start = words[run[0]].sentence_start || words[run[0]].quote_start;
    while first < run.len() {
        let w = &words[run[first]];
        let lower = w.lower();
        let leading = is_listed(DETERMINERS, &lower)
            || CONNECTORS.contains(&w.text)
            || (at_start && is_listed(COMMON, &lower))
            || (at_start
                && words[run[0]].sentence_start
                && ((lower.ends_with("ing") && w.letters() >= 5)
                    || (lower.ends_with("ly") && w.letters() >= 6)));
        if !leading {
            break;
        }
        first += 1;
    }
    let kept = &run[first..];
    let names = kept.iter().filter(|&&k| words[k].case != Case::Lower).count();
    if kept.is_empty() || names > MAX_RUN_WORDS {
        return None;
    }
    // A lone common word is sloppy capitalisation (`Thanks, See you`), wherever it stands.
    if let [only] = kept
        && is_listed(COMMON, &words[*only].lower())
    {
        return None;
    }
    let name = kept.iter().map(|&k| words[k].text).collect::<Vec<_>>().join(" ");
    (name.len() <= MAX_NAME_BYTES).then_some(name)
}

fn has_triple_letter(lower: &str) -> bool {
    let chars: Vec<char> = lower.chars().collect();
    chars.windows(3).any(|w| w[0].is_alphabetic() && w[0] == w[1] && w[1] == w[2])
}

fn is_listed(list: &[&str], lower: &str) -> bool {
    list.binary_search(&lower).is_ok()
}

/// Lower-case words that join two capitalised words into one name.
const CONNECTORS: &[&str] = &[
    "al", "bin", "da", "de", "del", "della", "den", "der", "des", "di", "du", "el", "la", "le",
    "of", "the", "van", "von", "y",
];

/// Titles whose abbreviating period ends no sentence.
const TITLES: &[&str] = &["dr", "jr", "mr", "mrs", "ms", "mt", "prof", "sr", "st", "vs"];

/// Words dropped from the front of a name anywhere (sorted).
const DETERMINERS: &[&str] = &[
    "a", "an", "her", "his", "its", "my", "our", "that", "the", "their", "these", "this", "those",
    "your",
];

/// Capitalised words that are never names (sorted): pronouns, kinship words used as names,
/// titles, chat words, months and weekdays.
const NEVER: &[&str] = &[
    "apr",
    "april",
    "aug",
    "august",
    "dad",
    "daddy",
    "dec",
    "december",
    "dr",
    "feb",
    "february",
    "fri",
    "friday",
    "grandma",
    "grandpa",
    "haha",
    "he",
    "her",
    "hers",
    "him",
    "i",
    "it",
    "january",
    "july",
    "june",
    "lol",
    "ma'am",
    "madam",
    "march",
    "may",
    "me",
    "mom",
    "mommy",
    "mon",
    "monday",
    "mr",
    "mrs",
    "ms",
    "mum",
    "mummy",
    "nov",
    "november",
    "oct",
    "october",
    "ok",
    "okay",
    "omg",
    "prof",
    "sat",
    "saturday",
    "sep",
    "sept",
    "september",
    "she",
    "sir",
    "sunday",
    "them",
    "they",
    "thu",
    "thur",
    "thurs",
    "thursday",
    "tue",
    "tues",
    "tuesday",
    "us",
    "we",
    "wednesday",
    "you",
];

/// Common words that start sentences without being names (sorted): function words, greetings,
/// chat words, frequent verbs, adverbs and adjectives.
const COMMON: &[&str] = &[
    "a",
    "aah",
    "about",
    "absolutely",
    "actually",
    "adorable",
    "after",
    "again",
    "agree",
    "agreed",
    "agreeing",
    "ah",
    "aha",
    "ahh",
    "all",
    "almost",
    "already",
    "alright",
    "also",
    "although",
    "always",
    "am",
    "amazing",
    "an",
    "and",
    "another",
    "any",
    "anyhow",
    "anyone",
    "anytime",
    "anyway",
    "anyways",
    "apart",
    "appreciate",
    "appreciated",
    "are",
    "as",
    "ask",
    "asked",
    "at",
    "aw",
    "awesome",
    "aww",
    "back",
    "bad",
    "basically",
    "be",
    "beautiful",
    "because",
    "been",
    "before",
    "being",
    "believe",
    "besides",
    "best",
    "bet",
    "better",
    "big",
    "blessed",
    "both",
    "bought",
    "brave",
    "brb",
    "brilliant",
    "bring",
    "brings",
    "btw",
    "build",
    "bummer",
    "busy",
    "but",
    "by",
    "bye",
    "call",
    "called",
    "can",
    "can't",
    "cannot",
    "capture",
    "care",
    "catch",
    "change",
    "chat",
    "check",
    "checked",
    "cheer",
    "cheering",
    "cheers",
    "cherish",
    "chill",
    "close",
    "come",
    "competitive",
    "confident",
    "congrats",
    "congratulations",
    "connected",
    "cool",
    "could",
    "count",
    "crazy",
    "create",
    "cute",
    "dang",
    "dear",
    "definitely",
    "delightful",
    "did",
    "difficult",
    "do",
    "does",
    "done",
    "dream",
    "dreams",
    "each",
    "eh",
    "either",
    "else",
    "enjoy",
    "enjoyed",
    "enough",
    "epic",
    "especially",
    "even",
    "ever",
    "every",
    "everybody",
    "everyone",
    "everything",
    "everywhere",
    "exactly",
    "excellent",
    "excited",
    "exciting",
    "fabulous",
    "fair",
    "fantastic",
    "feel",
    "feeling",
    "feels",
    "felt",
    "finally",
    "fine",
    "first",
    "follow",
    "for",
    "forget",
    "forgot",
    "fortunately",
    "free",
    "from",
    "fun",
    "funny",
    "gather",
    "get",
    "gets",
    "gg",
    "give",
    "gives",
    "glad",
    "go",
    "going",
    "gonna",
    "good",
    "gorgeous",
    "got",
    "gotcha",
    "gotta",
    "great",
    "guess",
    "guys",
    "ha",
    "had",
    "hah",
    "hang",
    "happen",
    "happened",
    "happy",
    "hard",
    "has",
    "have",
    "having",
    "he",
    "hear",
    "heard",
    "hello",
    "help",
    "helps",
    "her",
    "here",
    "hey",
    "hi",
    "hmm",
    "hmmm",
    "hold",
    "honestly",
    "hope",
    "hopefully",
    "how",
    "however",
    "hug",
    "huge",
    "hugs",
    "huh",
    "hurry",
    "i",
    "idk",
    "if",
    "imagine",
    "impressed",
    "impressive",
    "in",
    "incredible",
    "indeed",
    "instead",
    "interesting",
    "is",
    "it",
    "its",
    "jealous",
    "job",
    "joined",
    "just",
    "keep",
    "kept",
    "kind",
    "kinda",
    "knew",
    "know",
    "kudos",
    "last",
    "lately",
    "later",
    "learn",
    "learned",
    "left",
    "lemme",
    "let",
    "lets",
    "like",
    "likewise",
    "literally",
    "little",
    "lol",
    "long",
    "look",
    "looking",
    "looks",
    "lost",
    "lots",
    "love",
    "loved",
    "lovely",
    "luckily",
    "lucky",
    "made",
    "make",
    "makes",
    "man",
    "many",
    "maybe",
    "me",
    "mean",
    "means",
    "meant",
    "meanwhile",
    "met",
    "might",
    "mind",
    "mine",
    "miss",
    "missed",
    "mm",
    "more",
    "morning",
    "most",
    "much",
    "must",
    "my",
    "nah",
    "neat",
    "need",
    "needed",
    "never",
    "nevertheless",
    "new",
    "next",
    "nice",
    "night",
    "no",
    "nope",
    "nor",
    "not",
    "noted",
    "nothing",
    "now",
    "obviously",
    "of",
    "off",
    "oh",
    "ok",
    "okay",
    "okie",
    "omg",
    "on",
    "once",
    "one",
    "only",
    "oof",
    "oops",
    "open",
    "or",
    "other",
    "otherwise",
    "ouch",
    "our",
    "ours",
    "out",
    "over",
    "overall",
    "perfect",
    "perhaps",
    "phew",
    "please",
    "plus",
    "positive",
    "pretty",
    "probably",
    "proud",
    "push",
    "put",
    "quick",
    "quite",
    "rad",
    "read",
    "ready",
    "real",
    "really",
    "recently",
    "regardless",
    "remember",
    "reminds",
    "respect",
    "rest",
    "right",
    "sad",
    "sadly",
    "same",
    "saw",
    "say",
    "says",
    "see",
    "seems",
    "seen",
    "send",
    "sent",
    "seriously",
    "share",
    "shared",
    "she",
    "should",
    "show",
    "similarly",
    "simple",
    "since",
    "sleep",
    "slow",
    "small",
    "so",
    "some",
    "someone",
    "something",
    "sometimes",
    "somewhat",
    "soon",
    "sorry",
    "sorta",
    "sound",
    "sounds",
    "speak",
    "speaking",
    "spent",
    "spill",
    "start",
    "started",
    "stay",
    "still",
    "stop",
    "strong",
    "stunning",
    "such",
    "super",
    "sure",
    "sweet",
    "take",
    "takes",
    "taking",
    "talk",
    "talking",
    "tbh",
    "tell",
    "terrific",
    "thank",
    "thankfully",
    "thanks",
    "that",
    "the",
    "their",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "though",
    "thought",
    "thx",
    "tired",
    "to",
    "today",
    "together",
    "told",
    "tomorrow",
    "tonight",
    "too",
    "took",
    "totally",
    "tough",
    "tried",
    "true",
    "truly",
    "try",
    "trying",
    "turn",
    "turns",
    "ugh",
    "um",
    "under",
    "understand",
    "unfortunately",
    "until",
    "up",
    "us",
    "use",
    "usually",
    "very",
    "wait",
    "wanna",
    "want",
    "wanted",
    "was",
    "watch",
    "watched",
    "watching",
    "way",
    "we",
    "weird",
    "welcome",
    "well",
    "went",
    "were",
    "what",
    "whatever",
    "when",
    "whenever",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whoa",
    "whoops",
    "why",
    "wild",
    "will",
    "wish",
    "with",
    "without",
    "woah",
    "wonder",
    "wonderful",
    "wondering",
    "woo",
    "woohoo",
    "work",
    "worked",
    "worry",
    "worth",
    "would",
    "wow",
    "wrong",
    "y'all",
    "yay",
    "yea",
    "yeah",
    "yep",
    "yes",
    "yesterday",
    "yet",
    "yikes",
    "yo",
    "you",
    "young",
    "your",
    "yours",
    "yum",
    "yummy",
    "yup",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// `name/type` pairs, in order.
    fn check(text: &str, speakers: &[&str], expected: &[&str]) {
        let got: Vec<String> = extract_entities(text, speakers)
            .into_iter()
            .map(|e| format!("{}/{}", e.name, e.entity_type))
            .collect();
        assert_eq!(got, expected, "text: {text:?}");
    }

    #[test]
    fn word_lists_are_sorted_lower_case_and_unique() {
        for list in [DETERMINERS, NEVER, COMMON, TITLES] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
            assert!(list.iter().all(|w| *w == w.to_lowercase()));
        }
    }

    #[test]
    fn capitalised_runs_are_names_and_speakers_are_agents() {
        check(
            "I went to Paris with Caroline and Melanie.",
            &["Caroline", "Melanie"],
            &["Paris/concept", "Caroline/agent", "Melanie/agent"],
        );
        check(
            "We met Jean-Luc Picard at Starfleet Academy",
            &[],
            &["Jean-Luc Picard/concept", "Starfleet Academy/concept"],
        );
        // Speakers are matched after normalisation, and named only when capitalised.
        check("say hi to  Jon  Snow", &["jon snow"], &["jon snow/agent"]);
        check("say hi to caroline", &["Caroline"], &[]);
        check("tell jon i said hi, Jon", &["Jon"], &["Jon/agent"]);
    }

    #[test]
    fn connectors_join_names_only_between_capitalised_words() {
        check("She works at the Bank of America now", &[], &["Bank of America/concept"]);
        check("listening to Ludwig van Beethoven", &[], &["Ludwig van Beethoven/concept"]);
        check("a visit to the Museum of the Moon", &[], &["Museum of the Moon/concept"]);
        check("proud of Caroline of course", &[], &["Caroline/concept"]);
        check("talked to Tim and John", &[], &["Tim/concept", "John/concept"]);
    }

    #[test]
    fn sentence_starts_drop_common_words() {
        check("Hey Mel! Good to see you! How have you been?", &[], &["Mel/concept"]);
        check("Thanks Caroline, you're the best.", &["Caroline"], &["Caroline/agent"]);
        check("Wow. Congrats! That sounds great", &[], &[]);
        check("Went to Paris. Visiting Rome next.", &[], &["Paris/concept", "Rome/concept"]);
        check("Loving it", &[], &[]);
        // Not at a sentence start, a capitalised word is a name.
        check("my friend Grace is here", &[], &["Grace/concept"]);
        check("my friend Hope is here, Will Smith too", &[], &["Will Smith/concept"]);
        check("Sounds great, See you soon! Yeah, Here's one", &[], &[]);
        check("Caroline said hi", &[], &["Caroline/concept"]);
        check("Just got back.\nMelanie loved it", &[], &["Melanie/concept"]);
    }

    #[test]
    fn determiners_are_dropped_anywhere() {
        check("I love The Beatles", &[], &["Beatles/concept"]);
        check("The Beatles are great", &[], &["Beatles/concept"]);
        check("This Friday we go", &[], &[]);
    }

    #[test]
    fn quotes_and_brackets_start_like_sentences() {
        check(r#"I read "Becoming Nicole" last month"#, &[], &["Becoming Nicole/concept"]);
        check("she said “Thanks” and left", &[], &[]);
        check("(Hey) that was Melanie", &[], &["Melanie/concept"]);
    }

    #[test]
    fn possessives_are_stripped_and_end_the_name() {
        check("Caroline's mom called", &["Caroline"], &["Caroline/agent"]);
        check("at Caroline’s Pride Parade", &[], &["Caroline/concept", "Pride Parade/concept"]);
        check("the Joneses' house", &[], &["Joneses/concept"]);
        check("lunch at McDonald's", &[], &["McDonald/concept"]);
    }

    #[test]
    fn pronouns_and_contractions_are_never_names() {
        check("I think I'm ready, and I'll go", &[], &[]);
        check("Don't worry. It's fine. I've got it. We'll see. They're here", &[], &[]);
        check("Me and You", &[], &[]);
        check("O'Brien is here", &[], &["O'Brien/concept"]);
    }

    #[test]
    fn dates_months_and_weekdays_are_not_entities() {
        check("On 7 May 2023 we went to Paris", &[], &["Paris/concept"]);
        check("It was May 2023, in June, last week, in 2022", &[], &[]);
        check("see you on Monday at the Pride March", &[], &["Pride/concept"]);
    }

    #[test]
    fn acronyms_are_names_and_shouting_is_not() {
        check("I went to a LGBTQ support group yesterday", &[], &["LGBTQ/concept"]);
        check(
            "NASA launched it. COVID-19 changed things",
            &[],
            &["NASA/concept", "COVID-19/concept"],
        );
        check("THAT WAS SO MUCH FUN", &[], &[]);
        check("It was SO MUCH FUN with Caroline", &[], &["Caroline/concept"]);
        check("This is AMAZING", &[], &[]);
        check("OK sure. OMG!", &[], &[]);
        check("I WON", &[], &[]);
        check("LGBTQ!", &[], &["LGBTQ/concept"]);
    }

    #[test]
    fn emoji_and_punctuation_break_names() {
        check("😊 Thanks Melanie 🎉 Caroline", &[], &["Melanie/concept", "Caroline/concept"]);
        check(
            "Caroline, Melanie; Jon",
            &[],
            &["Caroline/concept", "Melanie/concept", "Jon/concept"],
        );
        check("Dr. Smith and Dr Jones", &[], &["Smith/concept", "Jones/concept"]);
    }

    #[test]
    fn initials_interjections_and_adverbs_are_not_names() {
        check("I love J.K. Rowling books", &[], &["Rowling/concept"]);
        check("Awww. Sooo cute! Mmm", &[], &[]);
        check("Thankfully it rained. Emily came. Highly recommend", &[], &["Emily/concept"]);
        check("See you Fri or Sat, Feb 3", &[], &[]);
    }

    #[test]
    fn names_repeat_once_and_are_capped() {
        check("Paris, Paris, PARIS and paris", &[], &["Paris/concept"]);
        let many: String = (0..40).map(|i| format!("Name{i}, ")).collect();
        assert_eq!(extract_entities(&many, &[]).len(), MAX_EXTRACTED);
    }

    #[test]
    fn long_title_case_runs_and_huge_words_are_dropped() {
        check("read One Two Three Four Five Six Seven today", &[], &[]);
        let huge = format!("met {}", "A".to_owned() + &"b".repeat(200));
        check(&huge, &[], &[]);
    }

    #[test]
    fn scripts_without_case_and_empty_text_yield_nothing() {
        check("", &[], &[]);
        check("   ", &[], &[]);
        check("我们去了北京", &[], &[]);
        check("'", &[], &[]);
        check("-Caroline-", &[], &["Caroline/concept"]);
    }
}
