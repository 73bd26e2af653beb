package kv

import (
	"fmt"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice/protocol/resp"
	"github.com/sluicenet/sluice/server"
)

// The administrative commands (COMMAND, INFO, CONFIG) allocate freely:
// they are rare and small.

// appendCommand runs COMMAND [COUNT | LIST | INFO [name ...] | DOCS [name ...]].
func appendCommand(dst []byte, args [][]byte) []byte {
	if len(args) == 1 {
		dst = resp.AppendArrayHeader(dst, numCommands)
		for i := range commands {
			dst = appendCommandInfo(dst, &commands[i])
		}
		return dst
	}
	sub := args[1]
	switch {
	case resp.EqualFold(sub, "COUNT") && len(args) == 2:
		return resp.AppendInt(dst, numCommands)
	case resp.EqualFold(sub, "LIST") && len(args) == 2:
		dst = resp.AppendArrayHeader(dst, numCommands)
		for i := range commands {
			dst = resp.AppendBulkString(dst, commands[i].name)
		}
		return dst
	case resp.EqualFold(sub, "INFO"):
		names := args[2:]
		if len(names) == 0 {
			return appendCommand(dst, args[:1])
		}
		dst = resp.AppendArrayHeader(dst, len(names))
		for _, n := range names {
			if id := lookup(n); id >= 0 {
				dst = appendCommandInfo(dst, &commands[id])
			} else {
				dst = resp.AppendNullBulk(dst)
			}
		}
		return dst
	case resp.EqualFold(sub, "DOCS"):
		var ids []int
		for _, n := range args[2:] {
			if id := lookup(n); id >= 0 {
				ids = append(ids, id)
			}
		}
		if len(args) == 2 {
			for i := range commands {
				ids = append(ids, i)
			}
		}
		dst = resp.AppendArrayHeader(dst, 2*len(ids))
		for _, id := range ids {
			c := &commands[id]
			dst = resp.AppendBulkString(dst, c.name)
			dst = resp.AppendArrayHeader(dst, 6)
			dst = resp.AppendBulkString(dst, "summary")
			dst = resp.AppendBulkString(dst, c.summary)
			dst = resp.AppendBulkString(dst, "since")
			dst = resp.AppendBulkString(dst, c.since)
			dst = resp.AppendBulkString(dst, "group")
			dst = resp.AppendBulkString(dst, c.group)
		}
		return dst
	}
	return appendUnknownSubcommand(dst, sub, "COMMAND")
}

// appendCommandInfo appends one COMMAND entry in redis 7's ten-field form:
// name, arity, flags, first key, last key, step, ACL categories, tips, key
// specifications, subcommands (the last four empty).
func appendCommandInfo(dst []byte, c *commandSpec) []byte {
	dst = resp.AppendArrayHeader(dst, 10)
	dst = resp.AppendBulkString(dst, c.name)
	dst = resp.AppendInt(dst, int64(c.arity))
	dst = resp.AppendArrayHeader(dst, len(c.flags))
	for _, f := range c.flags {
		dst = resp.AppendSimpleString(dst, f)
	}
	dst = resp.AppendInt(dst, int64(c.first))
	dst = resp.AppendInt(dst, int64(c.last))
	dst = resp.AppendInt(dst, int64(c.step))
	for range 4 {
		dst = resp.AppendArrayHeader(dst, 0)
	}
	return dst
}

// appendUnknownSubcommand appends redis's error for an unknown subcommand.
func appendUnknownSubcommand(dst, sub []byte, cmd string) []byte {
	dst = append(dst, "-ERR unknown subcommand '"...)
	dst = appendErrText(dst, sub)
	dst = append(dst, "'. Try "...)
	dst = append(dst, cmd...)
	return append(dst, " HELP.\r\n"...)
}

// config runs CONFIG GET pattern [pattern ...]: glob patterns as redis
// takes them, matched without case against configParams.
func (h *RESPHandler) config(dst []byte, args [][]byte) []byte {
	if !resp.EqualFold(args[1], "GET") {
		return appendUnknownSubcommand(dst, args[1], "CONFIG")
	}
	if len(args) < 3 {
		return appendArityError(dst, "config|get")
	}
	var pairs []string
	for _, name := range configParams {
		for _, p := range args[2:] {
			if ok, _ := path.Match(strings.ToLower(string(p)), name); ok {
				pairs = append(pairs, name, h.configValue(name))
				break
			}
		}
	}
	dst = resp.AppendArrayHeader(dst, len(pairs))
	for _, s := range pairs {
		dst = resp.AppendBulkString(dst, s)
	}
	return dst
}

// configValue is the truthful value of a configParams entry: nothing is
// persisted, the store's byte budget is its maxmemory, there is one
// database.
func (h *RESPHandler) configValue(name string) string {
	switch name {
	case "save":
		return ""
	case "appendonly":
		return "no"
	case "maxmemory":
		return strconv.FormatInt(h.store.cfg.MaxBytes, 10)
	case "databases":
		return "1"
	}
	return ""
}

// info runs INFO [section ...]: server, clients, memory, stats, keyspace
// and sluice (the engine's Stats); "all", "everything" and "default" mean
// all of them. Unknown sections are left out, as redis does.
func (h *RESPHandler) info(dst []byte, args [][]byte, now int64) []byte {
	want := func(name string) bool {
		if len(args) == 1 {
			return true
		}
		for _, a := range args[1:] {
			if resp.EqualFold(a, name) || resp.EqualFold(a, "all") || resp.EqualFold(a, "everything") || resp.EqualFold(a, "default") {
				return true
			}
		}
		return false
	}
	var b []byte
	line := func(format string, v ...any) { b = fmt.Appendf(b, format+"\r\n", v...) }
	var st server.Stats
	e := h.engine.Load()
	if e != nil {
		st = e.Stats()
	}
	ss := h.store.Stats()
	if want("server") {
		line("# Server")
		line("sluice_kv:1")
		line("redis_mode:standalone")
		line("os:%s %s", runtime.GOOS, runtime.GOARCH)
		line("go_version:%s", runtime.Version())
		line("process_id:%d", os.Getpid())
		if e != nil && e.Addr() != nil {
			line("tcp_addr:%s", e.Addr())
		}
		up := time.Duration(now - h.started.UnixNano())
		line("uptime_in_seconds:%d", int64(up/time.Second))
		line("")
	}
	if want("clients") {
		line("# Clients")
		line("connected_clients:%d", st.ConnsOpen)
		line("")
	}
	if want("memory") {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		line("# Memory")
		line("used_memory:%d", ms.HeapAlloc)
		line("store_bytes:%d", ss.Bytes)
		line("maxmemory:%d", h.store.cfg.MaxBytes)
		line("")
	}
	if want("stats") {
		line("# Stats")
		line("total_connections_received:%d", st.Accepted)
		line("total_commands_processed:%d", st.Frames)
		line("total_net_input_bytes:%d", st.BytesIn)
		line("total_net_output_bytes:%d", st.BytesOut)
		line("admission_rejects:%d", st.Rejects)
		line("expired_keys:%d", ss.Expired)
		line("store_full_refusals:%d", ss.Refusals)
		line("")
	}
	if want("keyspace") {
		line("# Keyspace")
		if ss.Keys > 0 {
			line("db0:keys=%d", ss.Keys)
		}
		line("")
	}
	if want("sluice") {
		b = appendSluiceInfo(b, e != nil, &st)
	}
	if n := len(b); n >= 2 {
		b = b[:n-2] // no blank line at the very end
	}
	return resp.AppendBulk(dst, b)
}

// appendSluiceInfo appends the "# sluice" section: the engine's Stats,
// one snake_case line per field.
func appendSluiceInfo(b []byte, attached bool, st *server.Stats) []byte {
	line := func(format string, v ...any) { b = fmt.Appendf(b, format+"\r\n", v...) }
	line("# sluice")
	if !attached {
		line("engine:none")
		line("")
		return b
	}
	line("loops:%d", st.Loops)
	line("conns_open:%d", st.ConnsOpen)
	line("gate_open:%d", boolInt(st.GateOpen))
	line("gate_transitions:%d", st.GateTransitions)
	line("accepted:%d", st.Accepted)
	line("accept_errors:%d", st.AcceptErrors)
	line("accept_pauses:%d", st.AcceptPauses)
	for i, n := range st.Closed {
		line("closed_%s:%d", server.CloseCause(i), n)
	}
	line("reads:%d", st.Reads)
	line("bytes_in:%d", st.BytesIn)
	line("frames:%d", st.Frames)
	line("read_budget_spent:%d", st.ReadBudgetSpent)
	line("flushes:%d", st.Flushes)
	line("bytes_out:%d", st.BytesOut)
	line("out_arms:%d", st.OutArms)
	line("flush_budget_spent:%d", st.FlushBudgetSpent)
	line("pauses:%d", st.Pauses)
	line("queue_full:%d", st.QueueFull)
	line("rejects:%d", st.Rejects)
	line("inbox_full:%d", st.InboxFull)
	line("inbox_tasks:%d", st.InboxTasks)
	line("stale_events:%d", st.StaleEvents)
	line("stale_tasks:%d", st.StaleTasks)
	line("timer_fires:%d", st.TimerFires)
	line("turns:%d", st.Turns)
	line("blocking_waits:%d", st.BlockingWaits)
	line("events:%d", st.Events)
	line("ready_list_len:%d", st.ReadyListLen)
	line("queued_out_bytes:%d", st.QueuedOutBytes)
	line("queued_in_bytes:%d", st.QueuedInBytes)
	line("")
	return b
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
