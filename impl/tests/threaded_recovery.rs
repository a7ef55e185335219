//! Real threads, one local and one remote channel: an IO thread reads recovered state, the task
//! thread converts the channels and consumes through the gate, a network thread serves the
//! remote channel, a producer writes live data, and a recycler returns consumed buffers.
//! Asserts per channel: recovered before live, upstream order, exactly once, every buffer back.
#![cfg(not(loom))]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::{Fixture, deliver};
use recovery_impl::credit_based_sequence_numbering_view_reader::CreditBasedSequenceNumberingViewReader;
use recovery_impl::recovered_input_channel::{RecoveredChannelKind, RecoveredInputChannel};
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::InputChannelHandle;
use recovery_impl::{BufferId, BufferKind, NetworkBuffer};

const RECOVERED: u64 = 3;
const LIVE: u64 = 6;
const FLOATING: usize = 2;

fn live_element(channel: u64, index: u64) -> NetworkBuffer {
    let kind = if index.is_multiple_of(3) {
        BufferKind::Event
    } else {
        BufferKind::Data
    };
    NetworkBuffer::unpooled(
        BufferId(10_000 + (channel * 100 + index) as u32),
        kind,
        channel * 1000 + 100 + index,
    )
}

#[test]
fn recovered_data_precedes_live_data_on_local_and_remote_channels_under_real_threads() {
    for _round in 0..20 {
        run_once();
    }
}

fn run_once() {
    let fixture = Fixture::new(16, FLOATING);
    let partitions = [ResultSubpartition::new(), ResultSubpartition::new()];
    let local = RecoveredInputChannel::new(
        fixture.context(0, 2),
        RecoveredChannelKind::Local {
            partition: Arc::clone(&partitions[0]),
        },
    );
    let remote = RecoveredInputChannel::new(fixture.context(1, 2), RecoveredChannelKind::Remote);
    fixture.gate.set_input_channels(vec![
        InputChannelHandle::Recovered(Arc::clone(&local)),
        InputChannelHandle::Recovered(Arc::clone(&remote)),
    ]);

    // IO thread: readInputChannelState, then finishReadRecoveredState.
    let recovered = [Arc::clone(&local), Arc::clone(&remote)];
    let io = thread::spawn(move || {
        for k in 0..RECOVERED {
            for (c, channel) in recovered.iter().enumerate() {
                let buffer = channel.request_buffer_blocking().unwrap();
                channel
                    .on_recovered_state_buffer(buffer.fill(BufferKind::Data, c as u64 * 1000 + k))
                    .unwrap();
            }
        }
        recovered
            .iter()
            .for_each(|channel| channel.finish_read_recovered_state().unwrap());
    });

    // Producer thread: live data and events for both subpartitions, from the start.
    let producer_partitions = partitions.clone();
    let producer = thread::spawn(move || {
        for index in 0..LIVE {
            for (c, partition) in producer_partitions.iter().enumerate() {
                partition.add(live_element(c as u64, index)).unwrap();
            }
            thread::yield_now();
        }
    });

    // Recycler thread.
    let (to_recycler, recycled) = mpsc::channel::<NetworkBuffer>();
    let recycler = thread::spawn(move || {
        for buffer in recycled {
            buffer.recycle_buffer().unwrap();
        }
    });

    // Network thread: serves the remote channel once its partition request is sent.
    let done = Arc::new(AtomicBool::new(false));
    let network_done = Arc::clone(&done);
    let gate = Arc::clone(&fixture.gate);
    let served = Arc::clone(&partitions[1]);
    let network = thread::spawn(move || {
        let channel = loop {
            if let Some(InputChannelHandle::Remote(channel)) = gate.channel(1)
                && channel.partition_request().is_some()
            {
                break channel;
            }
            thread::sleep(Duration::from_micros(200));
        };
        let request = channel.partition_request().unwrap();
        let mut reader = CreditBasedSequenceNumberingViewReader::new(&request, served).unwrap();
        while !network_done.load(Ordering::SeqCst) {
            if deliver(&mut reader, &channel).unwrap() == 0 {
                thread::sleep(Duration::from_micros(100));
            }
        }
    });

    // Task thread (this one): convert after the IO thread finished, then consume.
    io.join().unwrap();
    fixture.gate.request_partitions(true).unwrap();
    let mut seen: [Vec<(BufferKind, u64)>; 2] = [Vec::new(), Vec::new()];
    let expected_per_channel = (RECOVERED + LIVE) as usize;
    while seen.iter().map(Vec::len).sum::<usize>() < 2 * expected_per_channel {
        let next = fixture.gate.get_next().unwrap().expect("gate open");
        assert_ne!(next.buffer.kind(), BufferKind::EndOfFetchedChannelState);
        seen[next.channel_info.input_channel_idx as usize].push((next.buffer.kind(), next.buffer.payload()));
        to_recycler.send(next.buffer).unwrap();
    }
    assert!(fixture.gate.all_state_consumed());
    done.store(true, Ordering::SeqCst);
    network.join().unwrap();
    producer.join().unwrap();
    drop(to_recycler);
    recycler.join().unwrap();

    for (c, got) in seen.iter().enumerate() {
        let c = c as u64;
        let recovered = (0..RECOVERED).map(|k| (BufferKind::Data, c * 1000 + k));
        let live = (0..LIVE).map(|i| {
            let element = live_element(c, i);
            (element.kind(), element.payload())
        });
        let expected: Vec<(BufferKind, u64)> = recovered.chain(live).collect();
        assert_eq!(got, &expected, "channel {c}");
    }
    fixture.gate.close().unwrap();
    partitions.iter().for_each(|partition| partition.release().unwrap());
    fixture.assert_all_buffers_returned(FLOATING);
}
