package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/localserver"
)

// lockedBuffer is a bytes.Buffer that serve writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// readmeBlock returns the first fenced code block of the given language
// after marker in the README.
func readmeBlock(t *testing.T, readme, marker, lang string) string {
	t.Helper()
	i := strings.Index(readme, marker)
	if i < 0 {
		t.Fatalf("the README has no %q", marker)
	}
	rest := readme[i:]
	open := "```" + lang + "\n"
	j := strings.Index(rest, open)
	if j < 0 {
		t.Fatalf("no %s block after %q", lang, marker)
	}
	rest = rest[j+len(open):]
	k := strings.Index(rest, "```")
	if k < 0 {
		t.Fatalf("the %s block after %q does not end", lang, marker)
	}
	return rest[:k]
}

// TestReadmePath follows the README's "Use it in your own program" as a new
// user does, step by step, with its own commands and program: a fresh
// module depending on this checkout by the install route the README gives,
// the program it shows (pipelines/minimal's), the server `make server`
// starts (here on a free port and a temporary data folder, the only
// changes to the README's commands), the run and its rerun, and the files
// found where the README says to look.
func TestReadmePath(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	readme := read("README.md")
	install := readmeBlock(t, readme, "**1. Depend on it.**", "sh")
	prog := readmeBlock(t, readme, "**2. Write the program.**", "go")
	server := readmeBlock(t, readme, "**3. Start a local S3 server.**", "sh")
	runCmds := readmeBlock(t, readme, "**4. Run it.**", "sh")
	find := readmeBlock(t, readme, "**5. Find the files.**", "sh")

	// The program is pipelines/minimal's, which the integration tests run.
	minimal := read("pipelines/minimal/main.go")
	if prog != minimal[strings.Index(minimal, "package main"):] {
		t.Errorf("the README's program is not pipelines/minimal/main.go's")
	}
	// `make server` is serve, on the port the README names.
	if server != "make server\n" || !strings.Contains(read("Makefile"), ".build/s3once-run -serve") {
		t.Errorf("step 3 is %q, or the Makefile's server target does not run -serve", server)
	}
	readmeEndpoint := fmt.Sprintf("http://127.0.0.1:%d", ServePort)
	if !strings.Contains(runCmds, "--s3-endpoint "+readmeEndpoint) {
		t.Errorf("step 4 does not name the server's endpoint %s:\n%s", readmeEndpoint, runCmds)
	}

	// Step 3: the server, on a free port for the test.
	work := t.TempDir()
	data := filepath.Join(work, "s3data")
	port, err := localserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	served := make(chan error, 1)
	go func() { served <- serve(ctx, serveOptions{data: data, bucket: "demo", port: port}, &out) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
		}
	}
	defer stop()
	for !strings.Contains(out.String(), "Ctrl-C stops the server") {
		select {
		case err := <-served:
			t.Fatalf("the server ended: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	printed := out.String()
	t.Logf("make server printed:\n%s", printed)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	if !strings.Contains(printed, "--s3-endpoint "+endpoint+" --bucket demo") {
		t.Errorf("the server does not print its endpoint %s", endpoint)
	}
	exports := regexp.MustCompile(`(?m)^  export (\w+=\S+)$`).FindAllStringSubmatch(printed, -1)
	if len(exports) != 3 {
		t.Fatalf("want 3 export lines, got %v", exports)
	}
	for _, e := range exports {
		if !strings.Contains(runCmds, e[1]) {
			t.Errorf("step 4 does not export %s as the server prints it", e[1])
		}
	}

	// Steps 1, 2, 4 and 5 as a shell runs them, next to a folder that
	// stands for the s3once checkout.
	subst := strings.NewReplacer("=../s3once", "="+root, "../s3once/.s3data", data, readmeEndpoint, endpoint)
	goBin := filepath.Join(runtime.GOROOT(), "bin")
	sh := func(dir, script string) string {
		t.Helper()
		cmd := exec.Command("sh", "-ec", subst.Replace(script))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+goBin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOWORK=off", "GOFLAGS=")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s\nin %s: %v\n%s", subst.Replace(script), dir, err, b.String())
		}
		return b.String()
	}
	sh(work, install)
	mine := filepath.Join(work, "mine")
	if err := os.WriteFile(filepath.Join(mine, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(mine, "go mod tidy")
	first := sh(mine, runCmds)
	if !strings.Contains(first, "committed 4 files\n") {
		t.Errorf("the first run says:\n%s\nwant committed 4 files", first)
	}
	again := sh(mine, runCmds)
	if !strings.Contains(again, "committed 4 files (4 kept from an earlier run)") {
		t.Errorf("the rerun says:\n%s\nwant the 4 files kept", again)
	}
	found := sh(mine, find)
	if n := strings.Count(found, ".txt.gz\n"); n != 4 || !strings.Contains(found, "line 00") {
		t.Errorf("step 5 finds %d files and shows:\n%s", n, found)
	}
	stop()
	if !strings.Contains(out.String(), "stopping the S3 server") {
		t.Errorf("the server did not say it stopped:\n%s", out.String())
	}
}
