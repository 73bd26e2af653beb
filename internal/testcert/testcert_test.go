package testcert

import (
	"crypto/tls"
	"io"
	"testing"
)

// TestHandshake: a server with the CA's certificate and a client trusting
// its pool complete a handshake, the client's issued certificate is
// verified and its name seen, and a self-signed one is refused.
func TestHandshake(t *testing.T) {
	ca, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(ca.CertPEM, ca.KeyPEM); err != nil {
		t.Fatalf("PEM pair: %v", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{ca.Cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	names := make(chan string, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			if tc.Handshake() == nil {
				names <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
				io.WriteString(tc, "x")
			} else {
				names <- ""
			}
			tc.Close()
		}
	}()
	for _, selfSigned := range []bool{false, true} {
		cert, err := ca.Issue("client-1", selfSigned)
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }})
		if err == nil {
			_, err = c.Read(make([]byte, 1))
			c.Close()
		}
		name := <-names
		if selfSigned && (err == nil || name != "") {
			t.Errorf("a self-signed client certificate was accepted (%v, %q)", err, name)
		}
		if !selfSigned && (err != nil || name != "client-1") {
			t.Errorf("issued client certificate: %v, name %q", err, name)
		}
	}
}
