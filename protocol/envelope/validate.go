package envelope

// Validate reports whether m can be written and would be accepted by Parse:
// a known type, flags, status and priority; only the fields and flags its
// type may carry; every variable field within its bound; deadline and
// retry-after values in range and present exactly when flagged. It does not
// check the total size (Append does). Errors wrap the sentinels in errors.go.
func (m *Message) Validate() error {
	if err := m.validateKinds(); err != nil {
		return err
	}
	if err := m.validateFields(); err != nil {
		return err
	}
	return m.validateValues()
}

// validateKinds checks type, flags, status and priority.
func (m *Message) validateKinds() error {
	var allowed Flags
	switch m.Type {
	case TypeRequest:
		allowed = requestFlags
	case TypeResponse:
		allowed = responseFlags
	case TypeReject:
		allowed = rejectFlags
	default:
		return errType
	}
	switch {
	case m.Flags&^knownFlags != 0:
		return errFlags
	case m.Flags&^allowed != 0:
		return errFlagForType
	case m.Flags&(FlagDeadlineAbsolute|FlagDeadlineRelative) == FlagDeadlineAbsolute|FlagDeadlineRelative:
		return errTwoDeadlines
	case m.Flags&(FlagRetryAfter|FlagNoRetry) == FlagRetryAfter|FlagNoRetry:
		return errRetryAndNoRetry
	case m.Status > maxStatus:
		return errStatus
	case m.Type == TypeRequest && m.Status != StatusOK:
		return errStatusRequest
	case m.Type == TypeReject && m.Status == StatusOK:
		return errStatusReject
	case m.Priority > PriorityBackground:
		return errPriority
	case m.Type != TypeRequest && m.Priority != PriorityNormal:
		return errPriorityReply
	}
	return nil
}

// validateFields checks which variable fields are present and their sizes.
func (m *Message) validateFields() error {
	if m.Type != TypeRequest {
		if len(m.Method) != 0 || len(m.Tenant) != 0 || len(m.IdempotencyKey) != 0 {
			return errRequestFields
		}
		if m.Type == TypeReject && len(m.Payload) > MaxReasonBytes {
			return errReasonSize
		}
		return nil
	}
	switch {
	case len(m.Method) > MaxMethodBytes:
		return errMethodSize
	case len(m.Tenant) > MaxTenantBytes:
		return errTenantSize
	case len(m.IdempotencyKey) > MaxIdempotencyKeyBytes:
		return errKeySize
	}
	return nil
}

// validateValues checks the optional numeric fields against their flags.
func (m *Message) validateValues() error {
	switch {
	case m.Flags&FlagDeadlineAbsolute != 0:
		if m.DeadlineMillis <= 0 {
			return errDeadlineAbs
		}
	case m.Flags&FlagDeadlineRelative != 0:
		if m.DeadlineMillis < 0 || m.DeadlineMillis > MaxRelativeDeadlineMillis {
			return errDeadlineRel
		}
	case m.DeadlineMillis != 0:
		return errDeadlineNoFlag
	}
	if m.Flags&FlagRetryAfter == 0 {
		if m.RetryAfterMillis != 0 {
			return errRetryNoFlag
		}
	} else if m.RetryAfterMillis > MaxRetryAfterMillis {
		return errRetryAfter
	}
	return nil
}

// optionalBytes returns the size of the flagged optional fields.
func optionalBytes(f Flags) int {
	n := 0
	if f&FlagDeadlineAbsolute != 0 {
		n += 8
	}
	if f&FlagDeadlineRelative != 0 {
		n += 4
	}
	if f&FlagRetryAfter != 0 {
		n += 4
	}
	return n
}

// Size returns the number of bytes Append would write for m (assuming m is
// valid), the length field included.
func (m *Message) Size() int {
	return FixedHeaderBytes + optionalBytes(m.Flags) + len(m.Method) + len(m.Tenant) + len(m.IdempotencyKey) + len(m.Payload)
}
