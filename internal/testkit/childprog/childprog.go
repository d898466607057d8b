// Package childprog runs an example program's main function in a child
// copy of its own test binary, as `go run .` runs the program, so that a
// test holds the program's output and exit to what its docs promise.
package childprog

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// Main is for the program's TestMain: when the environment variable env
// is set, the binary is a child that Run started, and Main runs main with
// the arguments env holds (one a line) and exits; otherwise it runs the
// tests.
func Main(m *testing.M, env string, main func()) {
	if args, ok := os.LookupEnv(env); ok {
		os.Args = append([]string{os.Args[0]}, strings.Split(args, "\n")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Run runs the program with args in a child process (in the folder dir,
// or the test's when empty), with the test server's credentials and
// region in its environment and no shared AWS files, and returns the last
// line it printed on standard output. A failed run fails the test, with
// both outputs.
func Run(t testing.TB, env, dir string, args ...string) string {
	t.Helper()
	stdout, _ := Output(t, env, dir, args...)
	out := strings.TrimRight(stdout, "\n")
	return out[strings.LastIndexByte(out, '\n')+1:]
}

// Output is Run, returning all the program printed on standard output and
// on standard error.
func Output(t testing.TB, env, dir string, args ...string) (stdout, stderr string) {
	t.Helper()
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env+"="+strings.Join(args, "\n"),
		"AWS_ACCESS_KEY_ID="+s3test.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3test.SecretKey, "AWS_REGION="+s3test.Region,
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("the program %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, o.String(), e.String())
	}
	return o.String(), e.String()
}
