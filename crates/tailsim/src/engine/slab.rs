/// A slab: values in a vector addressed by u32 slot, freed slots reused LIFO (warm in cache).
/// Once it has grown to the peak number of live values it never allocates again.
pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { items: Vec::new(), free: Vec::new(), live: 0 }
    }
}

impl<T> Slab<T> {
    #[inline]
    pub fn insert(&mut self, v: T) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.items[i as usize] = v;
            i
        } else {
            self.items.push(v);
            (self.items.len() - 1) as u32
        }
    }
    /// Mark a slot free. The value stays in place until overwritten (no drop, no move).
    #[inline]
    pub fn remove(&mut self, i: u32) {
        self.live -= 1;
        self.free.push(i);
    }
    /// Where slot `i` is or would be, for a prefetch hint (engine/prefetch.rs): an address, not tested
    /// against the slab's length, never to be read through.
    #[inline(always)]
    pub fn address(&self, i: u32) -> *const T {
        self.items.as_ptr().wrapping_add(i as usize)
    }
    #[inline]
    pub fn try_get(&self, i: u32) -> Option<&T> {
        self.items.get(i as usize)
    }
    #[inline]
    pub fn get(&self, i: u32) -> &T {
        &self.items[i as usize]
    }
    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
    pub fn live(&self) -> usize {
        self.live
    }
    pub fn capacity_used(&self) -> usize {
        self.items.len()
    }
}
