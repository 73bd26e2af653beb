//go:build sluice_stages

package server

// A measurement build, not a feature: with -tags sluice_stages the engine
// times each frame the worker pool serves through its stages and, once a
// second, prints to standard error where that second's served frames spent
// their time inside the server:
//
//	kernel   bytes waiting in the socket before the read that carried the
//	         frame (the read's receive timestamp, as in sluice_rxstamp,
//	         whose per-read report this build prints too)
//	held     the read to the frame's submission to the pool (in its
//	         connection's input behind an earlier frame, ordered pool)
//	queue    the submission to a worker taking it
//	service  the handler
//	reply    the handler's end to the loop hearing the frame is done (the
//	         inbox, the loop's wake-up and its P)
//	server   held + queue + service + reply
//
// and for frames served inline (with an admission policy whose caps are
// derived, so the handler is timed), a line "inline" with
//
//	kernel   as above
//	queue    the frame's arrival bound (the loop's queueing delay) to its
//	         admission
//	service  the handler
//	reply    the handler's end to the write(2) that carried the reply
//	server   queue + service + reply
//
// as p50 and p99 of each, and the mean of each stage over the slowest 1%
// of frames by server time (which stage makes the tail). It answers the
// overload issue's open question of what the pool's admitted p99 with long
// handlers is made of (docs/OVERLOAD.md). The state is per descriptor,
// which holds for the ordered pool (one frame per connection in the pool);
// the unordered pool's frames of one connection overwrite each other's.

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stageFds bounds the descriptors tracked.
const stageFds = 1 << 16

// stageRec is one frame's timeline on the loop's clock, and the kernel
// wait of the read that carried it.
type stageRec struct {
	kernel, enq, sub, start, end, done int64
}

var (
	stageRx    [stageFds]atomic.Int64 // the last stamped read's kernel wait, by fd
	stageNow   [stageFds]stageRec     // the frame in the pool, by fd (written by the loop and its worker in turn)
	stageMu    sync.Mutex
	stageFrame []stageRec // this second's served frames
)

// inlineRec is an inline frame's timeline on the loop's clock; one per
// descriptor, the last admitted frame's (with pipelined frames, the reply
// write times the last one).
type inlineRec struct {
	kernel, since, admit, end int64
}

var (
	inlineNow   [stageFds]inlineRec // on the loop only
	inlineFrame []stageRec          // this second's, as stageRec: enq = since, sub = start = admit, end, done = the write
)

func stageAdmit(fd int32, since, at int64) {
	if fd >= 0 && fd < stageFds {
		inlineNow[fd] = inlineRec{kernel: stageRx[fd].Load(), since: since, admit: at}
	}
}

func stageHandled(fd int32, end int64) {
	if fd >= 0 && fd < stageFds && inlineNow[fd].admit != 0 {
		inlineNow[fd].end = end
	}
}

// stageFlushed reads the clock itself, so that the default build's empty
// hook costs the flush no clock reading.
func stageFlushed(l *loop, fd int32) {
	if fd < 0 || fd >= stageFds || inlineNow[fd].end == 0 {
		return
	}
	now := l.e.clock()
	r := inlineNow[fd]
	inlineNow[fd] = inlineRec{}
	stageMu.Lock()
	inlineFrame = append(inlineFrame, stageRec{kernel: r.kernel, enq: r.since, sub: r.admit, start: r.admit, end: r.end, done: now})
	stageMu.Unlock()
}

func init() {
	rxNote = func(fd int, w int64) {
		if fd >= 0 && fd < stageFds {
			stageRx[fd].Store(w)
		}
	}
	go stageReport()
}

func stageSubmit(fd int32, enq, sub int64) {
	if fd >= 0 && fd < stageFds {
		stageNow[fd] = stageRec{kernel: stageRx[fd].Load(), enq: enq, sub: sub}
	}
}

func stageServe(fd int32, start, end int64) {
	if fd >= 0 && fd < stageFds {
		stageNow[fd].start, stageNow[fd].end = start, end
	}
}

// stageDone is on the loop, after the worker's taskDone: the inbox's lock
// orders the worker's stores before it.
func stageDone(fd int32, now int64) {
	if fd < 0 || fd >= stageFds {
		return
	}
	r := stageNow[fd]
	stageNow[fd] = stageRec{}
	if r.start == 0 || r.sub == 0 {
		return // refused, not served
	}
	r.done = now
	stageMu.Lock()
	stageFrame = append(stageFrame, r)
	stageMu.Unlock()
}

// stageReport prints each second's breakdowns.
func stageReport() {
	for range time.Tick(time.Second) {
		stageMu.Lock()
		pooled, inline := stageFrame, inlineFrame
		stageFrame, inlineFrame = nil, nil
		stageMu.Unlock()
		if len(pooled) > 0 {
			stageLine("stages", "served", pooled, []string{"kernel", "held", "queue", "service", "reply", "server"},
				func(r stageRec) []int64 {
					return []int64{r.kernel, r.sub - r.enq, r.start - r.sub, r.end - r.start, r.done - r.end, r.done - r.enq}
				})
		}
		if len(inline) > 0 {
			stageLine("inline", "written", inline, []string{"kernel", "queue", "service", "reply", "server"},
				func(r stageRec) []int64 {
					return []int64{r.kernel, r.sub - r.enq, r.end - r.start, r.done - r.end, r.done - r.enq}
				})
		}
	}
}

// stageLine prints p50/p99 of each stage of recs (the last is the total it
// sorts by) and each stage's mean over the slowest 1% by that total.
func stageLine(title, count string, recs []stageRec, names []string, stages func(stageRec) []int64) {
	cols := make([][]int64, len(names))
	for _, r := range recs {
		for k, v := range stages(r) {
			cols[k] = append(cols[k], v)
		}
	}
	total := cols[len(cols)-1]
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(total[b], total[a]) })
	tail := order[:max(1, len(order)/100)]
	line := fmt.Sprintf("%s %s=%d", title, count, len(recs))
	for k := range cols {
		s := slices.Clone(cols[k])
		slices.Sort(s)
		line += fmt.Sprintf(" %s=%v/%v", names[k], ms(s[len(s)/2]), ms(s[len(s)*99/100]))
	}
	line += " | slowest 1%:"
	for k := range cols {
		var sum int64
		for _, i := range tail {
			sum += cols[k][i]
		}
		line += fmt.Sprintf(" %s=%v", names[k], ms(sum/int64(len(tail))))
	}
	fmt.Fprintln(os.Stderr, line)
}

// ms rounds nanos to 0.1 ms for the report.
func ms(n int64) time.Duration { return time.Duration(n).Round(100 * time.Microsecond) }
