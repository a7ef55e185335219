//! The `PartitionRequest` wire format with its `needsRecovery` byte, and the recovery
//! sentinels' refusal to be serialised: round trips, and typed errors (never a panic) for
//! truncated, malformed and foreign frames.

use recovery_impl::InputChannelInfo;
use recovery_impl::credit_based_sequence_numbering_view_reader::PartitionRequest;
use recovery_impl::netty_message::{
    EventError, FRAME_HEADER_LENGTH, PARTITION_REQUEST_BODY_LENGTH, PartitionRequestMessage, RuntimeEvent, WireError,
    from_serialized_event, to_serialized_event,
};

fn message(needs_recovery: bool, credit: i32) -> PartitionRequestMessage {
    PartitionRequestMessage {
        partition: 0x0102_0304_0506_0708,
        subpartitions: (1, 3),
        request: PartitionRequest {
            receiver: InputChannelInfo {
                gate_idx: 1,
                input_channel_idx: 7,
            },
            credit,
            needs_recovery,
        },
    }
}

#[test]
fn partition_request_round_trips_with_and_without_needs_recovery() {
    for needs_recovery in [false, true] {
        for credit in [0, 2, i32::MAX] {
            let m = message(needs_recovery, credit);
            let frame = m.encode();
            assert_eq!(frame.len(), FRAME_HEADER_LENGTH + PARTITION_REQUEST_BODY_LENGTH);
            assert_eq!(PartitionRequestMessage::decode(&frame), Ok(m));
        }
    }
}

#[test]
fn needs_recovery_is_the_one_last_byte() {
    let off = message(false, 2).encode();
    let on = message(true, 2).encode();
    let differing: Vec<usize> = (0..off.len()).filter(|&i| off[i] != on[i]).collect();
    assert_eq!(differing, vec![off.len() - 1]);
    assert_eq!((off[off.len() - 1], on[on.len() - 1]), (0, 1));
}

#[test]
fn every_truncation_of_a_frame_is_a_typed_error() {
    let frame = message(true, 2).encode();
    for len in 0..frame.len() {
        match PartitionRequestMessage::decode(&frame[..len]) {
            Err(WireError::Truncated { available, .. }) => assert_eq!(available, len),
            other => panic!("prefix of {len} bytes: {other:?}"),
        }
    }
}

#[test]
fn malformed_and_foreign_frames_are_typed_errors() {
    let frame = message(true, 2).encode();
    let mut bad_magic = frame.clone();
    bad_magic[4] ^= 0xFF;
    assert!(matches!(
        PartitionRequestMessage::decode(&bad_magic),
        Err(WireError::BadMagic(_))
    ));
    let mut other_message = frame.clone();
    other_message[8] = 6; // AddCredit
    assert_eq!(
        PartitionRequestMessage::decode(&other_message),
        Err(WireError::UnknownMessageId(6))
    );
    let mut trailing = frame.clone();
    trailing.push(0);
    assert!(matches!(
        PartitionRequestMessage::decode(&trailing),
        Err(WireError::LengthMismatch { .. })
    ));
    let mut negative_credit = message(true, 0).encode();
    let credit_at = negative_credit.len() - 5;
    negative_credit[credit_at..credit_at + 4].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(matches!(
        PartitionRequestMessage::decode(&negative_credit),
        Err(WireError::Malformed { field: "credit", .. })
    ));
    let mut short_length = frame.clone();
    short_length[..4].copy_from_slice(&5u32.to_be_bytes());
    assert!(PartitionRequestMessage::decode(&short_length).is_err());
}

#[test]
fn arbitrary_bytes_never_panic_the_decoders() {
    // A fixed linear congruential sequence: deterministic, no extra dependency.
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let frame = message(true, 2).encode();
    for round in 0..20_000 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let len = (x >> 58) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|i| (x >> ((i % 8) * 8)) as u8).collect();
        if round % 2 == 0 {
            // Mostly a valid frame with one byte flipped, to get past the header.
            bytes = frame.clone();
            let at = (x >> 40) as usize % bytes.len();
            bytes[at] ^= (x >> 16) as u8 | 1;
        }
        let _ = PartitionRequestMessage::decode(&bytes);
        let _ = from_serialized_event(&bytes);
    }
}

#[test]
fn recovery_sentinels_refuse_serialisation_with_a_clear_error() {
    for (event, name) in [
        (RuntimeEvent::RecoveryCheckpointBarrier(3), "RecoveryCheckpointBarrier"),
        (RuntimeEvent::EndOfFetchedChannelState, "EndOfFetchedChannelStateEvent"),
    ] {
        let e = to_serialized_event(&event).unwrap_err();
        assert_eq!(e, EventError::SentinelNotSerializable(name));
        assert!(e.to_string().contains("recovery sentinel and cannot be serialized"));
    }
    for tag in [13i32, 14] {
        assert!(matches!(
            from_serialized_event(&tag.to_be_bytes()),
            Err(EventError::SentinelNotSerializable(_))
        ));
    }
    let bytes = to_serialized_event(&RuntimeEvent::EndOfPartition).unwrap();
    assert_eq!(from_serialized_event(&bytes), Ok(RuntimeEvent::EndOfPartition));
    assert_eq!(
        from_serialized_event(&99i32.to_be_bytes()),
        Err(EventError::UnknownTag(99))
    );
    assert!(matches!(
        from_serialized_event(&[0, 0]),
        Err(EventError::Wire(WireError::Truncated { .. }))
    ));
}

/// `ResumeConsumption` (id 7): the receiver's round trip, and typed errors for every
/// truncation, for a frame of another message and for a `PartitionRequest` taken for one.
#[test]
fn resume_consumption_round_trips_and_rejects_short_and_foreign_frames() {
    use recovery_impl::netty_message::{RESUME_CONSUMPTION_BODY_LENGTH, RESUME_CONSUMPTION_ID, ResumeConsumption};
    let m = ResumeConsumption {
        receiver: InputChannelInfo {
            gate_idx: 2,
            input_channel_idx: 9,
        },
    };
    let frame = m.encode();
    assert_eq!(frame.len(), FRAME_HEADER_LENGTH + RESUME_CONSUMPTION_BODY_LENGTH);
    assert_eq!(frame[8], RESUME_CONSUMPTION_ID);
    assert_eq!(ResumeConsumption::decode(&frame), Ok(m));
    for len in 0..frame.len() {
        assert!(
            ResumeConsumption::decode(&frame[..len]).is_err(),
            "a frame cut at {len} bytes decoded"
        );
    }
    let request = message(true, 1).encode();
    assert_eq!(ResumeConsumption::decode(&request), Err(WireError::UnknownMessageId(2)));
    assert_eq!(
        PartitionRequestMessage::decode(&frame),
        Err(WireError::UnknownMessageId(RESUME_CONSUMPTION_ID))
    );
    let mut long = frame.clone();
    long.push(0);
    assert!(matches!(
        ResumeConsumption::decode(&long),
        Err(WireError::LengthMismatch { .. })
    ));
}
