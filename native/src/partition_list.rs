//! librdkafka's topic partition list, as the consumer assigns and asks positions (consumer.rs) and the producer
//! commits a transaction's offsets (producer.rs).

use std::ffi::c_int;

use pyo3::prelude::*;
use rdkafka_sys as rd;

use crate::c_string;

/// A topic partition list, destroyed on drop.
pub(crate) struct PartitionList(pub(crate) *mut rd::rd_kafka_topic_partition_list_t);

impl PartitionList {
    pub(crate) fn new(partitions: &[(String, i32, i64)]) -> PyResult<Self> {
        // SAFETY: rd_kafka_topic_partition_list_new has no preconditions; the guard owns what it returns.
        let list = PartitionList(unsafe { rd::rd_kafka_topic_partition_list_new(partitions.len() as c_int) });
        for (topic, partition, offset) in partitions {
            let c_topic = c_string(topic, "a topic name")?;
            // SAFETY: the list is live and the topic NUL-terminated (librdkafka copies it); `add` returns the entry.
            unsafe { (*rd::rd_kafka_topic_partition_list_add(list.0, c_topic.as_ptr(), *partition)).offset = *offset };
        }
        Ok(list)
    }

    pub(crate) fn entries(&self) -> &[rd::rd_kafka_topic_partition_t] {
        // SAFETY: a live list holds `cnt` entries at `elems`, which is null when the list was made empty.
        unsafe {
            let list = &*self.0;
            if list.elems.is_null() {
                &[]
            } else {
                std::slice::from_raw_parts(list.elems, list.cnt as usize)
            }
        }
    }
}

impl Drop for PartitionList {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the guard owns the list.
            unsafe { rd::rd_kafka_topic_partition_list_destroy(self.0) }
        }
    }
}
