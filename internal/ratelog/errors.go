package ratelog

import "errors"

// ErrInvalidOptions reports Options that cannot describe a rate: a negative
// field, or an Interval too short to spread Burst records over.
var ErrInvalidOptions = errors.New("sluice: ratelog: invalid options")
