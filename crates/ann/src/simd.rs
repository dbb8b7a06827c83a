//! AVX2 kernels of the dot products, chosen at run time.
//!
//! The portable kernels in [`quant`](crate::quant) are vectorised for the baseline x86-64 target
//! (SSE2: eight i16 products a `pmaddwd`); on a CPU with AVX2 these do sixteen. Integer sums are
//! exact (they wrap, as the portable ones do, and cannot below 131,072 dimensions), so both give
//! the same i32 bit for bit whatever the order of additions: which kernel ran never shows in a
//! score, a list or a pair. The f32 kernel keeps the portable one's order of additions instead
//! (its thirty-two accumulators, two four-lane ones to a register, each a multiply then an add,
//! never fused), so it too gives the same bits.

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
pub(crate) use x86::{
    dot_f32 as dot_f32_avx2, dot_wide as dot_wide_avx2, dot_wide_bytes as dot_wide_bytes_avx2,
};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_shuffle_epi32,
        _mm256_add_epi32, _mm256_add_ps, _mm256_castsi256_si128, _mm256_cvtepi8_epi16,
        _mm256_extracti128_si256, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_madd_epi16,
        _mm256_mul_ps, _mm256_setzero_ps, _mm256_setzero_si256, _mm256_storeu_ps,
    };

    /// `Σ a[i] × b[i]` over the shorter length, as `quant::dot_f32_portable` computes it, bit
    /// for bit: per block of 32 elements, accumulator `r` (of eight) adds the products of
    /// elements `4r..4r + 4` lane by lane; here accumulators `2k` and `2k + 1` share register
    /// `k`. Then the same pairwise sums and the same tail.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2 ([`has_avx2`](super::has_avx2)).
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let (ca, cb) = (a.chunks_exact(32), b.chunks_exact(32));
        let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
        let mut acc = [_mm256_setzero_ps(); 4];
        for (x, y) in ca.zip(cb) {
            for (k, acc) in acc.iter_mut().enumerate() {
                let (x, y) = (&x[8 * k..8 * k + 8], &y[8 * k..8 * k + 8]);
                // SAFETY: `x` and `y` hold 8 f32 each (32 bytes), the width of the unaligned
                // loads; AVX2 (and so AVX) is enabled on this function and guaranteed by the
                // caller.
                let (p, q) = unsafe { (_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr())) };
                *acc = _mm256_add_ps(*acc, _mm256_mul_ps(p, q));
            }
        }
        let mut lanes = [[0.0f32; 8]; 4];
        for (out, v) in lanes.iter_mut().zip(acc) {
            // SAFETY: `out` holds 8 f32, the width of the unaligned store.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
        }
        let at = |r: usize, l: usize| lanes[r / 2][(r % 2) * 4 + l];
        let mut s = [0.0f32; 4];
        for (l, s) in s.iter_mut().enumerate() {
            *s = ((at(0, l) + at(1, l)) + (at(2, l) + at(3, l)))
                + ((at(4, l) + at(5, l)) + (at(6, l) + at(7, l)));
        }
        ((s[0] + s[1]) + (s[2] + s[3])) + tail
    }

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
