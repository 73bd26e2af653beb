package protocol_test

import (
	"errors"
	"fmt"

	"github.com/sluicenet/sluice/protocol"
)

func ExampleLengthPrefixed() {
	c := protocol.LengthPrefixed{Header: protocol.Fixed32, MaxFrameBytes: 16}
	wire := c.AppendEncode(nil, []byte("hello"))
	wire = c.AppendEncode(wire, []byte("world"))
	buf := wire[:12] // one frame and part of the next
	for {
		frame, n, err := c.Decode(buf)
		if err != nil || n == 0 {
			fmt.Println("need more:", n == 0, err)
			break
		}
		fmt.Printf("%s\n", frame)
		buf = buf[n:]
	}
	_, _, err := c.Decode([]byte{0, 0, 1, 0}) // declares 256 bytes
	fmt.Println(errors.Is(err, protocol.ErrFrameTooLarge))
	// Output:
	// hello
	// need more: true <nil>
	// true
}

func ExampleByName() {
	c, err := protocol.ByName("line", 1024)
	if err != nil {
		panic(err)
	}
	frame, n, _ := c.Decode([]byte("PING\nPONG"))
	fmt.Printf("%q %d\n", frame, n)
	_, err = protocol.ByName("telnet", 0)
	fmt.Println(err)
	// Output:
	// "PING" 5
	// sluice: unknown codec "telnet" (want raw, length, length16, line or varint)
}
