//! BERT WordPiece tokenisation as model2vec's static model applies it: literal added tokens,
//! normalisation, pre-tokenisation, greedy longest-match-first WordPiece, truncation, and
//! unknown words dropped. It yields matrix rows, not token strings.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::ControlFlow;

use crate::EmbedError;
use crate::normalize::{ASCII, Ascii, Normalized, is_punctuation, normalize_char};

/// A token matched literally in the raw text before normalisation (the reference tokenizer's
/// "added tokens", e.g. `[PAD]`).
#[derive(Clone, Debug)]
pub(crate) struct AddedToken {
    /// The literal text.
    pub(crate) content: Box<str>,
    /// Its matrix row, or `None` if it is dropped (like `[UNK]`).
    pub(crate) row: Option<u32>,
}

/// Limits and options of the tokenizer, from the model's config.
#[derive(Clone, Debug)]
pub(crate) struct TokenizerOptions {
    /// The marker of a word-internal piece (`##`).
    pub(crate) continuing_subword_prefix: String,
    /// A longer word (in characters) is one unknown token.
    pub(crate) max_input_chars_per_word: usize,
    /// Only the first this many characters of a text are read.
    pub(crate) max_chars: usize,
    /// Only the first this many tokens (unknown ones included) are kept.
    pub(crate) max_tokens: usize,
    /// Tokens matched literally in the raw text.
    pub(crate) added_tokens: Vec<AddedToken>,
}

type Vocab = HashMap<Box<str>, u32, BuildHasherDefault<FxHasher>>;

/// A loaded WordPiece tokenizer.
pub(crate) struct Tokenizer {
    /// Every vocabulary entry, for the first piece of a word.
    initial: Vocab,
    /// The entries that start with the continuation prefix, prefix removed, for later pieces.
    continuation: Vocab,
    max_initial_len: usize,
    max_continuation_len: usize,
    options: TokenizerOptions,
}

impl Tokenizer {
    /// Builds the tokenizer from `vocab.txt` (one token per line, line `i` is row `i`).
    pub(crate) fn new(vocab: &str, options: TokenizerOptions) -> Result<Self, EmbedError> {
        let err = |message: String| EmbedError::format("vocab.txt", message);
        let body = vocab.strip_suffix('\n').ok_or_else(|| err("must end with a newline".into()))?;
        let prefix = options.continuing_subword_prefix.as_str();
        if prefix.is_empty() {
            return Err(EmbedError::format("config.json", "empty continuing_subword_prefix"));
        }
        let mut initial = Vocab::default();
        let mut continuation = Vocab::default();
        let (mut max_initial_len, mut max_continuation_len) = (0, 0);
        for (row, token) in body.split('\n').enumerate() {
            let line = row + 1;
            if token.is_empty() || token.contains('\r') {
                return Err(err(format!("line {line}: empty token or carriage return")));
            }
            let row = u32::try_from(row).map_err(|_| err("too many tokens".into()))?;
            if initial.insert(token.into(), row).is_some() {
                return Err(err(format!("line {line}: duplicate token {token:?}")));
            }
            max_initial_len = max_initial_len.max(token.len());
            if let Some(piece) = token.strip_prefix(prefix).filter(|p| !p.is_empty()) {
                continuation.insert(piece.into(), row);
                max_continuation_len = max_continuation_len.max(piece.len());
            }
        }
        Ok(Self { initial, continuation, max_initial_len, max_continuation_len, options })
    }

    /// The number of vocabulary entries (matrix rows).
    pub(crate) fn len(&self) -> usize {
        self.initial.len()
    }

    /// The added tokens, for validation against the matrix.
    pub(crate) fn added_tokens(&self) -> &[AddedToken] {
        &self.options.added_tokens
    }

    /// Replaces `rows` with the matrix rows of `text`'s tokens, in order, after truncation, with
    /// unknown words dropped. `word` is scratch space, reused across calls.
    pub(crate) fn tokenize(&self, text: &str, word: &mut String, rows: &mut Vec<u32>) {
        rows.clear();
        word.clear();
        let text = truncate_chars(text, self.options.max_chars);
        let mut out = Emitter { rows, left: self.options.max_tokens };
        if out.left > 0 {
            // Break only means the token budget is spent: the rows so far are the result.
            let _ = self.text(text, word, &mut out);
        }
    }

    /// Splits off the literal added tokens, and tokenises the text between them.
    fn text(&self, text: &str, word: &mut String, out: &mut Emitter<'_>) -> ControlFlow<()> {
        let mut rest = text;
        while let Some((start, added)) = self.next_added(rest) {
            let (before, after) = rest.split_at(start);
            self.segment(before, word, out)?;
            out.token(added.row)?;
            rest = after.get(added.content.len()..).unwrap_or_default();
        }
        self.segment(rest, word, out)
    }

    /// The leftmost (then longest) added token in `text`, with its byte offset.
    fn next_added(&self, text: &str) -> Option<(usize, &AddedToken)> {
        let mut best: Option<(usize, &AddedToken)> = None;
        for added in &self.options.added_tokens {
            if let Some(at) = text.find(&*added.content) {
                let better = best.is_none_or(|(best_at, best_token)| {
                    at < best_at
                        || (at == best_at && added.content.len() > best_token.content.len())
                });
                if better {
                    best = Some((at, added));
                }
            }
        }
        best
    }

    /// Normalises and pre-tokenises a stretch of raw text, WordPiece-tokenising each word.
    fn segment(&self, text: &str, word: &mut String, out: &mut Emitter<'_>) -> ControlFlow<()> {
        for c in text.chars() {
            if let Some(&ascii) = ASCII.get(c as usize) {
                match ascii {
                    Ascii::Skip => {}
                    Ascii::Space => self.flush(word, out)?,
                    Ascii::Punct(b) => {
                        self.flush(word, out)?;
                        word.push(char::from(b));
                        self.flush(word, out)?;
                    }
                    Ascii::Letter(b) => word.push(char::from(b)),
                    Ascii::Other => self.general(c, word, out)?,
                }
            } else {
                self.general(c, word, out)?;
            }
        }
        self.flush(word, out)
    }

    fn general(&self, c: char, word: &mut String, out: &mut Emitter<'_>) -> ControlFlow<()> {
        match normalize_char(c) {
            Normalized::Removed => ControlFlow::Continue(()),
            Normalized::Space => self.flush(word, out),
            Normalized::Char(n) => self.normalized(n, word, out),
            Normalized::Str(s) => s.chars().try_for_each(|n| self.normalized(n, word, out)),
            Normalized::Jamo(lead, vowel, trail) => {
                word.push(lead);
                word.push(vowel);
                word.extend(trail);
                ControlFlow::Continue(())
            }
            Normalized::Cjk(n) => {
                self.flush(word, out)?;
                word.push(n);
                self.flush(word, out)
            }
        }
    }

    /// Feeds one normalised character to the pre-tokeniser.
    fn normalized(&self, n: char, word: &mut String, out: &mut Emitter<'_>) -> ControlFlow<()> {
        if n == ' ' {
            self.flush(word, out)
        } else if is_punctuation(n) {
            self.flush(word, out)?;
            word.push(n);
            self.flush(word, out)
        } else {
            word.push(n);
            ControlFlow::Continue(())
        }
    }

    /// Tokenises the word collected so far, if any, and empties it.
    fn flush(&self, word: &mut String, out: &mut Emitter<'_>) -> ControlFlow<()> {
        if word.is_empty() {
            return ControlFlow::Continue(());
        }
        let flow = self.wordpiece(word, out);
        word.clear();
        flow
    }

    /// Greedy longest-match-first WordPiece. A word that cannot be covered by vocabulary
    /// pieces, or is longer than `max_input_chars_per_word`, is one unknown token.
    fn wordpiece(&self, word: &str, out: &mut Emitter<'_>) -> ControlFlow<()> {
        let max_chars = self.options.max_input_chars_per_word;
        if word.len() > max_chars && word.chars().count() > max_chars {
            return out.token(None);
        }
        let mark = out.rows.len();
        let mut start = 0;
        while start < word.len() {
            let (vocab, max_len) = if start == 0 {
                (&self.initial, self.max_initial_len)
            } else {
                (&self.continuation, self.max_continuation_len)
            };
            let mut end = floor_char_boundary(word, start.saturating_add(max_len));
            let mut found = None;
            while end > start {
                if let Some(&row) = word.get(start..end).and_then(|piece| vocab.get(piece)) {
                    found = Some(row);
                    break;
                }
                end = floor_char_boundary(word, end - 1);
            }
            let Some(row) = found else {
                out.rows.truncate(mark);
                return out.token(None);
            };
            out.rows.push(row);
            start = end;
        }
        out.pieces(mark)
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The first `max_chars` characters of `text`.
fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => text.get(..at).unwrap_or(text),
        None => text,
    }
}

/// Collects rows and counts tokens against the budget (unknown tokens count too, as in the
/// reference, which truncates before dropping them).
struct Emitter<'a> {
    rows: &'a mut Vec<u32>,
    left: usize,
}

impl Emitter<'_> {
    /// One token: a row, or `None` for an unknown one (counted, not kept).
    fn token(&mut self, row: Option<u32>) -> ControlFlow<()> {
        if self.left == 0 {
            return ControlFlow::Break(());
        }
        self.rows.extend(row);
        self.left -= 1;
        self.more()
    }

    /// The pieces of one word, already pushed after `mark`: keep what fits in the budget.
    fn pieces(&mut self, mark: usize) -> ControlFlow<()> {
        let n = self.rows.len() - mark;
        if n > self.left {
            self.rows.truncate(mark + self.left);
            self.left = 0;
        } else {
            self.left -= n;
        }
        self.more()
    }

    fn more(&self) -> ControlFlow<()> {
        if self.left == 0 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    }
}

/// A small, fast, deterministic hash for vocabulary lookups (the "Fx" hash of rustc): keys are
/// not attacker-chosen, and iteration order is never observed.
#[derive(Clone, Copy, Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}
