//! Fuzzes the PROXY protocol parser with arbitrary bytes, alone and after each signature: nothing
//! may panic; a header's length never runs past the input, and whatever precedes a decision made
//! on the whole input was "need more bytes" (the parser never decides differently on a prefix).
#![no_main]
use libfuzzer_sys::fuzz_target;
use spindle_core::net::proxy::{parse, Parsed};

fuzz_target!(|data: &[u8]| {
    for input in [data.to_vec(), [b"PROXY ".as_slice(), data].concat(), [b"\r\n\r\n\0\r\nQUIT\n".as_slice(), data].concat()] {
        let whole = parse(&input);
        if let Parsed::Header(_, len) = &whole {
            assert!(*len <= input.len());
            // Cut before its end, the header needs more bytes.
            assert_eq!(parse(&input[..len - 1]), Parsed::NeedMore);
            // What follows it does not change it.
            assert_eq!(parse(&input[..*len]), whole);
        }
    }
});
