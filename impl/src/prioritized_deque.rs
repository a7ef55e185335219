//! Mirrors Flink's `PrioritizedDeque`: a deque whose priority elements sit at the head, in the
//! order they were prioritised, followed by the ordinary elements in FIFO order.
//!
//! Locking contract: none; the owner guards it (`receivedBuffers`, `inputChannelsWithData`,
//! the subpartition's `buffers`).

use std::collections::VecDeque;

use crate::error::{ChannelError, Result};

/// Mirrors `org.apache.flink.runtime.io.network.partition.PrioritizedDeque`.
#[derive(Debug, Clone)]
pub struct PrioritizedDeque<T> {
    deque: VecDeque<T>,
    num_priority_elements: usize,
}

impl<T> Default for PrioritizedDeque<T> {
    fn default() -> Self {
        Self {
            deque: VecDeque::new(),
            num_priority_elements: 0,
        }
    }
}

impl<T> PrioritizedDeque<T> {
    /// An empty deque.
    pub fn new() -> Self {
        Self::default()
    }

    /// `addPriorityElement(element)`: after the existing priority elements.
    pub fn add_priority_element(&mut self, element: T) {
        self.deque.insert(self.num_priority_elements, element);
        self.num_priority_elements += 1;
    }

    /// `add(element)`: at the tail.
    pub fn add(&mut self, element: T) {
        self.deque.push_back(element);
    }

    /// `poll()`: the head, priority elements first.
    pub fn poll(&mut self) -> Option<T> {
        let head = self.deque.pop_front()?;
        self.num_priority_elements = self.num_priority_elements.saturating_sub(1);
        Some(head)
    }

    /// `peek()`.
    pub fn peek(&self) -> Option<&T> {
        self.deque.front()
    }

    /// `getNumPriorityElements()`.
    pub fn num_priority_elements(&self) -> usize {
        self.num_priority_elements
    }

    /// `size()`.
    pub fn len(&self) -> usize {
        self.deque.len()
    }

    /// `isEmpty()`.
    pub fn is_empty(&self) -> bool {
        self.deque.is_empty()
    }

    /// Iterates head first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.deque.iter()
    }

    /// The element at `index` from the head.
    pub fn get(&self, index: usize) -> Option<&T> {
        self.deque.get(index)
    }

    /// Removes the element at `index` (an iterator's `remove()`).
    pub fn remove_at(&mut self, index: usize) -> Option<T> {
        let element = self.deque.remove(index)?;
        if index < self.num_priority_elements {
            self.num_priority_elements -= 1;
        }
        Some(element)
    }

    /// `getAndRemove(preSelect)`: removes the first element, head first, that matches; Flink
    /// throws `NoSuchElementException` when none does, here [`ChannelError::NoSuchElement`].
    pub fn get_and_remove(&mut self, pre_select: impl Fn(&T) -> bool) -> Result<T> {
        let index = self
            .deque
            .iter()
            .position(pre_select)
            .ok_or_else(|| ChannelError::NoSuchElement("no element of the deque matches".to_owned()))?;
        Ok(self.remove_at(index).expect("the index was found"))
    }

    /// Removes everything, head first.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.num_priority_elements = 0;
        self.deque.drain(..)
    }
}
