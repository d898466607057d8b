package s3req_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3req"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// startMinIOTLS starts MinIO over HTTPS with a certificate made for the
// test (MinIO takes SSE-C only over TLS) and returns its endpoint and an
// HTTP client that trusts the certificate. The server is stopped by its PID
// when the test ends.
func startMinIOTLS(t *testing.T) (string, *http.Client) {
	t.Helper()
	bin, err := s3test.Tool("minio")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	pool := writeCert(t, certs)
	port, err := s3test.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cport, err := s3test.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logs, err := os.Create(filepath.Join(dir, "minio.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd := exec.Command(bin, "server", filepath.Join(dir, "data"), "--address", addr,
		"--console-address", fmt.Sprintf("127.0.0.1:%d", cport), "--certs-dir", certs, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+s3test.AccessKey, "MINIO_ROOT_PASSWORD="+s3test.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off")
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	endpoint := "https://" + addr
	c := client(endpoint, s3req.Settings{}, hc)
	// Readiness: a signed call succeeds (the health endpoint can answer
	// before the object layer takes requests). Bounded by the server's
	// start, not by a sleep of a guessed length.
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			b, _ := os.ReadFile(logs.Name())
			t.Fatalf("minio exited at start: %s", b)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
		cancel()
		if err == nil {
			return endpoint, hc
		}
		if time.Now().After(deadline) {
			t.Fatalf("minio over TLS not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeCert makes a self-signed certificate for 127.0.0.1 as MinIO wants
// it (public.crt, private.key) and returns a pool that trusts it.
func writeCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "s3once test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "public.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "private.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// TestSSECOnMinIO: with an SSE-C key, a whole file's life (create, part,
// side object put and get, recovery, list parts, complete, the commit's
// HEAD, clean-up) works on a server that enforces SSE-C; the file and the
// side object are encrypted with the key: without it, or with another key,
// the server refuses to read them; with it, the file reads back exactly.
func TestSSECOnMinIO(t *testing.T) {
	endpoint, hc := startMinIOTLS(t)
	ctx := context.Background()
	admin := client(endpoint, s3req.Settings{}, hc)
	bucket := "ssec-bucket"
	if _, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	key, _ := s3req.NewCustomerKey(bytes.Repeat([]byte("k"), 32))
	otherKey, _ := s3req.NewCustomerKey(bytes.Repeat([]byte("o"), 32))
	c := client(endpoint, s3req.Settings{CustomerKey: key}, hc)
	wrong := client(endpoint, s3req.Settings{CustomerKey: otherKey}, hc)
	refused := func(what, k string) {
		t.Helper()
		for name, cl := range map[string]*s3.Client{"no key": admin, "another key": wrong} {
			out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
			if err == nil {
				out.Body.Close()
				t.Errorf("%s read with %s", what, name)
			}
		}
	}
	file, data := writeFile(t, c, bucket, func(side string) { refused("side object", side) })
	refused("file", file)
	if got := read(t, c, bucket, file); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, want the %d written", len(got), len(data))
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(file)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(h.SSECustomerKeyMD5) != key.MD5() {
		t.Errorf("file's SSE-C key MD5 %q, want %q", aws.ToString(h.SSECustomerKeyMD5), key.MD5())
	}
	if left := s3test.Keys(t, admin, bucket, recoverable.DefaultStagingPrefix); len(left) > 0 {
		t.Errorf("side objects left: %v", left)
	}
}
