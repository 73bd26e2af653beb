// Command pubsubload is the pubsub example's delivery test: subscribers
// spread over topics, publishers that each send their messages to one
// topic as fast as their sockets take them, and a check that every
// subscriber got every message of every publisher of its topic, in order.
// It prints what was delivered and exits with status 1 if anything was
// lost, duplicated or out of order.
//
//	go run ./examples/pubsub/pubsubload -addr 127.0.0.1:7102 -subs 200 -topics 10 -pubs 10 -msgs 1000
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7102", "the pubsub server")
	subs := flag.Int("subs", 200, "subscribers")
	topics := flag.Int("topics", 10, "topics (subscriber i joins topic i mod topics, publisher j sends to topic j mod topics)")
	pubs := flag.Int("pubs", 10, "publishers")
	msgs := flag.Int("msgs", 1000, "messages per publisher")
	size := flag.Int("size", 64, "message body bytes (at least 16)")
	timeout := flag.Duration("timeout", 60*time.Second, "give up waiting for deliveries after this long")
	stuck := flag.Int("stuck", 0, "more subscribers, to topic 0, that never read: the server must close them, not stall the others")
	flag.Parse()
	if *topics < 1 || *size < 16 || *subs < 1 || *pubs < 1 {
		log.Fatal("pubsubload: want -topics ≥ 1, -subs ≥ 1, -pubs ≥ 1 and -size ≥ 16")
	}
	// each subscriber expects the messages of the publishers of its topic
	perTopic := make([]int, *topics)
	for j := 0; j < *pubs; j++ {
		perTopic[j%*topics]++
	}
	want := 0
	readers := make([]*reader, *subs)
	for i := range readers {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		r := &reader{c: c, br: bufio.NewReaderSize(c, 64<<10), next: make([]int, *pubs), want: perTopic[i%*topics] * *msgs}
		if err := r.subscribe(fmt.Sprintf("t%d", i%*topics)); err != nil {
			log.Fatalf("subscriber %d: %v", i, err)
		}
		readers[i] = r
		want += r.want
	}
	for i := 0; i < *stuck; i++ {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		c.(*net.TCPConn).SetReadBuffer(4096)
		r := &reader{c: c, br: bufio.NewReader(c)}
		if err := r.subscribe("t0"); err != nil {
			log.Fatalf("stuck subscriber %d: %v", i, err)
		}
	}
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Add(1)
		go func() { defer wg.Done(); r.read() }()
	}
	start := time.Now()
	var pwg sync.WaitGroup
	for j := 0; j < *pubs; j++ {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			if err := publish(*addr, j, fmt.Sprintf("t%d", j%*topics), *msgs, *size); err != nil {
				log.Fatalf("publisher %d: %v", j, err)
			}
		}()
	}
	pwg.Wait()
	published := time.Since(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(*timeout):
		for _, r := range readers {
			r.c.Close() // stops the readers that still wait
		}
		<-done
	}
	elapsed := time.Since(start)
	delivered, complete := 0, 0
	var firstErr error
	for _, r := range readers {
		delivered += int(r.got.Load())
		if r.err == nil && int(r.got.Load()) == r.want {
			complete++
		} else if firstErr == nil && r.err != nil {
			firstErr = r.err
		}
	}
	fmt.Printf("delivered %d of %d, %d of %d subscribers complete and in order, %.0f deliveries/s (published in %v, delivered in %v)\n",
		delivered, want, complete, *subs, float64(delivered)/elapsed.Seconds(), published.Round(time.Millisecond), elapsed.Round(time.Millisecond))
	if delivered != want || complete != *subs {
		if firstErr != nil {
			fmt.Println("first error:", firstErr)
		}
		os.Exit(1)
	}
}

// frame appends a 2-byte big-endian length and body to b.
func frame(b []byte, body ...[]byte) []byte {
	n := 0
	for _, p := range body {
		n += len(p)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	for _, p := range body {
		b = append(b, p...)
	}
	return b
}

// readFrame reads one length-prefixed frame into buf.
func readFrame(br *bufio.Reader, buf []byte) ([]byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(h[:]))
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err := io.ReadFull(br, buf)
	return buf, err
}

// publish sends msgs messages "P topic pNNN sNNNNNNN ..." of size bytes of
// body, through a buffered writer, then closes its connection.
func publish(addr string, id int, topic string, msgs, size int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	w := bufio.NewWriterSize(c, 64<<10)
	body := make([]byte, size)
	for i := range body {
		body[i] = 'x'
	}
	var out []byte
	for s := 0; s < msgs; s++ {
		copy(body, fmt.Sprintf("p%03d s%08d ", id, s))
		out = frame(out[:0], []byte("P"+topic+" "), body)
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return w.Flush()
}

// reader is one subscriber: it checks that each publisher's sequence
// numbers arrive one after the other from 0.
type reader struct {
	c    net.Conn
	br   *bufio.Reader
	next []int // by publisher: the sequence number expected next
	want int
	got  atomic.Int64
	err  error
}

func (r *reader) subscribe(topic string) error {
	if _, err := r.c.Write(frame(nil, []byte("S"+topic))); err != nil {
		return err
	}
	f, err := readFrame(r.br, nil)
	if err != nil {
		return err
	}
	if string(f) != "+OK" {
		return fmt.Errorf("subscribe %s: %q", topic, f)
	}
	return nil
}

func (r *reader) read() {
	var buf []byte
	for int(r.got.Load()) < r.want {
		f, err := readFrame(r.br, buf)
		if err != nil {
			r.err = fmt.Errorf("after %d messages: %w", r.got.Load(), err)
			return
		}
		buf = f
		// "M" topic " " "pNNN sNNNNNNNN ..."
		i := 0
		for i < len(f) && f[i] != ' ' {
			i++
		}
		if len(f) < i+15 || f[0] != 'M' || f[i+1] != 'p' {
			r.err = fmt.Errorf("malformed delivery %q", f)
			return
		}
		p, err1 := strconv.Atoi(string(f[i+2 : i+5]))
		s, err2 := strconv.Atoi(string(f[i+7 : i+15]))
		if err1 != nil || err2 != nil || p >= len(r.next) {
			r.err = fmt.Errorf("malformed delivery %q", f)
			return
		}
		if s != r.next[p] {
			r.err = fmt.Errorf("publisher %d: message %d, want %d", p, s, r.next[p])
			return
		}
		r.next[p]++
		r.got.Add(1)
	}
}
