package resp

import "strconv"

// The Append functions write RESP2 replies (and, for clients, commands)
// into a caller-owned buffer and return the extended slice, in the style of
// strconv.AppendInt. They allocate only when dst lacks room, and never fail.

const crlf = "\r\n"

// appendLine appends s with CR and LF replaced by spaces, as redis-server
// does for status and error replies, so the reply stays one line.
func appendLine(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

// AppendSimpleString appends a status reply, "+s\r\n" ("+OK", "+PONG").
// CR and LF in s become spaces.
func AppendSimpleString(dst []byte, s string) []byte {
	dst = append(dst, '+')
	return append(appendLine(dst, s), crlf...)
}

// AppendError appends an error reply, "-msg\r\n". By convention msg starts
// with an upper-case error code and a space: "ERR unknown command 'FOO'",
// "BUSY server overloaded, retry in 100 ms", "WRONGTYPE ...". redis-cli
// prints it as "(error) msg". A leading '-' in msg is dropped (it would be
// doubled); CR and LF become spaces; an empty msg is written as "ERR".
func AppendError(dst []byte, msg string) []byte {
	if len(msg) > 0 && msg[0] == '-' {
		msg = msg[1:]
	}
	if msg == "" {
		msg = "ERR"
	}
	dst = append(dst, '-')
	return append(appendLine(dst, msg), crlf...)
}

// AppendInt appends an integer reply, ":n\r\n".
func AppendInt(dst []byte, n int64) []byte {
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, crlf...)
}

// AppendBulk appends a bulk string reply, "$len\r\nb\r\n". b may hold any
// bytes. A nil b is an empty bulk string, not a null one (AppendNullBulk).
func AppendBulk(dst, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, crlf...)
	dst = append(dst, b...)
	return append(dst, crlf...)
}

// AppendBulkString is AppendBulk for a string.
func AppendBulkString(dst []byte, s string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, crlf...)
	dst = append(dst, s...)
	return append(dst, crlf...)
}

// AppendNullBulk appends the null bulk string, "$-1\r\n" (GET of a missing
// key; redis-cli shows "(nil)").
func AppendNullBulk(dst []byte) []byte {
	return append(dst, "$-1\r\n"...)
}

// AppendArrayHeader appends "*n\r\n"; the caller then appends n elements.
// A negative n writes the null array, "*-1\r\n".
func AppendArrayHeader(dst []byte, n int) []byte {
	if n < 0 {
		return AppendNullArray(dst)
	}
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, crlf...)
}

// AppendNullArray appends the null array, "*-1\r\n".
func AppendNullArray(dst []byte) []byte {
	return append(dst, "*-1\r\n"...)
}

// AppendCommand appends a command as a client sends it: an array of bulk
// strings, one per argument. Decode and Parse read it back.
func AppendCommand(dst []byte, args ...[]byte) []byte {
	dst = AppendArrayHeader(dst, len(args))
	for _, a := range args {
		dst = AppendBulk(dst, a)
	}
	return dst
}
