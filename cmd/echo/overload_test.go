package main

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// TestTenantRejects: with -tenant-rate the command answers a request over
// the quota with "-REJECT tenant <ms>" and the connection keeps working.
func TestTenantRejects(t *testing.T) {
	c := startCommand(t, "-addr", "127.0.0.1:0", "-codec", "line", "-tenant-rate", "5", "-tenant-burst", "1", "-work", "100us")
	conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("a\nb\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.ReadString('\n'); got != "a\n" {
		t.Fatalf("first reply %q", got)
	}
	got, _ := r.ReadString('\n')
	if !strings.HasPrefix(got, "-REJECT tenant ") {
		t.Fatalf("second reply %q, want a tenant reject", got)
	}
	time.Sleep(250 * time.Millisecond) // 5/s: one more token
	conn.Write([]byte("c\n"))
	if got, _ := r.ReadString('\n'); got != "c\n" {
		t.Fatalf("after the retry-after: %q", got)
	}
	c.stop(t)
}

// TestWorkPool: -work with -work-mode pool echoes through the worker pool.
func TestWorkPool(t *testing.T) {
	c := startCommand(t, "-addr", "127.0.0.1:0", "-codec", "length", "-work", "200us", "-work-mode", "pool", "-shed")
	echoOnce(t, c.addr, "\x00\x00\x00\x05hello")
	c.stop(t)
}

func TestBadOverloadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-work-mode", "sideways"},
		{"-work", "-1ms"},
		{"-codec", "http", "-work-mode", "pool"},
		{"-gate-high", "0.5", "-gate-low", "0.9", "-budget-conns", "10"},
		{"-tenant-rate", "-1", "-shed"},
		{"-shed", "-best-effort-above", "-1"},
		{"-shed", "-critical-below", "64", "-best-effort-above", "32"},
	} {
		if err := run(append([]string{"-addr", "127.0.0.1:0"}, args...)); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
