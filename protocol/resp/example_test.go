package resp_test

import (
	"fmt"

	"github.com/sluicenet/sluice/protocol/resp"
)

// A server loop over pipelined input: one command per Decode, arguments
// aliasing the input, replies appended to one output buffer.
func ExampleCodec_Decode() {
	in := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nhi\r\nGET k\r\n*1\r\n$4\r\nPING\r\nBAD \"x\r\n")
	var codec resp.Codec
	var out []byte
	args := make([][]byte, 0, 8)
	for {
		frame, n, err := codec.Decode(in)
		if err != nil {
			out = resp.AppendProtocolError(out, err) // then close the connection
			break
		}
		if n == 0 {
			break
		}
		in = in[n:]
		args, _ = resp.Parse(frame, args[:0])
		switch {
		case resp.EqualFold(args[0], "set"):
			out = resp.AppendSimpleString(out, "OK")
		case resp.EqualFold(args[0], "get"):
			out = resp.AppendBulkString(out, "hi")
		case resp.EqualFold(args[0], "ping"):
			out = resp.AppendSimpleString(out, "PONG")
		}
	}
	fmt.Printf("%q\n", out)
	// Output: "+OK\r\n$2\r\nhi\r\n+PONG\r\n-ERR Protocol error: unbalanced quotes in request\r\n"
}

func ExampleAppendError() {
	out := resp.AppendError(nil, "BUSY server overloaded, retry later")
	fmt.Printf("%q\n", out)
	// Output: "-BUSY server overloaded, retry later\r\n"
}
