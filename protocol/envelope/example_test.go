package envelope_test

import (
	"fmt"
	"time"

	"github.com/sluicenet/sluice/protocol/envelope"
)

func Example() {
	// Client: a PUT with a tenant, an idempotency key and a 250 ms budget.
	req := envelope.Message{Type: envelope.TypeRequest, RequestID: 7,
		Method: []byte("PUT"), Tenant: []byte("acme"), IdempotencyKey: []byte("k1"), Payload: []byte("a=1")}
	req.SetTimeout(250 * time.Millisecond)
	wire, err := req.Append(nil)
	if err != nil {
		panic(err)
	}

	// Server: frame, parse, answer.
	frame, n, err := envelope.Codec{}.Decode(wire)
	if err != nil || n == 0 {
		panic(err)
	}
	var m envelope.Message
	if err := envelope.Parse(frame, &m); err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	deadline, _ := m.Deadline(now)
	fmt.Printf("%s %s tenant=%s key=%s deadline=%s\n", m.Type, m.Method, m.Tenant, m.IdempotencyKey, deadline.Format(time.StampMilli))

	out := envelope.AppendReject(nil, m.RequestID, envelope.StatusTooManyRequests, 300*time.Millisecond, "tenant quota spent")

	// Client: read the reject.
	var resp envelope.Message
	if err := envelope.Parse(out, &resp); err != nil {
		panic(err)
	}
	retry, _ := resp.RetryAfter()
	fmt.Printf("%s id=%d %s (HTTP %d) retry after %v: %s\n", resp.Type, resp.RequestID, resp.Status, resp.Status.HTTPStatus(), retry, resp.Payload)
	// Output:
	// request PUT tenant=acme key=k1 deadline=Jan  1 12:00:00.250
	// reject id=7 too many requests (HTTP 429) retry after 300ms: tenant quota spent
}
