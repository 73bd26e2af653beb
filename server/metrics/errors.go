package metrics

import (
	"errors"

	"github.com/sluicenet/sluice/server"
)

// Sentinel errors of the package; test them with errors.Is.
var (
	// ErrNilSource is returned by New and NewForEngine without a stats
	// source.
	ErrNilSource = errors.New("sluice: metrics: nil stats source")

	// ErrBadHistogram is server.ErrBadHistogram: a histogram whose bounds
	// are not finite and strictly increasing, or whose Counts do not have
	// one more element than its Buckets. The collector exports it as an
	// invalid metric, which fails that one metric of the scrape.
	ErrBadHistogram = server.ErrBadHistogram

	// ErrDuplicateSeries reports two entries of a snapshot that map to the
	// same series (two concurrency classes with one name, a tenant listed
	// twice); the second is exported as an invalid metric.
	ErrDuplicateSeries = errors.New("sluice: metrics: duplicate series in snapshot")
)
