package envelope

import "encoding/binary"

// Byte offsets of the fixed header; docs/ENVELOPE.md draws the same table.
const (
	offLength    = 0  // uint32: bytes after this field
	offVersion   = 4  // uint8
	offType      = 5  // uint8
	offFlags     = 6  // uint16
	offRequestID = 8  // uint64
	offStatus    = 16 // uint8
	offPriority  = 17 // uint8
	offMethodLen = 18 // uint8
	offTenantLen = 19 // uint8
	offKeyLen    = 20 // uint8
)

// Parse fills m from one whole wire frame (as Codec.Decode returns it) and
// validates it (see Message.Validate). m's byte-slice fields alias frame and
// stay valid until frame's buffer is modified; empty fields are nil. Parse
// never allocates and never panics. On error m's contents are unspecified
// (use PeekRequestID to address a reject); the error wraps one of the
// sentinels, all of which wrap protocol.ErrMalformed.
func Parse(frame []byte, m *Message) error {
	if len(frame) < FixedHeaderBytes {
		return errShortHeader
	}
	if uint64(binary.BigEndian.Uint32(frame[offLength:])) != uint64(len(frame)-LengthFieldBytes) {
		return errLengthMismatch
	}
	if frame[offVersion] != Version {
		return errVersion
	}
	flags := Flags(binary.BigEndian.Uint16(frame[offFlags:]))
	*m = Message{
		Type:      Type(frame[offType]),
		Flags:     flags,
		RequestID: binary.BigEndian.Uint64(frame[offRequestID:]),
		Status:    Status(frame[offStatus]),
		Priority:  Priority(frame[offPriority]),
	}
	// Type, flags, status and priority first: unknown flags may announce
	// fields this version cannot skip.
	if err := m.validateKinds(); err != nil {
		return err
	}
	off := FixedHeaderBytes
	if len(frame)-off < optionalBytes(flags) {
		return errFieldsOverrun
	}
	if flags&FlagDeadlineAbsolute != 0 {
		m.DeadlineMillis = int64(binary.BigEndian.Uint64(frame[off:]))
		off += 8
	}
	if flags&FlagDeadlineRelative != 0 {
		m.DeadlineMillis = int64(binary.BigEndian.Uint32(frame[off:]))
		off += 4
	}
	if flags&FlagRetryAfter != 0 {
		m.RetryAfterMillis = binary.BigEndian.Uint32(frame[off:])
		off += 4
	}
	methodLen, tenantLen, keyLen := int(frame[offMethodLen]), int(frame[offTenantLen]), int(frame[offKeyLen])
	if len(frame)-off < methodLen+tenantLen+keyLen {
		return errFieldsOverrun
	}
	m.Method, off = field(frame, off, methodLen)
	m.Tenant, off = field(frame, off, tenantLen)
	m.IdempotencyKey, off = field(frame, off, keyLen)
	m.Payload, _ = field(frame, off, len(frame)-off)
	if err := m.validateFields(); err != nil {
		return err
	}
	return m.validateValues()
}

// field returns frame[off:off+n] with its capacity clipped (nil when n is 0)
// and the offset after it.
func field(frame []byte, off, n int) ([]byte, int) {
	if n == 0 {
		return nil, off
	}
	end := off + n
	return frame[off:end:end], end
}

// PeekRequestID returns the request id of a frame whose fixed header is
// present, even if the rest of the frame does not parse, so that a server can
// answer a malformed request with a reject addressed to it. ok is false when
// frame is shorter than the fixed header.
func PeekRequestID(frame []byte) (id uint64, ok bool) {
	if len(frame) < FixedHeaderBytes {
		return 0, false
	}
	return binary.BigEndian.Uint64(frame[offRequestID:]), true
}
