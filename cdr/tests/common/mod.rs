//! What more than one of cdr's test files needs.

use std::io::{Read, Write};
use std::net::TcpStream;

/// The served Explorer's status (what its status panel polls), if it answers.
pub fn explorer_status(port: u16) -> Option<serde_json::Value> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .write_all(b"GET /.status HTTP/1.1\r\nHost: explorer\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let body = reply.split_once("\r\n\r\n")?.1;
    serde_json::from_str(body).ok()
}
