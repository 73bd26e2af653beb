package resilience

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

type selfClassified struct {
	c  Class
	ra time.Duration
}

func (e selfClassified) Error() string             { return "self " + e.c.String() }
func (e selfClassified) RetryClass() Class         { return e.c }
func (e selfClassified) RetryAfter() time.Duration { return e.ra }

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

func TestClassify(t *testing.T) {
	opErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)}
	}
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, ClassSuccess},
		{"reset", opErr(syscall.ECONNRESET), ClassRetryable},
		{"refused", opErr(syscall.ECONNREFUSED), ClassRetryable},
		{"pipe", os.NewSyscallError("writev", syscall.EPIPE), ClassRetryable},
		{"bare errno timeout", syscall.ETIMEDOUT, ClassRetryable},
		{"emfile", os.NewSyscallError("socket", syscall.EMFILE), ClassRetryable},
		{"eacces", os.NewSyscallError("connect", syscall.EACCES), ClassPermanent},
		{"eperm", syscall.EPERM, ClassPermanent},
		{"unknown errno", syscall.EINVAL, ClassFailed},
		{"deadline os", os.ErrDeadlineExceeded, ClassRetryable},
		{"deadline wrapped", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), ClassRetryable},
		{"deadline ctx", context.DeadlineExceeded, ClassRetryable},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), ClassCanceled},
		{"eof", io.EOF, ClassRetryable},
		{"unexpected eof", io.ErrUnexpectedEOF, ClassRetryable},
		{"net closed", net.ErrClosed, ClassRetryable},
		{"permission", os.ErrPermission, ClassPermanent},
		{"dns not found", &net.DNSError{Err: "no such host", IsNotFound: true}, ClassPermanent},
		{"dns timeout", &net.DNSError{Err: "timeout", IsTimeout: true}, ClassRetryable},
		{"dns other", &net.DNSError{Err: "server misbehaving"}, ClassFailed},
		{"timeout method", timeoutErr{}, ClassRetryable},
		{"unknown", errors.New("boom"), ClassFailed},
		{"self overloaded", selfClassified{c: ClassOverloaded}, ClassOverloaded},
		{"self beats errno", fmt.Errorf("%w: %w", selfClassified{c: ClassPermanent}, syscall.ECONNRESET), ClassPermanent},
		{"outer mark wins", WithClass(syscall.ECONNRESET, ClassFailed, 0), ClassFailed},
		{"joined first match", errors.Join(errors.New("x"), syscall.ECONNREFUSED), ClassRetryable},
		{"breaker open", ErrBreakerOpen, ClassOverloaded},
		{"bulkhead full", ErrBulkheadFull, ClassOverloaded},
		{"deadline too close", ErrDeadlineTooClose, ClassRetryable},
		{"retry error takes last", &RetryError{Attempts: 3, Reason: ErrAttemptsExhausted, Err: syscall.ECONNRESET}, ClassRetryable},
		{"retry error no attempt", &RetryError{Reason: ErrBreakerOpen}, ClassOverloaded},
	}
	for i, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("%d %s: Classify = %v, want %v", i, tt.name, got, tt.want)
		}
	}
}

func TestClassOutcome(t *testing.T) {
	want := map[Class]Outcome{
		ClassSuccess: OutcomeSuccess, ClassPermanent: OutcomeSuccess,
		ClassRetryable: OutcomeFailure, ClassOverloaded: OutcomeFailure, ClassFailed: OutcomeFailure,
		ClassCanceled: OutcomeIgnored,
	}
	for c, o := range want {
		if got := c.Outcome(); got != o {
			t.Errorf("%v.Outcome() = %v, want %v", c, got, o)
		}
		if c.Retryable() != (c == ClassRetryable) {
			t.Errorf("%v.Retryable() = %v", c, c.Retryable())
		}
	}
	if s := Class(99).String(); s != "class(99)" {
		t.Errorf("String = %q", s)
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		err  error
		want time.Duration
		ok   bool
	}{
		{nil, 0, false},
		{errors.New("x"), 0, false},
		{WithClass(errors.New("x"), ClassRetryable, 300*time.Millisecond), 300 * time.Millisecond, true},
		{fmt.Errorf("wrapped: %w", selfClassified{c: ClassRetryable, ra: time.Second}), time.Second, true},
		{selfClassified{c: ClassRetryable, ra: -1}, 0, false},
		{errors.Join(errors.New("a"), selfClassified{ra: 2 * time.Second}), 2 * time.Second, true},
	}
	for i, tt := range tests {
		got, ok := RetryAfter(tt.err)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%d: RetryAfter = %v, %v; want %v, %v", i, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSentinels(t *testing.T) {
	for i, err := range []error{ErrDeadlineTooClose, ErrBulkheadTimeout} {
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%d: %v does not match the deadline sentinels", i, err)
		}
	}
	all := []error{ErrInvalidConfig, ErrBreakerOpen, ErrBulkheadFull, ErrBulkheadTimeout, ErrBudgetExhausted,
		ErrAttemptsExhausted, ErrNotRetryable, ErrOverloaded, ErrDeadlineTooClose}
	for i, err := range all {
		if s := err.Error(); len(s) < 8 || s[:7] != "sluice:" {
			t.Errorf("%d: message %q lacks the sluice: prefix", i, s)
		}
	}
	re := &RetryError{Attempts: 2, Reason: ErrAttemptsExhausted, Err: syscall.ECONNRESET}
	if !errors.Is(re, ErrAttemptsExhausted) || !errors.Is(re, syscall.ECONNRESET) {
		t.Errorf("RetryError does not unwrap to both: %v", re)
	}
	if got := re.Error(); got != "sluice: retry attempts exhausted after 2 attempts: "+syscall.ECONNRESET.Error() {
		t.Errorf("Error() = %q", got)
	}
	if WithClass(nil, ClassFailed, 0) != nil {
		t.Error("WithClass(nil) != nil")
	}
}

func TestClassifyAllocs(t *testing.T) {
	err := error(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
	if n := testing.AllocsPerRun(100, func() { _ = Classify(err); _, _ = RetryAfter(err) }); n != 0 {
		t.Errorf("Classify allocates %v times", n)
	}
}
