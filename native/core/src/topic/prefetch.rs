//! Owns the software prefetch hint used by the trie walk. Stateless; any thread.

/// Asks the CPU to start loading the cache line of `p`, so that independent misses (sibling
/// branches of a match, a node and the edge slot of its next level) overlap instead of queueing.
/// A hint only: no effect on results, no-op off x86_64.
#[inline(always)]
pub(crate) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults and `p` is a valid reference.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const T as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
