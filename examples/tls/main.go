// Command tls is a line echo server over TLS: each line comes back
// prefixed with who sent it, the verified client certificate's name when
// the client shows one. Without -cert and -key it makes a self-signed
// certificate for 127.0.0.1 and localhost and writes it to -ca-out, for
// the client to verify; with them it serves that pair and reloads it on
// SIGHUP, without a restart.
//
//	go run ./examples/tls -addr 127.0.0.1:7400 -ca-out /tmp/sluice-ca.pem
//	openssl s_client -connect 127.0.0.1:7400 -CAfile /tmp/sluice-ca.pem -quiet
//	curl: not this one (lines, not HTTP); see cmd/echo -codec http -tls-cert
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"log"
	"math/big"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7400", "listen address (port 0: any free port)")
	certFile := flag.String("cert", "", "PEM certificate file (empty: a self-signed one, written to -ca-out)")
	keyFile := flag.String("key", "", "PEM key file of -cert")
	caOut := flag.String("ca-out", "", "with no -cert: write the self-signed certificate here, for clients to verify")
	clientCA := flag.String("client-ca", "", "PEM file of the CA that signs client certificates: ask for one and verify it")
	flag.Parse()

	var cert atomic.Pointer[tls.Certificate]
	load := func() error {
		pair, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err == nil {
			cert.Store(&pair)
		}
		return err
	}
	if *certFile != "" {
		if err := load(); err != nil {
			log.Fatal(err)
		}
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		go func() { // a renewed certificate is served to the next handshakes
			for range hup {
				if err := load(); err != nil {
					log.Printf("reload: %v (still serving the previous certificate)", err)
				} else {
					log.Print("reload: certificate loaded")
				}
			}
		}()
	} else {
		pair, certPEM, err := selfSigned()
		if err != nil {
			log.Fatal(err)
		}
		cert.Store(&pair)
		if *caOut != "" {
			if err := os.WriteFile(*caOut, certPEM, 0o644); err != nil {
				log.Fatal(err)
			}
		}
	}
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert.Load(), nil },
	}
	if *clientCA != "" {
		pemBytes, err := os.ReadFile(*clientCA)
		if err != nil {
			log.Fatal(err)
		}
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(pemBytes) {
			log.Fatalf("%s: no certificate", *clientCA)
		}
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}

	demo.Serve(server.New(server.Config{Addr: *addr, Codec: protocol.Delimited{}, TLS: cfg}, server.HandlerFuncs{
		Open: func(c *server.Conn) server.Action {
			who := "anonymous"
			if st := c.TLS(); len(st.VerifiedChains) > 0 {
				who = st.PeerCertificates[0].Subject.CommonName
			}
			c.SetContext(who) // OnOpen runs once the handshake is done
			return server.None
		},
		Frame: func(c *server.Conn, line []byte) server.Action {
			reply := append([]byte(c.Context().(string)+": "), line...)
			if err := c.WriteFrame(reply); err != nil {
				return server.Close
			}
			return server.None
		},
	}))
}

// selfSigned makes an ECDSA P-256 certificate for 127.0.0.1 and localhost,
// valid for a day, and returns it with its PEM.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "sluice example"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
