//! Reads bounded by what is read, not by the size the file system reports: a pipe or a device
//! (`/dev/zero`) reports none, and a process's output has none. Each reader holds at most its
//! cap and one byte more, then refuses the input.

use std::io::{BufRead, BufReader, ErrorKind};
use std::path::Path;

/// A file that could not be read whole.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be opened or read, or is not UTF-8 text.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file has more than the cap.
    #[error("{path} is more than {max} bytes ({read} read)")]
    TooLarge {
        /// The file.
        path: String,
        /// What was read of it before it was refused: the cap and one byte.
        read: u64,
        /// The cap.
        max: u64,
    },
}

/// The text of the file at `path`, if it has at most `max` bytes. Reads at most `max + 1` bytes
/// whatever the file is.
pub fn read_file(path: &Path, max: u64) -> Result<String, FileError> {
    let io = |reason: String| FileError::Io {
        path: path.display().to_string(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| io(e.to_string()))?;
    // A regular file's size, so that its bytes are read into one buffer of that size.
    let size = file.metadata().map_or(0, |m| m.len());
    let read = read_capped(&mut BufReader::with_capacity(1 << 16, file), max, None, size);
    match read.map_err(|e| io(e.to_string()))? {
        Some(bytes) => String::from_utf8(bytes).map_err(|e| io(format!("not UTF-8 text ({e})"))),
        None => Err(FileError::TooLarge {
            path: path.display().to_string(),
            read: max.saturating_add(1),
            max,
        }),
    }
}

/// The next line of `from`, with its `\n` (as [`BufRead::read_line`]; empty at the end), if it
/// has at most `max` bytes before the `\n`. A longer line is an `InvalidData` error, after at most
/// `max + 1` bytes were read of it; the rest of it is left unread.
pub fn read_line(from: &mut impl BufRead, max: u64) -> std::io::Result<String> {
    let Some(bytes) = read_capped(from, max, Some(b'\n'), 0)? else {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            format!("a line longer than the cap of {max} bytes"),
        ));
    };
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, format!("a line not UTF-8 ({e})")))
}

/// The bytes of `from` up to the end, or up to and with the first `end` byte if one is given,
/// if there are at most `max` before it; `None` once `max + 1` bytes were read without an end.
/// `expected` is how many bytes the first buffer has room for (beyond it, they grow as the bytes
/// come). The bytes go into buffers that are never reallocated, each as large as all before it,
/// and are joined only once accepted: a refused input holds `max + 1` bytes, no more.
fn read_capped(from: &mut impl BufRead, max: u64, end: Option<u8>, expected: u64) -> std::io::Result<Option<Vec<u8>>> {
    const SMALLEST: usize = 8 << 10;
    let limit = usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX);
    let first = usize::try_from(expected).unwrap_or(usize::MAX).saturating_add(1);
    let mut full: Vec<Vec<u8>> = Vec::new();
    let mut piece = Vec::with_capacity(first.max(SMALLEST).min(limit));
    let (mut total, mut ended) = (0, false);
    while total < limit && !ended {
        let available = match from.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            break;
        }
        if piece.len() == piece.capacity() {
            let next = Vec::with_capacity(total.max(SMALLEST).min(limit - total));
            full.push(std::mem::replace(&mut piece, next));
        }
        let room = (limit - total).min(piece.capacity() - piece.len()).min(available.len());
        let n = match end.and_then(|end| available[..room].iter().position(|&b| b == end)) {
            Some(at) => {
                ended = true;
                at + 1
            }
            None => room,
        };
        piece.extend_from_slice(&available[..n]);
        from.consume(n);
        total += n;
    }
    if total == limit && !ended {
        return Ok(None);
    }
    if full.is_empty() {
        return Ok(Some(piece));
    }
    full.push(piece);
    Ok(Some(full.concat()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_line_is_refused_after_the_cap() {
        let started = std::time::Instant::now();
        let mut endless = BufReader::new(std::io::repeat(b'x'));
        let e = read_line(&mut endless, 1 << 20).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(e.to_string(), "a line longer than the cap of 1048576 bytes");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn lines_up_to_the_cap_are_read_one_at_a_time() {
        let mut from = BufReader::new(&b"abc\nabcd\nabcde\nlast"[..]);
        assert_eq!(read_line(&mut from, 4).unwrap(), "abc\n");
        assert_eq!(read_line(&mut from, 4).unwrap(), "abcd\n");
        assert!(read_line(&mut from, 4).is_err());
        // The reader stays usable after a refused line: what follows is the rest of it.
        assert_eq!(read_line(&mut from, 4).unwrap(), "\n");
        assert_eq!(read_line(&mut from, 4).unwrap(), "last");
        assert_eq!(read_line(&mut from, 4).unwrap(), "");
    }

    /// A line read into several buffers, one as long as the cap with its `\n`, comes whole.
    #[test]
    fn a_long_line_comes_whole() {
        let line = "x".repeat(100_000) + "\n";
        let two = line.repeat(2);
        let mut from = BufReader::with_capacity(1000, two.as_bytes());
        assert_eq!(read_line(&mut from, 100_000).unwrap(), line);
        assert_eq!(read_line(&mut from, 100_000).unwrap(), line);
        assert_eq!(read_line(&mut from, 100_000).unwrap(), "");
        let mut from = BufReader::with_capacity(1000, line.as_bytes());
        assert!(read_line(&mut from, 99_999).is_err());
    }

    #[test]
    fn an_endless_device_is_refused_after_the_cap() {
        match read_file(Path::new("/dev/zero"), 1000) {
            Err(FileError::TooLarge {
                read: 1001, max: 1000, ..
            }) => {}
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            read_file(Path::new("/nonexistent-dir/f"), 1000),
            Err(FileError::Io { .. })
        ));
    }
}
