//! List format 2: a term's postings in document order, in blocks that carry their highest impact.
//!
//! ```text
//! header  magic "CGPL" | version u32 = 2 | count u32 | levels u32 | blocks u32 | avg_len f64
//! levels  levels × (impact level u8 | postings u32), highest level first
//! blocks  blocks × (highest document i64 | end offset in the body u32 | highest level u8)
//! body    per block of BLOCK_LEN postings (the last may be shorter): each posting's level
//!         (one byte each), then its documents as LEB128 varint deltas (the first from the
//!         previous block's last document, or from 0)
//! ```
//!
//! Fixed-width numbers are little-endian. The level table is what a search's posting budget
//! counts (how many postings each impact level holds, as format 1's segments did); the block
//! table lets a search seek to a document without decoding the blocks before it, and bound
//! what a block can add by its highest level, so blocks that cannot reach the running k-th
//! score are skipped ([`crate::top_k`]).

use crate::error::Error;
use crate::postings::{put_varint, take_varint, u32_at};

const MAGIC: &[u8; 4] = b"CGPL";
/// The format version this module reads and writes.
pub(crate) const VERSION: u32 = 2;
const HEADER: usize = 28;
const LEVEL: usize = 5;
const BLOCK: usize = 13;
/// Postings per block.
pub(crate) const BLOCK_LEN: usize = 128;

/// Encode `(document, impact level)` pairs, documents strictly ascending and non-negative,
/// levels in `1..=255` (checked by the caller).
pub(crate) fn encode_pairs(pairs: &[(i64, u8)], avg_len: f64) -> Result<Vec<u8>, Error> {
    let input = |detail: String| Error::Input { what: "postings", detail };
    let count = u32::try_from(pairs.len())
        .map_err(|_| input(format!("{} postings exceed a list's u32 count", pairs.len())))?;
    let mut per_level = [0u32; 256];
    for &(_, lvl) in pairs {
        per_level[usize::from(lvl)] += 1;
    }
    let mut levels = Vec::new();
    for lvl in (1..256).rev().filter(|&l| per_level[l] > 0) {
        levels.push(lvl as u8);
        levels.extend_from_slice(&per_level[lvl].to_le_bytes());
    }
    let mut table = Vec::new();
    let mut body = Vec::with_capacity(pairs.len() * 3);
    let mut base = 0i64;
    for block in pairs.chunks(BLOCK_LEN) {
        let mut max = 0u8;
        for &(_, lvl) in block {
            body.push(lvl);
            max = max.max(lvl);
        }
        for &(doc, _) in block {
            put_varint(&mut body, (doc - base) as u64);
            base = doc;
        }
        let end = u32::try_from(body.len())
            .map_err(|_| input(format!("{} bytes exceed a list's u32 offsets", body.len())))?;
        table.extend_from_slice(&base.to_le_bytes());
        table.extend_from_slice(&end.to_le_bytes());
        table.push(max);
    }
    let blocks = (table.len() / BLOCK) as u32;
    let mut out = Vec::with_capacity(HEADER + levels.len() + table.len() + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&((levels.len() / LEVEL) as u32).to_le_bytes());
    out.extend_from_slice(&blocks.to_le_bytes());
    out.extend_from_slice(&avg_len.to_le_bytes());
    out.extend_from_slice(&levels);
    out.extend_from_slice(&table);
    out.extend_from_slice(&body);
    Ok(out)
}

/// A parsed format-2 blob: header fields and tables, blocks decoded on demand.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockView<'a> {
    pub(crate) count: u32,
    pub(crate) avg_len: f64,
    levels: &'a [u8],
    table: &'a [u8],
    body: &'a [u8],
}

impl<'a> BlockView<'a> {
    /// Parse and check a blob whose magic and version were read by the caller.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<BlockView<'a>, Error> {
        let header = bytes.get(..HEADER).ok_or_else(|| {
            Error::Corrupt(format!("{} bytes is shorter than the format 2 header", bytes.len()))
        })?;
        if &header[..4] != MAGIC || u32_at(header, 4) != VERSION {
            return Err(Error::Corrupt("not a format 2 posting list".to_owned()));
        }
        let count = u32_at(header, 8);
        let levels = u32_at(header, 12) as usize;
        let blocks = u32_at(header, 16) as usize;
        let avg_len = f64::from_le_bytes(header[20..28].try_into().unwrap_or([0; 8]));
        let rest = &bytes[HEADER..];
        if levels > 255 || blocks != (count as usize).div_ceil(BLOCK_LEN) {
            return Err(Error::Corrupt(format!(
                "{levels} levels and {blocks} blocks for {count} postings"
            )));
        }
        let tables = levels * LEVEL + blocks * BLOCK;
        if rest.len() < tables {
            return Err(Error::Corrupt(format!("tables of {tables} bytes in {}", rest.len())));
        }
        let (levels, rest) = rest.split_at(levels * LEVEL);
        let (table, body) = rest.split_at(blocks * BLOCK);
        let view = BlockView { count, avg_len, levels, table, body };
        let mut total = 0u64;
        for l in 0..view.level_count() {
            total += u64::from(view.level_len(l));
            if view.level(l) == 0 || (l > 0 && view.level(l) >= view.level(l - 1)) {
                return Err(Error::Corrupt(format!("level {l} out of order")));
            }
        }
        let mut end = 0;
        for b in 0..blocks {
            if view.end(b) < end
                || view.block_max(b) == 0
                || (b > 0 && view.last(b) <= view.last(b - 1))
            {
                return Err(Error::Corrupt(format!("block {b} out of order")));
            }
            end = view.end(b);
        }
        if total != u64::from(count) || end != body.len() {
            return Err(Error::Corrupt(format!(
                "levels hold {total} postings and blocks {end} bytes; the header says {count} \
                 in {}",
                body.len()
            )));
        }
        Ok(view)
    }

    /// Distinct impact levels.
    pub(crate) fn level_count(&self) -> usize {
        self.levels.len() / LEVEL
    }

    /// The `l`-th highest level of the list.
    pub(crate) fn level(&self, l: usize) -> u8 {
        self.levels[l * LEVEL]
    }

    /// Postings at the `l`-th highest level.
    pub(crate) fn level_len(&self, l: usize) -> u32 {
        u32_at(self.levels, l * LEVEL + 1)
    }

    /// Blocks in the list.
    pub(crate) fn blocks(&self) -> usize {
        self.table.len() / BLOCK
    }

    /// The highest (last) document of block `b`.
    pub(crate) fn last(&self, b: usize) -> i64 {
        let mut x = [0; 8];
        x.copy_from_slice(&self.table[b * BLOCK..b * BLOCK + 8]);
        i64::from_le_bytes(x)
    }

    fn end(&self, b: usize) -> usize {
        u32_at(self.table, b * BLOCK + 8) as usize
    }

    /// The highest impact level in block `b`.
    pub(crate) fn block_max(&self, b: usize) -> u8 {
        self.table[b * BLOCK + 12]
    }

    /// Decode block `b` into `docs` and `levels` (cleared first), checking it against its
    /// table entry.
    pub(crate) fn decode_block(
        &self,
        b: usize,
        docs: &mut Vec<i64>,
        levels: &mut Vec<u8>,
    ) -> Result<(), Error> {
        docs.clear();
        levels.clear();
        let start = if b == 0 { 0 } else { self.end(b - 1) };
        let n =
            if b + 1 == self.blocks() { self.count as usize - b * BLOCK_LEN } else { BLOCK_LEN };
        let bytes = self
            .body
            .get(start..self.end(b))
            .ok_or_else(|| Error::Corrupt(format!("block {b} lies outside the body")))?;
        let (lvls, mut rest) = bytes
            .split_at_checked(n)
            .ok_or_else(|| Error::Corrupt(format!("block {b} is shorter than its levels")))?;
        let max = self.block_max(b);
        if lvls.iter().any(|&l| l == 0 || l > max) {
            return Err(Error::Corrupt(format!("block {b}: a level outside 1..={max}")));
        }
        levels.extend_from_slice(lvls);
        let mut doc = if b == 0 { 0 } else { self.last(b - 1) };
        for i in 0..n {
            let delta = take_varint(&mut rest)?;
            if delta == 0 && (b > 0 || i > 0) {
                return Err(Error::Corrupt(format!("block {b}: ids not ascending")));
            }
            doc = i64::try_from(delta)
                .ok()
                .and_then(|d| doc.checked_add(d))
                .ok_or_else(|| Error::Corrupt(format!("block {b}: id overflows")))?;
            docs.push(doc);
        }
        if !rest.is_empty() || doc != self.last(b) {
            return Err(Error::Corrupt(format!("block {b} disagrees with its table entry")));
        }
        Ok(())
    }

    /// Every `(document, level)`, in document order.
    pub(crate) fn decode_all(&self) -> Result<Vec<(i64, u8)>, Error> {
        let mut out = Vec::with_capacity(self.count as usize);
        let (mut docs, mut levels) = (Vec::new(), Vec::new());
        for b in 0..self.blocks() {
            self.decode_block(b, &mut docs, &mut levels)?;
            out.extend(docs.iter().copied().zip(levels.iter().copied()));
        }
        Ok(out)
    }
}
