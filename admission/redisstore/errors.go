package redisstore

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Sentinel errors of this package; admission's sentinels (ErrNotOwner,
// ErrKeyTooLong, ErrResponseTooLarge, ErrCostExceedsBurst, ...) are returned
// as they are.
var (
	// ErrCorruptRecord reports a value under an idempotency key that is not
	// a record this package wrote.
	ErrCorruptRecord = errors.New("sluice: corrupt idempotency record in redis")

	// ErrBadReply reports a script reply of an unexpected shape.
	ErrBadReply = errors.New("sluice: unexpected redis reply")

	// ErrStatusRange reports a status outside 0..65535, which the record
	// cannot hold.
	ErrStatusRange = errors.New("sluice: status out of range")

	// ErrClaimRace reports that a key kept appearing and expiring between
	// SET NX and the read for every attempt; retry the request.
	ErrClaimRace = errors.New("sluice: idempotency key expired while claiming")
)

// wrap names the failed Redis operation. A deadline, whether it surfaced as
// context.DeadlineExceeded or as a socket timeout, satisfies
// errors.Is(err, os.ErrDeadlineExceeded) as every sluice timeout does.
func wrap(op string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("sluice: redis %s: %w (%w)", op, os.ErrDeadlineExceeded, err)
	}
	return fmt.Errorf("sluice: redis %s: %w", op, err)
}
