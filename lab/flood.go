package lab

import (
	"fmt"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// ConnFloodConfig describes a connection flood: Conns connections opened at
// RatePerSec, each sending one request and waiting for its answer, then
// holding the connection open for Hold (zero: until the flood ends).
type ConnFloodConfig struct {
	Addr       string        `json:"addr"`
	Codec      bench.Codec   `json:"codec"`
	Conns      int           `json:"conns"`
	RatePerSec float64       `json:"rate_per_sec"`
	Hold       time.Duration `json:"hold_ns"`
	// Timeout bounds each connection's connect plus answer; what is still
	// pending then counts as "timeout". Zero: 5 s.
	Timeout time.Duration `json:"timeout_ns"`
	// Size is the request's payload size (zero: 16 bytes).
	Size int `json:"size"`
}

// Connection outcomes of a flood.
const (
	OutcomeServed  = "served"  // the request was echoed
	OutcomeReject  = "reject"  // a reject frame ("-REJECT reason ms") came back
	OutcomeClosed  = "closed"  // the server closed or reset the connection without an answer
	OutcomeTimeout = "timeout" // no answer within the timeout (SYN or accept queue drop, gate closed)
	OutcomeRefused = "refused" // connect failed (ECONNREFUSED and the like)
)

// ConnRecord is one flood connection: when it started (Unix nanoseconds),
// how long the connect and the answer took, and how it ended.
type ConnRecord struct {
	StartUnixNano int64  `json:"start"`
	ConnectNanos  int64  `json:"connect_ns"`
	AnswerNanos   int64  `json:"answer_ns"` // from start to the answer (or the failure)
	Outcome       string `json:"outcome"`
}

// ConnFloodResult is what a connection flood saw, one record per
// connection in start order.
type ConnFloodResult struct {
	Config  ConnFloodConfig `json:"config"`
	Records []ConnRecord    `json:"records"`
}

// Outcomes counts the records by outcome.
func (r *ConnFloodResult) Outcomes() map[string]int {
	m := map[string]int{}
	for _, c := range r.Records {
		m[c.Outcome]++
	}
	return m
}

// PeerFloodConfig describes a flood of peers that send and never read:
// Conns connections each writing Size-byte requests as fast as the server
// takes them for Duration, with a receive buffer of RcvBufBytes so that the
// kernel holds little of what the server sends back.
type PeerFloodConfig struct {
	Addr        string        `json:"addr"`
	Codec       bench.Codec   `json:"codec"`
	Conns       int           `json:"conns"`
	Size        int           `json:"size"`
	Duration    time.Duration `json:"duration_ns"`
	RcvBufBytes int           `json:"rcvbuf_bytes"`
}

// PeerFloodResult is what a non-reading flood sent.
type PeerFloodResult struct {
	Config    PeerFloodConfig `json:"config"`
	SentBytes int64           `json:"sent_bytes"`
	Conns     int             `json:"conns"`
	// Closed counts connections the server closed during the flood.
	Closed int `json:"closed"`
}

// validate checks a connection flood's configuration and fills defaults.
func (c *ConnFloodConfig) validate() error {
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	if c.Size == 0 {
		c.Size = 16
	}
	switch {
	case c.Addr == "" || c.Conns < 1 || c.RatePerSec <= 0 || c.Hold < 0 || c.Timeout < 0:
		return fmt.Errorf("%w: connection flood %+v", bench.ErrInvalidConfig, *c)
	case c.Codec == bench.CodecRaw:
		return fmt.Errorf("%w: connection flood needs a framed codec (length or line)", bench.ErrInvalidConfig)
	}
	return bench.FixedSize(c.Size).Validate()
}

// validate checks a peer flood's configuration and fills defaults.
func (c *PeerFloodConfig) validate() error {
	if c.Size == 0 {
		c.Size = 4096
	}
	if c.RcvBufBytes == 0 {
		c.RcvBufBytes = 4096
	}
	if c.Addr == "" || c.Conns < 1 || c.Duration <= 0 || c.RcvBufBytes < 0 {
		return fmt.Errorf("%w: peer flood %+v", bench.ErrInvalidConfig, *c)
	}
	return bench.FixedSize(c.Size).Validate()
}
