package lab

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicenet/sluice/bench"
)

// GeneratorShare is one generator process of a load run that Split spreads
// over several: its connections, its part of an open-loop rate and the CPUs
// it is pinned to (GOMAXPROCS = len(CPUs)).
type GeneratorShare struct {
	Conns      int
	RatePerSec float64
	CPUs       []int
}

// SplitGenerators spreads a load of conns connections (and, when rate is
// positive, an open-loop rate) over procs generator processes pinned to
// cpus (procs 0: one per CPU; at most one per connection). With no more
// processes than CPUs, the CPUs go to the processes in contiguous runs, as
// evenly as they divide; with more, process i takes CPU i modulo their
// number, alone (several processes then share a CPU). The connections are
// divided as evenly, the first processes taking one more where they do
// not divide, and each process offers the rate in proportion to its
// connections, so that every connection sends at the same rate. One CPU
// with procs 0, or procs 1, gives one share of everything: the run as one
// process.
func SplitGenerators(conns int, rate float64, cpus []int, procs int) []GeneratorShare {
	n := procs
	if n <= 0 {
		n = len(cpus)
	}
	n = max(1, min(n, conns))
	if n == 1 {
		return []GeneratorShare{{Conns: conns, RatePerSec: rate, CPUs: cpus}}
	}
	shares := make([]GeneratorShare, n)
	cpuAt := 0
	for i := range shares {
		c := conns / n
		if i < conns%n {
			c++
		}
		shares[i] = GeneratorShare{Conns: c}
		switch {
		case len(cpus) == 0:
		case n > len(cpus):
			shares[i].CPUs = []int{cpus[i%len(cpus)]}
		default:
			nc := len(cpus) / n
			if i < len(cpus)%n {
				nc++
			}
			shares[i].CPUs = cpus[cpuAt : cpuAt+nc : cpuAt+nc]
			cpuAt += nc
		}
		if rate > 0 {
			shares[i].RatePerSec = rate * float64(c) / float64(conns)
		}
	}
	return shares
}

// MergeLoadResults merges the results of the generator processes of one
// load run (SplitGenerators) into one result, as if one generator had run
// them all: counts, rates, bytes and errors add up; latencies come from the
// merged histograms (HistogramV2, RejectHistogramV2), or, where a result
// lacks one, are the worst of the parts' percentiles with the counts added,
// and a note among those returned says so. The server's
// usage is the one process that read it (the first with Server); its costs
// per message, and every per-message figure, are over all the processes'
// messages. The client's usage adds the processes' (CPU time and
// utilisation in cores) and its CPUs are all of theirs. The send lag,
// which has no histogram, is the worst part's. Config is the first
// result's with the connections and rate of all.
//
// A per-message figure is recomputed from the CPU time, system calls and
// busy share over all the processes' messages (a core's from its busy
// share over the window), not scaled from the process's own: a process
// may have had no message answered in its window.
func MergeLoadResults(rs []*bench.LoadResult) (res *bench.LoadResult, notes []string) {
	switch len(rs) {
	case 0:
		return nil, nil
	case 1:
		return rs[0], nil
	}
	first := rs[0]
	res = &bench.LoadResult{Config: first.Config, Mode: first.Mode}
	var total int64
	for _, r := range rs {
		total += r.Msgs
	}
	var lats, rejLats []*hdrhistogram.Histogram
	latOK, rejOK := true, true
	var latParts, rejParts []bench.LatencySummary
	res.Config.Conns, res.Config.RatePerSec = 0, 0
	cores := map[int]bool{}
	for i, r := range rs {
		res.Config.Conns += r.Config.Conns
		res.Config.RatePerSec += r.Config.RatePerSec
		res.WindowSec = max(res.WindowSec, r.WindowSec)
		res.Msgs += r.Msgs
		res.PayloadBytes += r.PayloadBytes
		res.MsgsPerSec += r.MsgsPerSec
		res.MBPerSec += r.MBPerSec
		res.OfferedPerSec += r.OfferedPerSec
		res.Intended += r.Intended
		res.Late += r.Late
		res.Missed += r.Missed
		res.Rejected += r.Rejected
		res.RejectedPerSec += r.RejectedPerSec
		res.Unfinished += r.Unfinished
		res.Dropped += r.Dropped
		res.ConnsOpen += r.ConnsOpen
		res.ConnsLost += r.ConnsLost
		res.Rejects = addCounts(res.Rejects, r.Rejects)
		res.Errors = addCounts(res.Errors, r.Errors)
		if res.FirstError == "" {
			res.FirstError = r.FirstError
		}
		latParts = append(latParts, r.Latency)
		if h, ok := decodeOrNote(r.HistogramV2, r.Latency.Count, i, "latency", &notes); ok {
			lats = append(lats, h)
		} else {
			latOK = false
		}
		if r.RejectLatency != nil {
			rejParts = append(rejParts, *r.RejectLatency)
			if h, ok := decodeOrNote(r.RejectHistogramV2, r.RejectLatency.Count, i, "reject latency", &notes); ok {
				rejLats = append(rejLats, h)
			} else {
				rejOK = false
			}
		}
		if r.SendLag != nil {
			lag := worstSummary([]bench.LatencySummary{*r.SendLag})
			if res.SendLag != nil {
				lag = worstSummary([]bench.LatencySummary{*res.SendLag, *r.SendLag})
			}
			res.SendLag = &lag
		}
		if r.Server != nil && res.Server == nil {
			s := *r.Server
			s.CPUMicrosPerMsg, s.SyscallsPerMsg = perMsg(r, &s, total)
			res.Server = &s
		}
		if r.Client != nil {
			res.Client = addClient(res.Client, r, total)
		}
		for _, c := range r.Cores {
			if cores[c.CPU] {
				continue
			}
			cores[c.CPU] = true
			c.MicrosPerMsg = 0
			if total > 0 {
				c.MicrosPerMsg = c.Busy * r.WindowSec * 1e6 / float64(total)
			}
			res.Cores = append(res.Cores, c)
		}
	}
	slices.SortFunc(res.Cores, func(a, b bench.CoreUsage) int { return a.CPU - b.CPU })
	if latOK {
		h := bench.MergeHistograms(lats...)
		res.Latency = bench.Summarize(h)
		if enc, err := bench.EncodeHistogram(h); err == nil && res.Latency.Count > 0 {
			res.HistogramV2 = enc
		}
	} else {
		res.Latency = worstSummary(latParts)
	}
	if len(rejParts) > 0 {
		var rl bench.LatencySummary
		if rejOK {
			h := bench.MergeHistograms(rejLats...)
			rl = bench.Summarize(h)
			if enc, err := bench.EncodeHistogram(h); err == nil {
				res.RejectHistogramV2 = enc
			}
		} else {
			rl = worstSummary(rejParts)
		}
		res.RejectLatency = &rl
	}
	return res, notes
}

// decodeOrNote decodes the i-th result's histogram enc of what (a summary
// of count values): an empty histogram for none when count is 0, false
// with a note when it cannot.
func decodeOrNote(enc string, count int64, i int, what string, notes *[]string) (*hdrhistogram.Histogram, bool) {
	if enc == "" {
		if count == 0 {
			return nil, true
		}
		*notes = append(*notes, fmt.Sprintf("generator %d: no %s histogram: the merged %s is the worst process's percentiles", i+1, what, what))
		return nil, false
	}
	h, err := bench.DecodeHistogram(enc)
	if err != nil {
		*notes = append(*notes, fmt.Sprintf("generator %d: %v: the merged %s is the worst process's percentiles", i+1, err, what))
		return nil, false
	}
	return h, true
}

// worstSummary is the summaries' counts added, their mean weighted by
// count, and the largest of each percentile and maximum: a bound on the
// merged latency where the histograms are missing.
func worstSummary(ss []bench.LatencySummary) bench.LatencySummary {
	var w bench.LatencySummary
	var sum float64
	for _, s := range ss {
		w.Count += s.Count
		sum += s.MeanMicros * float64(s.Count)
		w.P50Micros = max(w.P50Micros, s.P50Micros)
		w.P90Micros = max(w.P90Micros, s.P90Micros)
		w.P99Micros = max(w.P99Micros, s.P99Micros)
		w.P999Micros = max(w.P999Micros, s.P999Micros)
		w.MaxMicros = max(w.MaxMicros, s.MaxMicros)
	}
	if w.Count > 0 {
		w.MeanMicros = sum / float64(w.Count)
	}
	return w
}

// addCounts returns a with b's counts added (nil when both are empty).
func addCounts(a, b map[string]int64) map[string]int64 {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		a = make(map[string]int64, len(b))
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}

// perMsg returns u's CPU µs and read+write system calls per message
// (-1: calls unknown) over total messages, from u's own figures over the
// window of r, the result u came with, whatever r's own messages (a
// process that read the server's usage may itself have had none answered).
// As bench does, the window's counts are scaled from the process's
// sampled wall time (CPUSec/Util) to the generator's window.
func perMsg(r *bench.LoadResult, u *bench.ProcUsage, total int64) (cpuMicros, syscalls float64) {
	syscalls = -1
	if total <= 0 {
		if u.ReadSyscalls < 0 {
			return 0, -1
		}
		return 0, 0
	}
	scale := 1.0 // window over the sampled wall time
	if u.Util > 0 && u.CPUSec > 0 && r.WindowSec > 0 {
		scale = r.WindowSec / (u.CPUSec / u.Util)
	}
	cpuMicros = u.CPUSec * 1e6 / float64(total) * scale
	if u.ReadSyscalls >= 0 && u.WriteSyscalls >= 0 {
		syscalls = float64(u.ReadSyscalls+u.WriteSyscalls) / float64(total) * scale
	}
	return cpuMicros, syscalls
}

// addClient adds the generator process of r to the usage sum (nil: none
// yet), its per-message figures over total messages.
func addClient(sum *bench.ProcUsage, r *bench.LoadResult, total int64) *bench.ProcUsage {
	u := r.Client
	if sum == nil {
		sum = &bench.ProcUsage{PID: u.PID}
	}
	cpu, calls := perMsg(r, u, total)
	sum.CPUSec += u.CPUSec
	sum.Util += u.Util
	sum.CPUMicrosPerMsg += cpu
	sum.RSSKiB += u.RSSKiB
	if sum.ReadSyscalls < 0 || u.ReadSyscalls < 0 || calls < 0 {
		sum.ReadSyscalls, sum.WriteSyscalls, sum.SyscallsPerMsg = -1, -1, -1
	} else {
		sum.ReadSyscalls += u.ReadSyscalls
		sum.WriteSyscalls += u.WriteSyscalls
		sum.SyscallsPerMsg += calls
	}
	set := map[int]bool{}
	for _, c := range append(slices.Clone(sum.CPUs), u.CPUs...) {
		set[c] = true
	}
	sum.CPUs = slices.Sorted(maps.Keys(set))
	return sum
}

// errGeneratorFailed is joined into a split run's error for each
// generator process that printed no result.
var errGeneratorFailed = errors.New("sluice: bench: a generator process printed no result")
