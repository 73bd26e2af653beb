// Package tlsutil makes and loads the certificates a sluice server and its
// clients need around crypto/tls: a self-signed ECDSA P-256 certificate
// that is its own CA (SelfSigned, WriteSelfSigned), client certificates
// signed by it for mutual TLS (IssueClient), and a certificate pair read
// from files that a running server swaps for a new one without a restart
// (Reloader, for tls.Config.GetCertificate).
//
// It refuses to own TLS policy (versions, cipher suites, ClientAuth, the
// tls.Config itself: the caller's), a real certificate authority
// (revocation, chains longer than one level, ACME) and deciding when to
// reload: a program calls Reloader.Reload itself, on SIGHUP for instance.
//
// Usage:
//
//	r, err := tlsutil.NewReloader("cert.pem", "key.pem")
//	cfg := &tls.Config{GetCertificate: r.GetCertificate, MinVersion: tls.VersionTLS13}
//	// on SIGHUP: if err := r.Reload(); err != nil { log it; the old pair stays }
package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHosts are the names SelfSigned certifies when given none.
var DefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// validity is how long a certificate made here is valid; backdate is how
// long before now it starts, so that a peer whose clock is a little behind
// accepts it.
const (
	validity = 365 * 24 * time.Hour
	backdate = time.Hour
)

// ErrNotCA is returned by IssueClient for a certificate that may not sign
// others.
var ErrNotCA = errors.New("sluice: tlsutil: the certificate is not a CA (IsCA and KeyUsageCertSign)")

// SelfSigned returns a new self-signed ECDSA P-256 certificate for hosts
// (DNS names and IP addresses; DefaultHosts when none), valid from an hour
// ago for a year, with its Leaf set, and a pool holding it. The
// certificate serves as a server certificate (ExtKeyUsageServerAuth), as a
// client certificate (ExtKeyUsageClientAuth) and as its own CA (IsCA,
// KeyUsageCertSign): the pool is a client's RootCAs, or a server's
// ClientCAs for the certificates IssueClient signs with it.
func SelfSigned(hosts ...string) (cert tls.Certificate, pool *x509.CertPool, err error) {
	if len(hosts) == 0 {
		hosts = DefaultHosts
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: hosts[0], Organization: []string{"sluice self-signed"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	cert, err = create(tmpl, tmpl, key, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return cert, pool, nil
}

// IssueClient returns a client certificate (ExtKeyUsageClientAuth) for
// commonName with a new ECDSA P-256 key, signed by ca, a CA certificate
// with its private key such as SelfSigned returns. It is valid from an
// hour ago for a year, but never after ca. A server whose ClientCAs hold
// ca verifies it and reads commonName from the peer's certificate. A ca
// that may not sign certificates is ErrNotCA.
func IssueClient(ca tls.Certificate, commonName string) (tls.Certificate, error) {
	parent := ca.Leaf
	if parent == nil {
		if len(ca.Certificate) == 0 {
			return tls.Certificate{}, fmt.Errorf("%w: no certificate", ErrNotCA)
		}
		var err error
		if parent, err = x509.ParseCertificate(ca.Certificate[0]); err != nil {
			return tls.Certificate{}, err
		}
	}
	if !parent.IsCA || parent.KeyUsage&x509.KeyUsageCertSign == 0 {
		return tls.Certificate{}, ErrNotCA
	}
	signer, ok := ca.PrivateKey.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("%w: its private key cannot sign", ErrNotCA)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if tmpl.NotAfter.After(parent.NotAfter) {
		tmpl.NotAfter = parent.NotAfter
	}
	return create(tmpl, parent, key, signer)
}

// create signs tmpl with signer as parent and returns it with its key and
// Leaf.
func create(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (tls.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// newSerial returns a random 128-bit serial number, so that certificates
// made by different processes never share one.
func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// WriteSelfSigned makes a certificate as SelfSigned does and writes it to
// certFile and its PKCS #8 private key to keyFile, PEM-encoded, the key
// readable by its owner only (0600). Each file is written whole under a
// temporary name and renamed into place, so a Reloader never reads half a
// file.
func WriteSelfSigned(certFile, keyFile string, hosts ...string) error {
	cert, _, err := SelfSigned(hosts...)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o644)
}

// writeFileAtomic writes data to a temporary file beside path (created
// 0600, so a key is never readable by others, even briefly), sets perm and
// renames it to path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// Reloader serves a certificate pair loaded from two PEM files and loads
// it again on Reload, so that a server replaces its certificate without a
// restart: handshakes after a successful Reload present the new pair,
// those in progress keep the one they started with. Its GetCertificate
// reads the current pair with one atomic load. A Reloader is safe for
// concurrent use.
type Reloader struct {
	certFile, keyFile string
	mu                sync.Mutex // serialises Reload
	cur               atomic.Pointer[loadedPair]
}

// loadedPair is one successful load: replaced whole, never modified.
type loadedPair struct {
	cert *tls.Certificate
	at   time.Time
}

// NewReloader loads the pair in certFile and keyFile and returns a Reloader
// serving it, or the load's error.
func NewReloader(certFile, keyFile string) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload loads the pair from the files again and serves it from now on.
// When the files do not hold a valid pair (missing, not PEM, a key that
// does not match the certificate) it returns the error and the previous
// pair is served as before.
func (r *Reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("sluice: tlsutil: load %s and %s: %w", r.certFile, r.keyFile, err)
	}
	r.cur.Store(&loadedPair{cert: &cert, at: time.Now()})
	return nil
}

// GetCertificate returns the pair loaded last, whatever the hello; it is
// what tls.Config.GetCertificate wants.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cur.Load().cert, nil
}

// Loaded returns when the pair served now was loaded: the last successful
// Reload (or NewReloader).
func (r *Reloader) Loaded() time.Time { return r.cur.Load().at }
