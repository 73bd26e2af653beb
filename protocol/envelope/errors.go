package envelope

import (
	"strconv"

	"github.com/sluicenet/sluice/protocol"
)

// wrapErr is an error with its own message whose cause is another error, so
// that errors.Is walks from a precise message to the broader sentinel.
type wrapErr struct {
	msg   string
	cause error
}

func (e *wrapErr) Error() string { return e.msg }
func (e *wrapErr) Unwrap() error { return e.cause }

// sentinel makes an exported sentinel that wraps a protocol error.
func sentinel(msg string, cause error) error {
	return &wrapErr{msg: "sluice: envelope: " + msg, cause: cause}
}

// detail makes a precise error that wraps a sentinel; all are built at init
// so that Decode and Parse never allocate, not even when they fail.
func detail(s error, what string) error {
	return &wrapErr{msg: s.Error() + ": " + what, cause: s}
}

// Sentinel errors. Every one wraps protocol.ErrMalformed except
// ErrFrameTooLarge, which wraps protocol.ErrFrameTooLarge; test with
// errors.Is against these or against the protocol sentinels.
var (
	// ErrUnknownVersion reports a version byte other than Version.
	ErrUnknownVersion = sentinel("unknown version", protocol.ErrMalformed)
	// ErrUnknownType reports a type byte that is not request, response or
	// reject.
	ErrUnknownType = sentinel("unknown message type", protocol.ErrMalformed)
	// ErrUnknownFlags reports flag bits this version does not define.
	ErrUnknownFlags = sentinel("unknown flags", protocol.ErrMalformed)
	// ErrUnknownStatus reports a status byte above StatusInternal.
	ErrUnknownStatus = sentinel("unknown status", protocol.ErrMalformed)
	// ErrUnknownPriority reports a priority byte above PriorityBackground.
	ErrUnknownPriority = sentinel("unknown priority", protocol.ErrMalformed)
	// ErrTruncated reports a frame shorter than the fields it declares, or a
	// length field that disagrees with the frame.
	ErrTruncated = sentinel("truncated frame", protocol.ErrMalformed)
	// ErrFieldTooLarge reports a variable field over its bound (MaxMethodBytes,
	// MaxTenantBytes, MaxIdempotencyKeyBytes, MaxReasonBytes).
	ErrFieldTooLarge = sentinel("field too large", protocol.ErrMalformed)
	// ErrFieldNotAllowed reports a field, flag or status that the message's
	// type may not carry (a tenant on a response, a retry-after on a request,
	// StatusOK on a reject), or two flags that contradict each other.
	ErrFieldNotAllowed = sentinel("field not allowed", protocol.ErrMalformed)
	// ErrInvalidField reports a value out of range (a non-positive absolute
	// deadline, a retry-after above MaxRetryAfterMillis).
	ErrInvalidField = sentinel("invalid field value", protocol.ErrMalformed)
	// ErrFrameTooLarge reports a frame above the codec's MaxFrameBytes, or a
	// message too large for the 32-bit length field.
	ErrFrameTooLarge = sentinel("frame too large", protocol.ErrFrameTooLarge)
	// ErrInvalidConfig reports a Codec whose MaxFrameBytes is negative or
	// smaller than FixedHeaderBytes.
	ErrInvalidConfig = sentinel("invalid codec configuration", protocol.ErrInvalidConfig)
)

var (
	errShortHeader     = detail(ErrTruncated, "shorter than the "+strconv.Itoa(FixedHeaderBytes)+"-byte fixed header")
	errLengthMismatch  = detail(ErrTruncated, "length field does not match the frame size")
	errLengthTooSmall  = detail(ErrTruncated, "length field smaller than the fixed header")
	errFieldsOverrun   = detail(ErrTruncated, "optional and variable fields run past the end of the frame")
	errVersion         = detail(ErrUnknownVersion, "this package speaks version "+strconv.Itoa(Version))
	errType            = detail(ErrUnknownType, "want 1 (request), 2 (response) or 3 (reject)")
	errFlags           = detail(ErrUnknownFlags, "bits outside 0x003f")
	errFlagForType     = detail(ErrFieldNotAllowed, "flag not allowed for this message type")
	errTwoDeadlines    = detail(ErrFieldNotAllowed, "both absolute and relative deadline flags")
	errRetryAndNoRetry = detail(ErrFieldNotAllowed, "both retry-after and no-retry flags")
	errStatusRequest   = detail(ErrFieldNotAllowed, "a request must carry StatusOK")
	errStatusReject    = detail(ErrFieldNotAllowed, "a reject must carry a failure status")
	errStatus          = detail(ErrUnknownStatus, "want 0..6")
	errPriority        = detail(ErrUnknownPriority, "want 0..3")
	errPriorityReply   = detail(ErrFieldNotAllowed, "only requests carry a priority")
	errRequestFields   = detail(ErrFieldNotAllowed, "only requests carry method, tenant and idempotency key")
	errMethodSize      = detail(ErrFieldTooLarge, "method longer than "+strconv.Itoa(MaxMethodBytes)+" bytes")
	errTenantSize      = detail(ErrFieldTooLarge, "tenant longer than "+strconv.Itoa(MaxTenantBytes)+" bytes")
	errKeySize         = detail(ErrFieldTooLarge, "idempotency key longer than "+strconv.Itoa(MaxIdempotencyKeyBytes)+" bytes")
	errReasonSize      = detail(ErrFieldTooLarge, "reject reason longer than "+strconv.Itoa(MaxReasonBytes)+" bytes")
	errDeadlineNoFlag  = detail(ErrFieldNotAllowed, "DeadlineMillis set without a deadline flag")
	errRetryNoFlag     = detail(ErrFieldNotAllowed, "RetryAfterMillis set without FlagRetryAfter")
	errDeadlineAbs     = detail(ErrInvalidField, "absolute deadline must be a positive unix time in milliseconds")
	errDeadlineRel     = detail(ErrInvalidField, "relative deadline outside 0..2^32-1 milliseconds")
	errRetryAfter      = detail(ErrInvalidField, "retry-after above "+strconv.Itoa(MaxRetryAfterMillis)+" ms")
	errBodyTooLarge    = detail(ErrFrameTooLarge, "message does not fit the 32-bit length field")
	errDecodeTooLarge  = detail(ErrFrameTooLarge, "length field exceeds MaxFrameBytes")
	errConfigNegative  = detail(ErrInvalidConfig, "negative MaxFrameBytes")
	errConfigSmall     = detail(ErrInvalidConfig, "MaxFrameBytes below FixedHeaderBytes")
)
