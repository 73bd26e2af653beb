package resp_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/resp"
)

// fuzzCodec maps a fuzzed selector to a codec: 0 is the default limits,
// anything else small limits that the inputs can actually reach.
func fuzzCodec(sel uint16) resp.Codec {
	if sel == 0 {
		return resp.Codec{}
	}
	return resp.Codec{
		MaxArgs:         int(sel&0x7) + 1,
		MaxBulkBytes:    int(sel>>3&0x1f) + 1,
		MaxInlineBytes:  int(sel>>8&0x3f) + 1,
		MaxCommandBytes: int(sel>>14)*64 + 32,
	}
}

// effective returns c's limits with defaults applied.
func effective(c resp.Codec) (args, bulk, inline, cmd int) {
	or := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	return or(c.MaxArgs, resp.DefaultMaxArgs), or(c.MaxBulkBytes, resp.DefaultMaxBulkBytes),
		or(c.MaxInlineBytes, resp.DefaultMaxInlineBytes), or(c.MaxCommandBytes, resp.DefaultMaxCommandBytes)
}

// FuzzRESPDecode (seeds in seedCorpus) decodes arbitrary input as a pipelined stream: Decode never
// panics, never consumes more than its input, enforces every limit, agrees
// with Parse and DecodeCommand, treats every strict prefix of a frame as
// incomplete, and only fails on input that more bytes cannot repair.
func FuzzRESPDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, sel uint16) {
		c := fuzzCodec(sel)
		maxArgs, maxBulk, maxInline, maxCmd := effective(c)
		in := data
		for steps := 0; steps <= len(data); steps++ {
			frame, n, err := c.Decode(in)
			if n < 0 || n > len(in) {
				t.Fatalf("Decode consumed %d of %d bytes", n, len(in))
			}
			if err != nil {
				if n != 0 || frame != nil {
					t.Fatalf("error %v with frame %q, n %d", err, frame, n)
				}
				var pe *resp.ProtocolError
				if !errors.As(err, &pe) || !(errors.Is(err, protocol.ErrMalformed) || errors.Is(err, protocol.ErrFrameTooLarge)) {
					t.Fatalf("error %v is not a framing ProtocolError", err)
				}
				more := append(append([]byte(nil), in...), "\r\n*1\r\n$1\r\nx\r\n"...)
				if _, _, err2 := c.Decode(more); err2 == nil {
					t.Fatalf("Decode(%q) = %v but more input repaired it", in, err)
				}
				return
			}
			if n == 0 {
				if frame != nil {
					t.Fatalf("frame %q with n == 0", frame)
				}
				return
			}
			if !bytes.Equal(frame, in[:n]) || cap(frame) != n {
				t.Fatalf("frame %q is not in[:%d] with clipped capacity", frame, n)
			}
			if n > maxCmd {
				t.Fatalf("frame of %d bytes exceeds MaxCommandBytes %d", n, maxCmd)
			}
			args, err := resp.Parse(append([]byte(nil), frame...), nil)
			if err != nil {
				t.Fatalf("Parse(%q) after Decode: %v", frame, err)
			}
			if len(args) > maxArgs {
				t.Fatalf("%d args exceed MaxArgs %d", len(args), maxArgs)
			}
			if frame[0] == '*' {
				for _, a := range args {
					if len(a) > maxBulk {
						t.Fatalf("bulk of %d bytes exceeds MaxBulkBytes %d", len(a), maxBulk)
					}
				}
			} else if line := bytes.TrimSuffix(frame[:n-1], []byte("\r")); len(line) > maxInline {
				t.Fatalf("inline line of %d bytes exceeds MaxInlineBytes %d", len(line), maxInline)
			}
			args2, n2, err := c.DecodeCommand(append([]byte(nil), in...), nil)
			if err != nil || n2 != n || len(args2) != len(args) {
				t.Fatalf("DecodeCommand = %d args, %d, %v; Decode+Parse gave %d args, %d", len(args2), n2, err, len(args), n)
			}
			for i := range args {
				if !bytes.Equal(args[i], args2[i]) {
					t.Fatalf("arg %d: DecodeCommand %q, Parse %q", i, args2[i], args[i])
				}
			}
			step := 1
			if n > 64 {
				step = n / 32
			}
			for k := 0; k < n; k += step {
				if f, m, err := c.Decode(frame[:k]); m != 0 || err != nil || f != nil {
					t.Fatalf("prefix %d of %q: %q, %d, %v; want more input", k, frame, f, m, err)
				}
			}
			in = in[n:]
		}
		t.Fatalf("Decode made no progress on %q", in)
	})
}

// quoteInline writes arg as a double-quoted inline argument, escaping every
// byte that sdssplitargs would otherwise interpret.
func quoteInline(dst, arg []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, b := range arg {
		switch {
		case b == '"' || b == '\\':
			dst = append(dst, '\\', b)
		case b < 0x20 || b >= 0x7f:
			dst = append(dst, '\\', 'x', hex[b>>4], hex[b&0xf])
		default:
			dst = append(dst, b)
		}
	}
	return append(dst, '"')
}

// FuzzRESPRoundTrip (seeds in seedCorpus) encodes a random argument list (data split at sep) as
// an array command and as a quoted inline command, pipelines both, and
// checks that Decode and Parse give back the same arguments.
func FuzzRESPRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, sep byte) {
		args := bytes.Split(data, []byte{sep})
		if len(args) > 256 {
			args = args[:256]
		}
		wire := resp.AppendCommand(nil, args...)
		arrayLen := len(wire)
		for i, a := range args {
			if i > 0 {
				wire = append(wire, ' ')
			}
			wire = quoteInline(wire, a)
		}
		wire = append(wire, "\r\n"...)
		forms := []int{arrayLen, len(wire) - arrayLen}
		if forms[1]-2 > resp.DefaultMaxInlineBytes {
			forms = forms[:1] // the quoted line is too long to be inline
		}
		var c resp.Codec
		in := wire
		for form, wantLen := range forms {
			frame, n, err := c.Decode(in)
			if err != nil || n != wantLen {
				t.Fatalf("form %d: Decode(%q) = %d, %v; want %d", form, in, n, err, wantLen)
			}
			got, err := resp.Parse(frame, nil)
			if err != nil {
				t.Fatalf("form %d: Parse(%q): %v", form, frame, err)
			}
			if len(got) != len(args) {
				t.Fatalf("form %d: %d args; want %d", form, len(got), len(args))
			}
			for i := range args {
				if !bytes.Equal(got[i], args[i]) {
					t.Fatalf("form %d: arg %d = %q; want %q", form, i, got[i], args[i])
				}
			}
			in = in[n:]
		}
	})
}
