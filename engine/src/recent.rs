//! `Recent`: what was answered lately for a short key, in a table of fixed size that the
//! explorer's threads share (direct-mapped: a key's slot is chosen by its hash, and the next key
//! of that slot replaces it). The explorer keeps canonical keys by world in one: a state's
//! successors repeat (one world by several actions or outcomes), and so do those of the states
//! expanded one after the other, so about half the keys are answered here, at a fixed cost in
//! memory that does not grow with the run.
//!
//! Shared, not one a thread (session 18): with one table a thread, each saw only its own states'
//! successors, and two threads found 42 % of the keys where one thread found 52 %.
//!
//! A slot is read without a lock: its version is odd while a thread writes it, and a read that
//! saw the version change (or odd) is a miss, so a read never returns half of one answer and half
//! of another (a sequence lock over atomic words: no unsafe code). A thread that finds the slot
//! being written does not write it.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// A key: a few words (`Recent::find`), never all zero.
pub const KEY_WORDS: usize = 5;
pub type Key = [u64; KEY_WORDS];

/// An answer's room: its length (a byte), then up to 31 bytes.
const ANSWER_WORDS: usize = 4;
pub const ANSWER_BYTES: usize = 8 * ANSWER_WORDS;
/// A slot: its version, the key, the answer.
const SLOT_WORDS: usize = 1 + KEY_WORDS + ANSWER_WORDS;

pub struct Recent {
    slots: Vec<[AtomicU64; SLOT_WORDS]>,
}

impl Recent {
    /// A table of `slots` slots (a power of two), every one empty.
    pub fn new(slots: usize) -> Self {
        assert!(slots.is_power_of_two());
        Recent { slots: (0..slots).map(|_| std::array::from_fn(|_| AtomicU64::new(0))).collect() }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<[AtomicU64; SLOT_WORDS]>()
    }

    fn slot(&self, key: &Key) -> usize {
        // FxHash's round a word; the top bits, the best mixed, choose the slot
        let n = self.slots.len();
        let h = key.iter().fold(0u64, |h, x| (h.rotate_left(5) ^ x).wrapping_mul(0xf135_7aea_2e62_a9c5));
        h.rotate_left(n.trailing_zeros()) as usize & (n - 1)
    }

    /// The answer kept for `key` into `out` (true), or false (then `put` it once known).
    pub fn find(&self, key: &Key, out: &mut Vec<u8>) -> bool {
        let s = &self.slots[self.slot(key)];
        let v = s[0].load(Ordering::Acquire);
        if v & 1 == 1 {
            return false;
        }
        for (w, k) in s[1..=KEY_WORDS].iter().zip(key) {
            if w.load(Ordering::Relaxed) != *k {
                return false;
            }
        }
        let mut a = [0u8; ANSWER_BYTES];
        for (chunk, w) in a.chunks_exact_mut(8).zip(&s[1 + KEY_WORDS..]) {
            chunk.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        // the words read before the version is read again
        fence(Ordering::Acquire);
        if s[0].load(Ordering::Relaxed) != v {
            return false;
        }
        let len = a[0] as usize;
        if len >= ANSWER_BYTES {
            return false;
        }
        out.clear();
        out.extend_from_slice(&a[1..1 + len]);
        true
    }

    /// Keeps `answer` for `key` (an answer of ANSWER_BYTES or more is not kept; nor is one whose
    /// slot another thread is writing).
    pub fn put(&self, key: &Key, answer: &[u8]) {
        if answer.len() >= ANSWER_BYTES {
            return;
        }
        let s = &self.slots[self.slot(key)];
        let v = s[0].load(Ordering::Relaxed);
        if v & 1 == 1 || s[0].compare_exchange(v, v + 1, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return;
        }
        // the version made odd before any word changes
        fence(Ordering::Release);
        for (w, k) in s[1..=KEY_WORDS].iter().zip(key) {
            w.store(*k, Ordering::Relaxed);
        }
        let mut a = [0u8; ANSWER_BYTES];
        a[0] = answer.len() as u8;
        a[1..1 + answer.len()].copy_from_slice(answer);
        for (chunk, w) in a.chunks_exact(8).zip(&s[1 + KEY_WORDS..]) {
            w.store(u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])), Ordering::Relaxed);
        }
        s[0].store(v + 2, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(w: u64) -> Key {
        [w, 1, 2, 3, 4]
    }

    fn found(r: &Recent, k: &Key) -> Option<Vec<u8>> {
        let mut out = vec![9, 9];
        r.find(k, &mut out).then_some(out)
    }

    #[test]
    fn answers_what_was_put_and_nothing_else() {
        let r = Recent::new(4);
        assert_eq!(found(&r, &key(7)), None, "an empty table answered");
        r.put(&key(7), b"xyz");
        assert_eq!(found(&r, &key(7)), Some(b"xyz".to_vec()));
        assert_eq!(found(&r, &key(8)), None);
        // too long to keep
        r.put(&key(9), &[1; ANSWER_BYTES]);
        assert_eq!(found(&r, &key(9)), None);
        r.put(&key(10), &[2; ANSWER_BYTES - 1]);
        assert_eq!(found(&r, &key(10)), Some(vec![2; ANSWER_BYTES - 1]));
    }

    #[test]
    fn a_key_of_the_same_slot_replaces_the_one_before() {
        let r = Recent::new(1);
        r.put(&key(1), b"1");
        r.put(&key(2), b"2");
        assert_eq!(found(&r, &key(1)), None);
        assert_eq!(found(&r, &key(2)), Some(b"2".to_vec()));
    }

    #[test]
    fn a_slot_being_written_is_neither_read_nor_written() {
        let r = Recent::new(1);
        r.put(&key(1), b"1");
        // another thread's write under way: the version odd
        r.slots[0][0].fetch_add(1, Ordering::Relaxed);
        assert_eq!(found(&r, &key(1)), None);
        r.put(&key(2), b"2");
        r.slots[0][0].fetch_add(1, Ordering::Relaxed);
        assert_eq!(found(&r, &key(1)), Some(b"1".to_vec()));
        assert_eq!(found(&r, &key(2)), None);
    }

    #[test]
    fn threads_writing_one_slot_never_read_a_mixed_answer() {
        // two keys whose answers differ in every byte, written over each other in one slot
        // while a reader checks that what it finds is the whole answer of the key it asked
        // (with `find`'s two version checks taken out, 3 of 4 runs found a mixed answer)
        let r = Recent::new(1);
        let answer = |k: u64| vec![k as u8; ANSWER_BYTES - 1];
        let stop = std::sync::atomic::AtomicBool::new(false);
        // the writers stop however the reader ends (a failed check included)
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let (hits, mixed) = std::thread::scope(|s| {
            for k in [1u64, 2] {
                let (r, stop) = (&r, &stop);
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        r.put(&key(k), &answer(k));
                    }
                });
            }
            let _stop = Stop(&stop);
            let (mut out, mut hits, mut mixed) = (Vec::new(), 0u64, 0u64);
            for i in 0..3_000_000u64 {
                let k = 1 + i % 2;
                if r.find(&key(k), &mut out) {
                    hits += 1;
                    mixed += (out != answer(k)) as u64;
                }
            }
            (hits, mixed)
        });
        assert_eq!(mixed, 0, "{mixed} of {hits} answers found were not the key's own");
        assert!(hits > 0, "no read ever found an answer");
    }
}
