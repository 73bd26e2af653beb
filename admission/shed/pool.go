package shed

// PredictedLong reports whether a frame queued now in a worker pool would
// spend more than limit in it, by Little's law: the ahead frames queued
// before it and one in service (whose remaining time is unknown, so a
// whole service) times the service time svc over the workers, plus its
// own service. Such a frame is refused at once rather than after waiting
// its way to a refusal; an empty queue (ahead 0) always takes the frame.
func PredictedLong(ahead, workers int, svc, limit int64) bool {
	if ahead == 0 {
		return false
	}
	w := int64(workers)
	return int64(ahead+1)*svc+svc*w > limit*w
}
