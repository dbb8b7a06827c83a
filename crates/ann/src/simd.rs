//! AVX2 kernels of the integer dot products, chosen at run time.
//!
//! The portable kernels in [`quant`](crate::quant) are vectorised for the baseline x86-64 target
//! (SSE2: eight i16 products a `pmaddwd`); on a CPU with AVX2 these do sixteen. Integer sums are
//! exact (they wrap, as the portable ones do, and cannot below 131,072 dimensions), so both give
//! the same i32 bit for bit whatever the order of additions: which kernel ran never shows in a
//! score, a list or a pair.

/// Whether the AVX2 kernels may run here, probed once (the standard library caches it).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Whether the AVX2 kernels may run here: never off x86-64.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub(crate) fn has_avx2() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{dot_wide as dot_wide_avx2, dot_wide_bytes as dot_wide_bytes_avx2};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_shuffle_epi32,
        _mm256_add_epi32, _mm256_castsi256_si128, _mm256_cvtepi8_epi16, _mm256_extracti128_si256,
        _mm256_loadu_si256, _mm256_madd_epi16, _mm256_setzero_si256,
    };

    /// Elements a step: sixteen i16 lanes of one 256-bit register.
    const STEP: usize = 16;

    /// The eight i32 lanes of `v` added, wrapping.
    #[target_feature(enable = "avx2")]
    fn sum_lanes(v: __m256i) -> i32 {
        let half = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let quarter = _mm_add_epi32(half, _mm_shuffle_epi32::<0b01_00_11_10>(half));
        let last = _mm_add_epi32(quarter, _mm_shuffle_epi32::<0b10_11_00_01>(quarter));
        _mm_cvtsi128_si32(last)
    }

    /// `Σ a[i] × b[i]` over the shorter length, as `quant::dot_wide_bytes`: each byte of `b` is
    /// an `i8` in two's complement.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2 ([`has_avx2`](super::has_avx2)).
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn dot_wide_bytes(a: &[i16], b: &[u8]) -> i32 {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let (ca, cb) = (a.chunks_exact(STEP), b.chunks_exact(STEP));
        let tail = ca
            .remainder()
            .iter()
            .zip(cb.remainder())
            .fold(0i32, |s, (&x, &y)| s.wrapping_add(i32::from(x) * i32::from(y as i8)));
        let mut acc = _mm256_setzero_si256();
        for (x, y) in ca.zip(cb) {
            // SAFETY: `x` holds 16 i16 (32 bytes) and `y` 16 bytes, the widths of the unaligned
            // loads; AVX2 is enabled on this function and guaranteed by the caller.
            let (q, m) = unsafe {
                (
                    _mm256_loadu_si256(x.as_ptr().cast::<__m256i>()),
                    _mm_loadu_si128(y.as_ptr().cast::<__m128i>()),
                )
            };
            // Sign-extend the member's bytes to i16, multiply, and add adjacent products to i32:
            // |x × y| ≤ 128 × 128, so the pair sums cannot overflow.
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(q, _mm256_cvtepi8_epi16(m)));
        }
        sum_lanes(acc).wrapping_add(tail)
    }

    /// `Σ a[i] × b[i]` over the shorter length, as `quant::dot_wide`.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2 ([`has_avx2`](super::has_avx2)).
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn dot_wide(a: &[i16], b: &[i16]) -> i32 {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let (ca, cb) = (a.chunks_exact(STEP), b.chunks_exact(STEP));
        let tail = ca
            .remainder()
            .iter()
            .zip(cb.remainder())
            .fold(0i32, |s, (&x, &y)| s.wrapping_add(i32::from(x) * i32::from(y)));
        let mut acc = _mm256_setzero_si256();
        for (x, y) in ca.zip(cb) {
            // SAFETY: `x` and `y` hold 16 i16 each (32 bytes), the width of the unaligned loads;
            // AVX2 is enabled on this function and guaranteed by the caller.
            let (p, q) = unsafe {
                (
                    _mm256_loadu_si256(x.as_ptr().cast::<__m256i>()),
                    _mm256_loadu_si256(y.as_ptr().cast::<__m256i>()),
                )
            };
            // A pair sum overflows only for four −32768s, and then wraps to what the portable
            // kernel's wrapping sum gives; widened int8 codes never come near.
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, q));
        }
        sum_lanes(acc).wrapping_add(tail)
    }
}
