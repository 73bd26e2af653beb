// Command tls is a line echo server over TLS: each line comes back
// prefixed with who sent it, the verified client certificate's name when
// the client shows one. Without -cert and -key it makes a self-signed
// certificate for 127.0.0.1 and localhost (tlsutil.SelfSigned) and writes
// it to -ca-out, for the client to verify; with them it serves that pair
// and reloads it on SIGHUP, without a restart (tlsutil.Reloader).
//
//	go run ./examples/tls -addr 127.0.0.1:7400 -ca-out /tmp/sluice-ca.pem
//	openssl s_client -connect 127.0.0.1:7400 -CAfile /tmp/sluice-ca.pem -quiet
//	curl: not this one (lines, not HTTP); see cmd/echo -codec http -tls-cert
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/tlsutil"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7400", "listen address (port 0: any free port)")
	certFile := flag.String("cert", "", "PEM certificate file (empty: a self-signed one, written to -ca-out)")
	keyFile := flag.String("key", "", "PEM key file of -cert")
	caOut := flag.String("ca-out", "", "with no -cert: write the self-signed certificate here, for clients to verify")
	clientCA := flag.String("client-ca", "", "PEM file of the CA that signs client certificates: ask for one and verify it")
	flag.Parse()

	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if *certFile != "" {
		r, err := tlsutil.NewReloader(*certFile, *keyFile)
		if err != nil {
			log.Fatal(err)
		}
		cfg.GetCertificate = r.GetCertificate // each handshake gets the pair loaded last
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		go func() {
			for range hup {
				if err := r.Reload(); err != nil {
					log.Printf("reload: %v (still serving the previous certificate)", err)
				} else {
					log.Print("reload: certificate loaded")
				}
			}
		}()
	} else {
		cert, _, err := tlsutil.SelfSigned()
		if err != nil {
			log.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
		if *caOut != "" {
			pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
			if err := os.WriteFile(*caOut, pemBytes, 0o644); err != nil {
				log.Fatal(err)
			}
		}
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
