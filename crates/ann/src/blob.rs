//! The header both stored blobs (centroids, inverted lists) begin with: magic, format version,
//! dimension and count, each a little-endian `u32` after the four magic bytes.

use crate::error::Error;

/// Bytes of the header.
pub(crate) const HEADER: usize = 16;

/// One blob kind's identity: its magic, version and name in errors.
pub(crate) struct BlobKind {
    pub(crate) magic: &'static [u8; 4],
    pub(crate) version: u32,
    pub(crate) what: &'static str,
}

impl BlobKind {
    /// Append the header for `count` items of dimension `dim`.
    pub(crate) fn write_header(&self, out: &mut Vec<u8>, dim: usize, count: usize) {
        out.extend_from_slice(self.magic);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(dim as u32).to_le_bytes());
        out.extend_from_slice(&(count as u32).to_le_bytes());
    }

    /// Check the header against this kind and `dim`; returns the item count and the body.
    pub(crate) fn read_header<'b>(
        &self,
        bytes: &'b [u8],
        dim: usize,
    ) -> Result<(usize, &'b [u8]), Error> {
        let header = bytes.get(..HEADER).ok_or_else(|| {
            self.corrupt(format!("{} bytes is shorter than the header", bytes.len()))
        })?;
        if &header[..4] != self.magic {
            return Err(self.corrupt("wrong magic".to_owned()));
        }
        let version = u32_at(header, 4);
        if version != self.version {
            return Err(self.corrupt(format!("unknown format version {version}")));
        }
        let stored_dim = u32_at(header, 8) as usize;
        if stored_dim != dim {
            return Err(self.corrupt(format!("dimension {stored_dim}, expected {dim}")));
        }
        Ok((u32_at(header, 12) as usize, &bytes[HEADER..]))
    }

    /// A corruption error naming this kind.
    pub(crate) fn corrupt(&self, detail: String) -> Error {
        Error::Corrupt { what: self.what, detail }
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
