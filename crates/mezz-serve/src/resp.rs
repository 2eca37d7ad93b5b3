//! The RESP wire format: an incremental request parser (multibulk and inline requests) with
//! Redis's limits and error texts, and the reply encoder for RESP2 and RESP3.
//!
//! Invariants: the parser never allocates more than the bytes it has been given plus a
//! bounded amount (declared lengths are checked against the limits before anything is
//! reserved, and reservations are capped); it never panics on any input (fuzzed by
//! `fuzz/fuzz_targets/resp_request.rs`). A protocol error is final for the connection, as
//! in Redis: the caller replies with the error and closes.
//!
//! Thread-safety: plain values; each connection owns its parser state.

/// Longest inline request and longest `*N` / `$N` header line, as Redis's
/// `PROTO_INLINE_MAX_SIZE`.
pub const INLINE_MAX: usize = 64 * 1024;

/// One request: the command name and its arguments.
pub type Request = Vec<Vec<u8>>;

/// Limits on one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string (Redis's `proto-max-bulk-len`, default 512 MB).
    pub max_bulk_len: usize,
    /// Most arguments in one multibulk request.
    pub max_multibulk_len: usize,
}

impl Limits {
    /// The limits of an authenticated client: 512 MB bulk strings, 1 048 576 arguments.
    pub const DEFAULT: Limits = Limits {
        max_bulk_len: 512 * 1024 * 1024,
        max_multibulk_len: 1024 * 1024,
    };
    /// The limits before AUTH when a password is set (as Redis: 10 arguments, 16 KB).
    pub const UNAUTHENTICATED: Limits = Limits {
        max_bulk_len: 16 * 1024,
        max_multibulk_len: 10,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// A protocol error; its text is Redis's (sent as `-ERR Protocol error: ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn perr(s: &str) -> ProtocolError {
    ProtocolError(s.to_string())
}

/// Finds `\r\n` in `buf` at or after `from`; returns the index of `\r`.
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let tail = buf.get(from..)?;
    tail.windows(2).position(|w| w == b"\r\n").map(|p| p + from)
}

/// Parses a decimal integer as Redis's `string2ll` (optional `-`, digits, no `+`, no
/// leading zeros other than "0" itself, fits in i64).
#[must_use]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    if digits.len() > 1 && digits.first() == Some(&b'0') {
        return None;
    }
    if neg && digits == b"0" {
        return None;
    }
    let mut v: i128 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i128::from(d - b'0');
    }
    if neg {
        v = -v;
    }
    i64::try_from(v).ok()
}

/// Parses one request from the front of `buf` (a convenience over [`Parser`] for a buffer
/// that holds whole requests).
///
/// Returns `Ok(Some((args, consumed)))` for a complete request (`args` may be empty for an
/// empty inline line or `*0`, which the caller skips), `Ok(None)` when more bytes are
/// needed, and `Err` for a protocol violation.
///
/// # Errors
/// Redis's protocol error texts: invalid multibulk or bulk length, `expected '$'`, too big
/// inline request, unbalanced quotes.
pub fn parse_request(
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<(Request, usize)>, ProtocolError> {
    let mut p = Parser::default();
    match p.parse(buf, limits)? {
        (Some(args), used) => Ok(Some((args, used))),
        (None, _) => Ok(None),
    }
}

/// An incremental request parser: the complete arguments of a multibulk request that has
/// not fully arrived are kept here (and their bytes consumed), so a large request that
/// arrives in many reads is parsed in time linear in its size.
#[derive(Debug, Default)]
pub struct Parser {
    args: Vec<Vec<u8>>,
    left: usize,
    in_multibulk: bool,
}

impl Parser {
    /// Parses from the front of `buf`. Returns the request if one is complete, and how
    /// many bytes of `buf` were consumed either way (the caller drops them before the next
    /// call).
    ///
    /// # Errors
    /// As [`parse_request`].
    pub fn parse(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<(Option<Request>, usize), ProtocolError> {
        let mut pos = 0;
        if !self.in_multibulk {
            match buf.first() {
                None => return Ok((None, 0)),
                Some(b'*') => {}
                Some(_) => {
                    return Ok(match parse_inline(buf)? {
                        Some((args, used)) => (Some(args), used),
                        None => (None, 0),
                    });
                }
            }
            let Some(eol) = find_crlf(buf, 1) else {
                if buf.len() > INLINE_MAX {
                    return Err(perr("too big mbulk count string"));
                }
                return Ok((None, 0));
            };
            let n = buf
                .get(1..eol)
                .and_then(parse_i64)
                .ok_or_else(|| perr("invalid multibulk length"))?;
            pos = eol + 2;
            if n <= 0 {
                return Ok((Some(Vec::new()), pos));
            }
            let n = usize::try_from(n).map_err(|_| perr("invalid multibulk length"))?;
            if n > limits.max_multibulk_len {
                return Err(perr("invalid multibulk length"));
            }
            self.in_multibulk = true;
            self.left = n;
            self.args = Vec::with_capacity(n.min(1024));
        }
        while self.left > 0 {
            match buf.get(pos) {
                None => return Ok((None, pos)),
                Some(b'$') => {}
                Some(&c) => {
                    return Err(ProtocolError(format!(
                        "expected '$', got '{}'",
                        char::from(c).escape_default()
                    )));
                }
            }
            let Some(eol) = find_crlf(buf, pos + 1) else {
                if buf.len() - pos > INLINE_MAX {
                    return Err(perr("too big bulk count string"));
                }
                return Ok((None, pos));
            };
            let len = buf
                .get(pos + 1..eol)
                .and_then(parse_i64)
                .ok_or_else(|| perr("invalid bulk length"))?;
            let len = usize::try_from(len).map_err(|_| perr("invalid bulk length"))?;
            if len > limits.max_bulk_len {
                return Err(perr("invalid bulk length"));
            }
            let start = eol + 2;
            let end = start
                .checked_add(len)
                .ok_or_else(|| perr("invalid bulk length"))?;
            let Some(data) = buf.get(start..end) else {
                return Ok((None, pos));
            };
            match buf.get(end..end + 2) {
                None => return Ok((None, pos)),
                Some(b"\r\n") => {}
                Some(_) => return Err(perr("invalid bulk length")),
            }
            self.args.push(data.to_vec());
            self.left -= 1;
            pos = end + 2;
        }
        self.in_multibulk = false;
        Ok((Some(std::mem::take(&mut self.args)), pos))
    }
}

fn parse_inline(buf: &[u8]) -> Result<Option<(Request, usize)>, ProtocolError> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > INLINE_MAX {
            return Err(perr("too big inline request"));
        }
        return Ok(None);
    };
    if nl > INLINE_MAX {
        return Err(perr("too big inline request"));
    }
    let mut line = buf.get(..nl).unwrap_or_default();
    if let Some(stripped) = line.strip_suffix(b"\r") {
        line = stripped;
    }
    let args = split_args(line).ok_or_else(|| perr("unbalanced quotes in request"))?;
    Ok(Some((args, nl + 1)))
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Splits an inline request line as Redis's `sdssplitargs`: blanks separate arguments;
/// double quotes take `\n \r \t \b \a \\ \" \xHH` escapes; single quotes take `\'`; a
/// closing quote must be followed by a blank or the end. `None` for unbalanced quotes.
#[must_use]
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    let at = |i: usize| line.get(i).copied();
    loop {
        while at(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        let Some(_) = at(i) else {
            return Some(args);
        };
        let mut cur = Vec::new();
        let mut inq = false;
        let mut insq = false;
        loop {
            let c = at(i);
            if inq {
                match c {
                    None => return None,
                    Some(b'\\') if at(i + 1) == Some(b'x') => {
                        match (at(i + 2).and_then(hex_val), at(i + 3).and_then(hex_val)) {
                            (Some(h), Some(l)) => {
                                cur.push(h * 16 + l);
                                i += 3;
                            }
                            _ => cur.push(b'\\'),
                        }
                    }
                    Some(b'\\') if at(i + 1).is_some() => {
                        i += 1;
                        let e = at(i).unwrap_or_default();
                        cur.push(match e {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 8,
                            b'a' => 7,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if at(i + 1).is_some_and(|c| !c.is_ascii_whitespace()) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(c) => cur.push(c),
                }
            } else if insq {
                match c {
                    None => return None,
                    Some(b'\\') if at(i + 1) == Some(b'\'') => {
                        i += 1;
                        cur.push(b'\'');
                    }
                    Some(b'\'') => {
                        if at(i + 1).is_some_and(|c| !c.is_ascii_whitespace()) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(c) => cur.push(c),
                }
            } else {
                match c {
                    None => break,
                    Some(c) if c.is_ascii_whitespace() => break,
                    Some(b'"') => inq = true,
                    Some(b'\'') => insq = true,
                    Some(c) => cur.push(c),
                }
            }
            i += 1;
        }
        args.push(cur);
    }
}

/// The protocol version a connection speaks (HELLO 2 / HELLO 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// RESP2 (the default).
    Resp2,
    /// RESP3.
    Resp3,
}

/// Appends replies to an output buffer in the connection's protocol.
#[derive(Debug)]
pub struct Out {
    /// The encoded replies not yet written to the socket.
    pub buf: Vec<u8>,
    /// The protocol used for the types that differ between RESP2 and RESP3.
    pub proto: Proto,
}

impl Out {
    /// An empty buffer speaking `proto`.
    #[must_use]
    pub fn new(proto: Proto) -> Out {
        Out {
            buf: Vec::with_capacity(16 * 1024),
            proto,
        }
    }

    fn header(&mut self, tag: u8, n: usize) {
        self.buf.push(tag);
        self.buf.extend_from_slice(n.to_string().as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+OK`.
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// One line after `tag`, CR and LF replaced by spaces (as Redis does).
    fn line(&mut self, tag: u8, s: &str) {
        self.buf.push(tag);
        self.buf.extend(
            s.bytes()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A simple string (`+s`); CR and LF are replaced by spaces.
    pub fn simple(&mut self, s: &str) {
        self.line(b'+', s);
    }

    /// An error: `msg` starts with its code (`ERR ...`, `WRONGTYPE ...`); CR and LF are
    /// replaced by spaces, as Redis does.
    pub fn error(&mut self, msg: &str) {
        self.line(b'-', msg);
    }

    /// An integer.
    pub fn int(&mut self, v: i64) {
        self.buf.push(b':');
        self.buf.extend_from_slice(v.to_string().as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string.
    pub fn bulk(&mut self, b: &[u8]) {
        self.header(b'$', b.len());
        self.buf.extend_from_slice(b);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string or the null reply.
    pub fn opt_bulk(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => self.bulk(b),
            None => self.null(),
        }
    }

    /// The null reply: `$-1` in RESP2, `_` in RESP3.
    pub fn null(&mut self) {
        match self.proto {
            Proto::Resp2 => self.buf.extend_from_slice(b"$-1\r\n"),
            Proto::Resp3 => self.buf.extend_from_slice(b"_\r\n"),
        }
    }

    /// An array header of `n` elements.
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n);
    }

    /// A map header of `n` pairs (`%n` in RESP3, an array of `2n` in RESP2).
    pub fn map(&mut self, n: usize) {
        match self.proto {
            Proto::Resp2 => self.header(b'*', 2 * n),
            Proto::Resp3 => self.header(b'%', n),
        }
    }

    /// A verbatim text (`=` in RESP3, a bulk string in RESP2), as INFO replies.
    pub fn verbatim(&mut self, text: &str) {
        match self.proto {
            Proto::Resp2 => self.bulk(text.as_bytes()),
            Proto::Resp3 => {
                self.header(b'=', text.len() + 4);
                self.buf.extend_from_slice(b"txt:");
                self.buf.extend_from_slice(text.as_bytes());
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(b: &[u8]) -> Result<Option<(Request, usize)>, ProtocolError> {
        parse_request(b, &Limits::DEFAULT)
    }

    #[test]
    fn multibulk_parses_and_waits_for_more() {
        let req = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        let (args, n) = parse(req).expect("valid").expect("complete");
        assert_eq!(args, vec![b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(n, req.len());
        for cut in 0..req.len() {
            assert_eq!(
                parse(&req[..cut]).expect("prefix is valid"),
                None,
                "cut {cut}"
            );
        }
    }

    #[test]
    fn incremental_parse_consumes_complete_arguments() {
        let req = b"*2\r\n$3\r\nGET\r\n$5\r\nhello\r\n*1\r\n$4\r\nPING\r\n";
        for cut in 0..req.len() {
            let mut p = Parser::default();
            let mut buf = req[..cut].to_vec();
            let mut got = Vec::new();
            let mut rest = &req[cut..];
            loop {
                let (args, used) = p.parse(&buf, &Limits::DEFAULT).expect("valid");
                buf.drain(..used);
                match args {
                    Some(a) => got.push(a),
                    None if rest.is_empty() => break,
                    None => {
                        buf.extend_from_slice(&rest[..1]);
                        rest = &rest[1..];
                    }
                }
            }
            assert_eq!(got.len(), 2, "cut {cut}");
            assert_eq!(got[0], vec![b"GET".to_vec(), b"hello".to_vec()]);
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn inline_requests_split_like_redis() {
        let (args, n) = parse(b"set k \"a\\x41\\n\" 'b\\'c'\r\nrest")
            .expect("ok")
            .expect("all");
        assert_eq!(
            args,
            vec![
                b"set".to_vec(),
                b"k".to_vec(),
                b"aA\n".to_vec(),
                b"b'c".to_vec()
            ]
        );
        assert_eq!(n, 24);
        assert_eq!(
            parse(b"get \"k\r\n").unwrap_err().0,
            "unbalanced quotes in request"
        );
        assert_eq!(
            parse(b"get \"k\"x\r\n").unwrap_err().0,
            "unbalanced quotes in request"
        );
        assert_eq!(
            parse(b"\r\n").expect("ok").expect("line").0,
            Vec::<Vec<u8>>::new()
        );
    }

    #[test]
    fn limits_and_bad_lengths_are_errors() {
        assert_eq!(parse(b"*x\r\n").unwrap_err().0, "invalid multibulk length");
        assert_eq!(
            parse(b"*2\r\n$-2\r\n").unwrap_err().0,
            "invalid bulk length"
        );
        assert_eq!(
            parse(b"*1\r\n:3\r\n").unwrap_err().0,
            "expected '$', got ':'"
        );
        assert_eq!(
            parse(b"*1\r\n$1\r\nab\r\n").unwrap_err().0,
            "invalid bulk length"
        );
        assert_eq!(
            parse(b"*1\r\n$536870913\r\n").unwrap_err().0,
            "invalid bulk length"
        );
        assert_eq!(
            parse(b"*1048577\r\n").unwrap_err().0,
            "invalid multibulk length"
        );
        let small = Limits::UNAUTHENTICATED;
        assert!(parse_request(b"*11\r\n", &small).is_err());
        assert!(parse_request(b"*1\r\n$16385\r\n", &small).is_err());
        let long = vec![b'a'; INLINE_MAX + 1];
        assert_eq!(parse(&long).unwrap_err().0, "too big inline request");
        let mut star = b"*".to_vec();
        star.extend(std::iter::repeat_n(b'1', INLINE_MAX + 1));
        assert_eq!(parse(&star).unwrap_err().0, "too big mbulk count string");
    }

    #[test]
    fn integers_parse_as_redis_does() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"-0",
            b"1 ",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn replies_encode_per_protocol() {
        let mut o = Out::new(Proto::Resp2);
        o.null();
        o.map(1);
        o.error("ERR a\r\nb");
        assert_eq!(o.buf, b"$-1\r\n*2\r\n-ERR a  b\r\n");
        let mut o = Out::new(Proto::Resp3);
        o.null();
        o.map(1);
        o.verbatim("x");
        assert_eq!(o.buf, b"_\r\n%1\r\n=5\r\ntxt:x\r\n");
    }
}
