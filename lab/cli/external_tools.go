package cli

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// wrkPipelineScript is the wrk Lua script for pipelining: every write
// carries depth copies of the request (wrk's own default request for the
// URL), and wrk counts each response.
const wrkPipelineScript = `-- written by cmd/bench external: pipelined plaintext requests
-- usage: wrk -s pipeline.lua URL -- DEPTH
init = function(args)
   local depth = tonumber(args[1]) or 16
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format(nil, "/")
   end
   req = table.concat(r)
end

request = function()
   return req
end
`

// wrkResult is what one wrk run printed. With a pipelining script wrk's
// percentiles are unreliable: it prints 0.00us for the upper ones (its
// histogram loses the samples), so a zero percentile means "not reported".
type wrkResult struct {
	Requests     int64   `json:"requests"`
	Seconds      float64 `json:"seconds"`
	RequestsSec  float64 `json:"requests_per_sec"`
	AvgMicros    float64 `json:"avg_us"`
	P50Micros    float64 `json:"p50_us"`
	P99Micros    float64 `json:"p99_us"`
	MaxMicros    float64 `json:"max_us"`
	SocketErrors int64   `json:"socket_errors"`
	Non2xx       int64   `json:"non_2xx"`
}

var errNoWrkRate = errors.New("sluice: bench external: no \"Requests/sec:\" line in wrk's output")

// parseWrk parses wrk's report (run with --latency).
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	sawRate := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "Requests/sec:" && len(f) >= 2:
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("sluice: bench external: wrk rate %q: %w", f[1], err)
			}
			r.RequestsSec, sawRate = v, true
		case f[0] == "Latency" && len(f) >= 4: // Latency avg stdev max +/-
			r.AvgMicros, _ = parseWrkDuration(f[1])
			r.MaxMicros, _ = parseWrkDuration(f[3])
		case f[0] == "50%" && len(f) >= 2:
			r.P50Micros, _ = parseWrkDuration(f[1])
		case f[0] == "99%" && len(f) >= 2:
			r.P99Micros, _ = parseWrkDuration(f[1])
		case len(f) >= 4 && f[1] == "requests" && f[2] == "in":
			r.Requests, _ = strconv.ParseInt(f[0], 10, 64)
			if v, ok := parseWrkDuration(strings.TrimSuffix(f[3], ",")); ok {
				r.Seconds = v / 1e6
			}
		case f[0] == "Socket" && len(f) >= 3 && f[1] == "errors:":
			// Socket errors: connect 0, read 0, write 0, timeout 0
			for i := 2; i+1 < len(f); i += 2 {
				n, _ := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
				r.SocketErrors += n
			}
		case f[0] == "Non-2xx" && len(f) >= 5:
			r.Non2xx, _ = strconv.ParseInt(f[4], 10, 64)
		}
	}
	if !sawRate {
		return r, errNoWrkRate
	}
	return r, nil
}

// parseWrkDuration parses wrk's durations ("226.00us", "2.01ms", "1.20s",
// "3.00m") into microseconds.
func parseWrkDuration(s string) (float64, bool) {
	units := []struct {
		suffix string
		micros float64
	}{{"us", 1}, {"ms", 1e3}, {"s", 1e6}, {"m", 60e6}, {"h", 3600e6}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, false
			}
			return v * u.micros, true
		}
	}
	return 0, false
}

// redisTest is one test line of redis-benchmark --csv.
type redisTest struct {
	Test        string  `json:"test"`
	RequestsSec float64 `json:"requests_per_sec"`
	AvgMillis   float64 `json:"avg_ms"`
	P50Millis   float64 `json:"p50_ms"`
	P99Millis   float64 `json:"p99_ms"`
	MaxMillis   float64 `json:"max_ms"`
}

var errNoRedisTests = errors.New("sluice: bench external: no test lines in redis-benchmark's CSV output")

// parseRedisCSV parses redis-benchmark --csv: a header line naming the
// columns ("test","rps","avg_latency_ms",...), then one line per test.
// Columns are found by name; lines before the header (-q progress) are
// skipped.
func parseRedisCSV(out string) ([]redisTest, error) {
	start := strings.Index(out, `"test",`)
	if start < 0 {
		return nil, errNoRedisTests
	}
	r := csv.NewReader(strings.NewReader(out[start:]))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("sluice: bench external: redis-benchmark CSV header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	if _, ok := col["rps"]; !ok {
		return nil, fmt.Errorf("sluice: bench external: redis-benchmark CSV header %q has no rps column", header)
	}
	num := func(rec []string, name string) float64 {
		i, ok := col[name]
		if !ok || i >= len(rec) {
			return 0
		}
		v, _ := strconv.ParseFloat(rec[i], 64)
		return v
	}
	var tests []redisTest
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return tests, fmt.Errorf("sluice: bench external: redis-benchmark CSV: %w", err)
		}
		if len(rec) <= col["rps"] || rec[0] == "" {
			continue
		}
		tests = append(tests, redisTest{
			Test: rec[0], RequestsSec: num(rec, "rps"), AvgMillis: num(rec, "avg_latency_ms"),
			P50Millis: num(rec, "p50_latency_ms"), P99Millis: num(rec, "p99_latency_ms"), MaxMillis: num(rec, "max_latency_ms"),
		})
	}
	if len(tests) == 0 {
		return nil, errNoRedisTests
	}
	return tests, nil
}
